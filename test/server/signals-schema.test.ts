import { afterAll, expect, it } from 'vitest';
import { TempFiles } from '../../src/core/media/media.js';
import { completeConfig } from '../../src/server/config.js';
import { storePart, type OpenedStore } from '../../src/server/parts/store.js';
import { pgSchema } from '../contract/adapters.js';
import { tempDir } from '../helpers/server.js';
import { describeWith, postgres, schemaUrl } from '../helpers/services.js';

/**
 * Signals between nodes are their store's own: serve's PostgreSQL signals use channels of the store's schema, so
 * nodes of one schema hear each other and nodes of another schema in the same database (parallel tests, two
 * deployments) do not (every foreign notice would cost a look).
 */
describeWith(postgres, "signals stay within their store's schema (PostgreSQL)", () => {
  const close: Array<() => Promise<void>> = [];
  afterAll(async () => {
    for (const c of close.reverse()) await c().catch(() => undefined);
  });

  /** A node's store part on `schema`, as serve opens it, and what its `cola` subscriber hears. */
  async function node(schema: string): Promise<{ opened: OpenedStore; heard: string[] }> {
    const dataDir = tempDir();
    const part = await storePart(completeConfig({ store: schemaUrl(schema), dataDir }), new TempFiles(tempDir()), () => {}).start();
    close.push(async () => void (await part.stop?.()));
    const heard: string[] = [];
    part.value.signals.subscribe('cola', { message: (p) => heard.push(p), gap: () => {} });
    return { opened: part.value, heard };
  }

  async function until(check: () => boolean): Promise<void> {
    for (let i = 0; i < 400 && !check(); i++) await new Promise((r) => setTimeout(r, 25));
    expect(check()).toBe(true);
  }

  it('a notice reaches the nodes of its schema only', async () => {
    const [a, b] = [await pgSchema(), await pgSchema()];
    close.push(a.drop, b.drop);
    const [a1, a2, b1, b2] = [await node(a.schema), await node(a.schema), await node(b.schema), await node(b.schema)];
    await a1.opened.signals.publish('cola', 'from-a');
    await until(() => a2.heard.includes('from-a'));
    await b1.opened.signals.publish('cola', 'from-b');
    await until(() => b2.heard.includes('from-b'));
    // from-a was committed before a2 heard it, so before from-b: b2 would have heard it by now.
    expect(b2.heard).toEqual(['from-b']);
    expect(a2.heard).toEqual(['from-a']);
    // Each publisher hears its own at once (in process), and nothing of the other schema.
    expect(a1.heard).toEqual(['from-a']);
    expect(b1.heard).toEqual(['from-b']);
  });
});
