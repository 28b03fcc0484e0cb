import { createServer, type Server } from 'node:net';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Parts, type Stopping } from '../../src/server/parts/part.js';
import { startTestServer, tempDir, type TestServer } from '../helpers/server.js';

/** The stop routine of `serve`'s parts (src/server/parts/part.ts), shared by a failed start and close(). */
function recorder() {
  const said: string[] = [];
  const warnings: string[] = [];
  const parts = new Parts({ error: () => {}, warn: (_o, m) => warnings.push(m), info: () => {} });
  const add = (name: string, s: Stopping = {}) =>
    parts.start({
      name,
      start: () => ({
        value: name,
        halt: () => said.push(`halt ${name}`),
        stop: async () => {
          said.push(`stop ${name}`);
          await s.stop?.();
        },
        ...(s.abandon ? { abandon: () => void said.push(`abandon ${name}`) } : {}),
        base: s.base,
      }),
    });
  return { parts, add, said, warnings };
}

describe('the parts of serve', () => {
  it('halts every part first, then stops the work parts in reverse, then the base parts in reverse', async () => {
    const { parts, add, said } = recorder();
    await add('lock', { base: true });
    await add('store', { base: true });
    await add('worker');
    await add('listener');
    expect(await parts.stop(1000)).toEqual({ complete: true });
    expect(said).toEqual(['halt listener', 'halt worker', 'halt store', 'halt lock', 'stop listener', 'stop worker', 'stop store', 'stop lock']);
    // Once: a second stop gets the first one's result and stops nothing again.
    expect(await parts.stop(1000)).toEqual({ complete: true });
    expect(said).toHaveLength(8);
  });

  it('a part that fails to stop is logged and the others still stop; a base part failing is thrown once all stopped', async () => {
    const { parts, add, said, warnings } = recorder();
    await add('lock', { base: true });
    await add('store', { base: true, stop: () => Promise.reject(new Error('disk gone')) });
    await add('worker');
    await add('listener', { stop: () => Promise.reject(new Error('close failed')) });
    await expect(parts.stop(1000)).rejects.toThrow('disk gone');
    expect(said.filter((s) => s.startsWith('stop'))).toEqual(['stop listener', 'stop worker', 'stop store', 'stop lock']);
    expect(warnings).toEqual(['a part did not stop cleanly']);
  });

  it('past the stop timeout the work parts abandon what they hold and the base parts stop anyway', async () => {
    const { parts, add, said, warnings } = recorder();
    await add('store', { base: true });
    await add('thread', { stop: () => new Promise(() => {}), abandon: () => {} });
    await add('listener', { abandon: () => {} });
    expect(await parts.stop(20)).toEqual({ complete: false });
    expect(said).toEqual(['halt listener', 'halt thread', 'halt store', 'stop listener', 'stop thread', 'abandon listener', 'abandon thread', 'stop store']);
    expect(warnings).toEqual(['the graceful stop timed out: work still in flight is abandoned']);
  });

  it('a part whose start fails is not stopped; what started before it is', async () => {
    const { parts, add, said } = recorder();
    await add('store', { base: true });
    await expect(parts.start({ name: 'listener', start: () => Promise.reject(new Error('port in use')) })).rejects.toThrow('port in use');
    await parts.stop(1000);
    expect(said).toEqual(['halt store', 'stop store']);
  });
});

describe('a start of serve that fails', () => {
  let blocker: Server | undefined;
  const servers: TestServer[] = [];
  afterEach(async () => {
    for (const s of servers.splice(0)) await s.stop();
    await new Promise<void>((resolve) => (blocker ? blocker.close(() => resolve()) : resolve()));
    blocker = undefined;
  });

  it('at its last step (a port in use) stops what started: the directory and its store are free for the next start', async () => {
    blocker = createServer();
    const port = await new Promise<number>((resolve) => blocker!.listen(0, '127.0.0.1', () => resolve((blocker!.address() as { port: number }).port)));
    const dataDir = tempDir();
    await expect(startTestServer({ dataDir, port, host: '127.0.0.1' })).rejects.toThrow(/EADDRINUSE/);
    expect(existsSync(join(dataDir, 'pasarela.db'))).toBe(true);
    const again = await startTestServer({ dataDir });
    servers.push(again);
    expect((await fetch(`${again.url}/health`)).status).toBe(200);
  });
});
