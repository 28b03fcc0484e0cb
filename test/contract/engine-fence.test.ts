import pg from 'pg';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { HoldLost } from '../../src/core/ports/engine-holds.js';
import type { NodeInfo } from '../../src/core/ports/leases.js';
import type { Store } from '../../src/core/ports/store.js';
import { until } from '../helpers/poll.js';
import { schemaUrl } from '../helpers/services.js';
import { openPg, PG_ABSENT, pgSchema } from './adapters.js';

/**
 * The fence on a line's state (D-136): a write carrying a holder's token
 * lands only while that node holds the line with that token, and a take
 * that moves the line is ordered with the write: the write lands before
 * the take, or it is refused; never after it.
 */
const b = (s: string) => Buffer.from(s, 'utf8');
const node = (id: string): NodeInfo => ({ id, label: `node ${id}`, staleMs: 60_000, marginMs: 10_000, engineUrl: null });
const now = () => Date.now();

describe.skipIf(PG_ABSENT !== null)('postgres: the fence on engine state writes', () => {
  let store: Store;
  let other: Store;
  let schema: string;
  let drop: () => Promise<void>;
  const clients: pg.Client[] = [];
  /** A connection of its own on the store's schema: a transaction held open across the test's steps. */
  const conn = async () => {
    const c = new pg.Client({ connectionString: schemaUrl(schema) });
    await c.connect();
    clients.push(c);
    return c;
  };
  const creds = async () => {
    const m = await store.readAuthKind('l1', 'creds');
    return Object.fromEntries([...m].map(([k, v]) => [k, v.toString()]));
  };
  /** Some statement is waiting on a lock `holder`'s open transaction holds. */
  const blockedBy = async (probe: pg.Client, holder: pg.Client) =>
    (
      await probe.query('SELECT count(*)::int AS n FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))', [
        (await holder.query('SELECT pg_backend_pid() AS pid')).rows[0].pid,
      ])
    ).rows[0].n > 0;

  beforeEach(async () => {
    ({ schema, drop } = await pgSchema());
    store = await openPg(schema);
    other = await openPg(schema);
    await store.nodeBeat(node('a'), now());
    await other.nodeBeat(node('b'), now());
    await store.writeAuth('l1', [{ kind: 'creds', id: 'me', value: b('first') }]);
    await store.holdSeed();
  });
  afterEach(async () => {
    for (const c of clients.splice(0)) await c.end();
    await store.close();
    await other.close();
    await drop();
  });

  it("the holder's fence writes; a stale token or another node's name is refused with HoldLost and writes nothing", async () => {
    const [t] = await store.holdTake('a', ['l1'], now());
    await store.writeAuth('l1', [{ kind: 'creds', id: 'me', value: b('second') }], { nodo: 'a', token: t!.token });
    expect(await creds()).toEqual({ me: 'second' });
    for (const fence of [
      { nodo: 'a', token: t!.token - 1 },
      { nodo: 'a', token: t!.token + 1 },
      { nodo: 'b', token: t!.token },
    ]) {
      const write = store.writeAuth(
        'l1',
        [
          { kind: 'creds', id: 'me', value: null },
          { kind: 'creds', id: 'new', value: b('never') },
        ],
        fence,
      );
      await expect(write).rejects.toBeInstanceOf(HoldLost);
      await expect(write).rejects.toMatchObject({ instancia: 'l1' });
    }
    expect(await creds()).toEqual({ me: 'second' });
    // A line without a row, or with its row freed, refuses every fence too.
    await expect(store.writeAuth('l9', [{ kind: 'creds', id: 'me', value: b('x') }], { nodo: 'a', token: 1 })).rejects.toBeInstanceOf(HoldLost);
    await store.holdGive('a', ['l1']);
    await expect(store.writeAuth('l1', [{ kind: 'creds', id: 'me', value: b('x') }], { nodo: 'a', token: t!.token })).rejects.toBeInstanceOf(HoldLost);
    expect(await creds()).toEqual({ me: 'second' });
    expect(await store.readAuthKind('l9', 'creds')).toEqual(new Map());
  });

  it("once another node took the line from a silent holder, the former holder's fence is refused and the successor's writes", async () => {
    await store.nodeBeat({ ...node('c'), marginMs: -1 }, now());
    const [tc] = await store.holdTake('c', ['l1'], now());
    const [tb] = await other.holdTake('b', ['l1'], now());
    expect(tb).toEqual({ instancia: 'l1', token: tc!.token + 1, from: 'c' });
    await expect(store.writeAuth('l1', [{ kind: 'creds', id: 'me', value: b('late') }], { nodo: 'c', token: tc!.token })).rejects.toBeInstanceOf(HoldLost);
    await other.writeAuth('l1', [{ kind: 'creds', id: 'me', value: b('successor') }], { nodo: 'b', token: tb!.token });
    expect(await creds()).toEqual({ me: 'successor' });
  });

  it('a take in progress makes a fenced write wait; once the take commits, the write is refused and writes nothing', async () => {
    const [ta] = await store.holdTake('a', ['l1'], now());
    const taker = await conn();
    const probe = await conn();
    // A take as holdTake makes it, held open: the row locked, then moved to b with the token raised.
    await taker.query('BEGIN');
    await taker.query(`SELECT 1 FROM motor_sesiones WHERE instancia = 'l1' FOR UPDATE`);
    await taker.query(`UPDATE motor_sesiones SET nodo = 'b', token = token + 1 WHERE instancia = 'l1'`);
    let settled = false;
    const write = store.writeAuth('l1', [{ kind: 'creds', id: 'me', value: b('after the take') }], { nodo: 'a', token: ta!.token });
    write.then(
      () => (settled = true),
      () => (settled = true),
    );
    await until(() => blockedBy(probe, taker), { what: 'the fenced write to wait on the take' });
    expect(settled).toBe(false);
    await taker.query('COMMIT');
    await expect(write).rejects.toBeInstanceOf(HoldLost);
    expect(await creds()).toEqual({ me: 'first' });
  });

  it('a take that rolls back lets the waiting write land', async () => {
    const [ta] = await store.holdTake('a', ['l1'], now());
    const taker = await conn();
    const probe = await conn();
    await taker.query('BEGIN');
    await taker.query(`UPDATE motor_sesiones SET nodo = 'b', token = token + 1 WHERE instancia = 'l1'`);
    const write = store.writeAuth('l1', [{ kind: 'creds', id: 'me', value: b('kept') }], { nodo: 'a', token: ta!.token });
    await until(() => blockedBy(probe, taker), { what: 'the fenced write to wait on the take' });
    await taker.query('ROLLBACK');
    await write;
    expect(await creds()).toEqual({ me: 'kept' });
  });

  it('a fenced write in progress: a take at that moment leaves the line to its holder (never waits, never takes it under the write)', async () => {
    const [ta] = await store.holdTake('a', ['l1'], now());
    await store.nodeLeave('a');
    await store.holdTake('a', ['l1'], now());
    // a's write holds the row share-locked as writeAuth's statement does, while it writes.
    const writer = await conn();
    await writer.query('BEGIN');
    const held = await writer.query(`SELECT 1 FROM motor_sesiones WHERE instancia = 'l1' AND nodo = 'a' AND token = $1 FOR SHARE`, [ta!.token + 1]);
    expect(held.rowCount).toBe(1);
    await writer.query(`INSERT INTO motor_auth (instancia, kind, id, valor) VALUES ('l1', 'creds', 'me2', 'x') `);
    // a is gone from the nodes (it left), so its line is takable, but not while its write holds the row.
    expect(await other.holdTake('b', ['l1'], now())).toEqual([]);
    await writer.query('COMMIT');
    expect(await other.holdTake('b', ['l1'], now())).toEqual([{ instancia: 'l1', token: ta!.token + 2, from: 'a' }]);
  });
});
