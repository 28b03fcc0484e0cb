import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { pgSchema } from '../contract/adapters.js';
import { killAllServeChildren, startServeChild, stop } from '../helpers/serve-child.js';
import { describeWith, dropRedisPrefix, postgres, redis, REDIS_URL, schemaUrl, uniqueNamespace } from '../helpers/services.js';
import { tempDir } from '../helpers/server.js';

/**
 * Every engine node of a store takes over the others' lines (D-136), so
 * they must share the key that seals the lines' state: with real `serve`
 * processes on PostgreSQL + Redis, a second `serve --gateway baileys` with
 * another key file exits non-zero saying why; given the first node's key
 * file, it starts beside it. No line is linked, so no socket is opened; the
 * network's address points at a closed local port all the same.
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

  it("with another engine key it is refused with the reason; with the first one's key file it starts beside it", async () => {
    const dir1 = join(tempDir(), 'node1');
    const first = await startServeChild(dir1, args);
    const refused = await startServeChild(join(tempDir(), 'node2'), args).then(
      () => null,
      (err: unknown) => err as Error,
    );
    expect(refused, 'the second node started').not.toBeNull();
    expect(refused!.message).toMatch(/^serve ended before listening \(exit [1-9]\d*,/);
    expect(refused!.message).toMatch(
      /this node's engine key \(id \w+, .*\) is not the one the store's lines are sealed with \(id \w+\): every node of a store needs the same key file/,
    );
    const second = await startServeChild(join(tempDir(), 'node3'), [...args, '--engine-key-file', join(dir1, 'engine.key')]);
    await stop(second);
    await stop(first);
  });
});
