import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { pgSchema } from '../contract/adapters.js';
import { killAllServeChildren, startServeChild, stop } from '../helpers/serve-child.js';
import { describeWith, dropRedisPrefix, postgres, redis, REDIS_URL, schemaUrl, uniqueNamespace } from '../helpers/services.js';
import { tempDir } from '../helpers/server.js';

/**
 * One engine node per store (D-118), with real `serve` processes on
 * PostgreSQL + Redis: a second `serve --gateway baileys` on the store exits
 * non-zero saying why; once the first stops, a new one starts. No line is
 * linked, so no socket is opened; the network's address points at a closed
 * local port all the same, so nothing could leave the machine.
 */
let schema: { schema: string; drop: () => Promise<void> };
let prefix: string;
let args: string[];

describeWith(postgres, 'a second engine node on one store (PostgreSQL)', () => {
  beforeAll(async () => {
    schema = await pgSchema();
    prefix = uniqueNamespace('redis');
    args = [
      '--gateway',
      'baileys',
      '--baileys-ws-url',
      'ws://127.0.0.1:9/ws',
      '--store',
      schemaUrl(schema.schema),
      '--counters',
      REDIS_URL,
      '--counters-prefix',
      prefix,
      '--drain-delay',
      '0',
    ];
  });
  afterAll(async () => {
    killAllServeChildren();
    await schema?.drop();
    if (redis.available) await dropRedisPrefix(prefix);
  });

  it('is refused with the reason while the first runs; after the first stops, a new one starts', async () => {
    const first = await startServeChild(join(tempDir(), 'node1'), args);
    const refused = await startServeChild(join(tempDir(), 'node2'), args).then(
      () => null,
      (err: unknown) => err as Error,
    );
    expect(refused, 'the second node started').not.toBeNull();
    expect(refused!.message).toMatch(/^serve ended before listening \(exit [1-9]\d*,/);
    expect(refused!.message).toContain(
      "another node of this store runs the engine (--gateway baileys), so this one does not start: two sockets on one line's session log each other out",
    );
    await stop(first);
    const next = await startServeChild(join(tempDir(), 'node3'), args);
    await stop(next);
  });
});
