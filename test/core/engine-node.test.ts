import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/core/clock.js';
import { assertSoleEngineNode, runsEngine, SecondEngineNode } from '../../src/core/engine-node.js';
import { NodePresence } from '../../src/core/node-presence.js';
import type { Store } from '../../src/core/ports/store.js';
import { openSqliteStore } from '../../src/store/sqlite/store.js';
import { openPg, pgSchema } from '../contract/adapters.js';
import { until } from '../helpers/poll.js';
import { describeWith, postgres } from '../helpers/services.js';

/**
 * One engine node per store (D-118): the engine's lease, taken by `serve
 * --gateway baileys` once its node beats. Two stores on one PostgreSQL
 * schema stand for two nodes.
 */
const timing = { sendMs: 60_000, beatMs: 60_000, takeoverMarginMs: 60_000 };
const nodeOf = (store: Store, t = timing) => new NodePresence(store, systemClock, { ...t, onError: () => {} });

describe('runsEngine', () => {
  it('names the in-process engine only', () => {
    expect(runsEngine('baileys')).toBe(true);
    for (const g of ['sim', 'evolution', 'waha']) expect(runsEngine(g)).toBe(false);
  });
});

describe('one engine node: a store served by one process (SQLite)', () => {
  it('the lease is always its own, start after start', async () => {
    const store = openSqliteStore(':memory:');
    try {
      for (let i = 0; i < 2; i++) {
        const node = nodeOf(store);
        await node.start();
        await assertSoleEngineNode(node);
        await node.stop();
      }
    } finally {
      await store.close();
    }
  });
});

describeWith(postgres, 'one engine node on a shared store (PostgreSQL)', () => {
  let drop: () => Promise<void>;
  let stores: Store[] = [];
  let schema: string;
  beforeEach(async () => {
    const s = await pgSchema();
    schema = s.schema;
    drop = s.drop;
  });
  afterEach(async () => {
    for (const st of stores) await st.close();
    stores = [];
    await drop();
  });
  const store = async () => {
    const st = await openPg(schema);
    stores.push(st);
    return st;
  };

  it('a second node is refused, saying why and naming the node that holds it; once the first stops, a new one starts', async () => {
    const first = nodeOf(await store());
    await first.start();
    await assertSoleEngineNode(first);
    // The holder asking again keeps it.
    await assertSoleEngineNode(first);

    const second = nodeOf(await store());
    await second.start();
    const err = await assertSoleEngineNode(second).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SecondEngineNode);
    expect((err as Error).message).toBe(
      `another node of this store runs the engine (--gateway baileys), so this one does not start: two sockets on one line's session log each other out, and a line's session cannot yet move between nodes. Stop that node first, or serve this one with another --gateway (nodes present: ${first.info.label})`,
    );
    await second.stop();

    await first.stop();
    const third = nodeOf(await store());
    await third.start();
    await assertSoleEngineNode(third);
    const fourth = nodeOf(await store());
    await fourth.start();
    await expect(assertSoleEngineNode(fourth)).rejects.toThrow(SecondEngineNode);
    await fourth.stop();
    await third.stop();
  });

  it('a node that died without leaving holds the engine until its heartbeat is stale; then another takes it', async () => {
    const short = { sendMs: 200, beatMs: 60_000, takeoverMarginMs: 200 };
    const dead = nodeOf(await store(), short);
    await dead.start();
    await assertSoleEngineNode(dead);
    // It never beats again and never leaves: a crash.
    clearInterval((dead as unknown as { timer: NodeJS.Timeout }).timer);
    const next = nodeOf(await store());
    await next.start();
    await until(
      async () => {
        try {
          await assertSoleEngineNode(next);
          return true;
        } catch (e) {
          if (!(e instanceof SecondEngineNode)) throw e;
          return false;
        }
      },
      { what: "the dead node's engine lease to be free", timeoutMs: 60_000 },
    );
    await next.stop();
  });
});
