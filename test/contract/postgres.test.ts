import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { slotClaim, type SlotClaim } from '../../src/core/sending/caps.js';
import { AppError } from '../../src/core/api/errors.js';
import { MESSAGE_STATUS_FIELDS, messageStatusData } from '../../src/core/events/event-data.js';
import type { AcceptOptions, NewMensaje } from '../../src/core/ports/messages.js';
import { openPgStore, type PgStore } from '../../src/store/postgres/store.js';
import { PG_MIGRATIONS } from '../../src/store/postgres/migrations.js';
import { keptByPg, LOCK } from '../../src/store/postgres/db.js';
import { PARK } from '../../src/store/postgres/transitions.js';
import { until } from '../helpers/poll.js';
import { celular, messages, openPg, PG_ABSENT, PG_URL, pgSchema } from './adapters.js';

/**
 * PostgreSQL beyond the contract suites: two stores on one schema are two
 * nodes, and what one node's transactions make exact must stay exact with
 * the other writing at the same moment.
 */
if (PG_ABSENT) it.skip(`postgres store (contract suites and these): ${PG_ABSENT}`, () => {});

/** The first word of each statement node `n` sends from now on (BEGIN, WITH, COMMIT...): its round trips, in order. */
function firstWords(n: PgStore): string[] {
  const queries: string[] = [];
  const wrapped = new WeakSet<object>();
  n.db.pool.on('acquire', (client) => {
    if (wrapped.has(client)) return;
    wrapped.add(client);
    const query = client.query.bind(client) as (...args: unknown[]) => unknown;
    Object.assign(client, { query: (...args: unknown[]) => (queries.push(String(args[0]).split(/\s/)[0]!), query(...args)) });
  });
  return queries;
}

describe.skipIf(PG_ABSENT !== null)('postgres: two nodes on one database', () => {
  let schema: Awaited<ReturnType<typeof pgSchema>>;
  let a: PgStore;
  let b: PgStore;
  beforeEach(async () => {
    schema = await pgSchema();
    [a, b] = await Promise.all([openPg(schema.schema), openPg(schema.schema)]);
  });
  afterEach(async () => {
    await Promise.all([a.close(), b.close()]);
    await schema.drop();
  });

  /** Two plain connections to the schema: one holds locks, the other watches who waits for them. */
  async function holderAndProbe() {
    const url = new URL(PG_URL);
    url.searchParams.set('options', `-c search_path=${schema.schema}`);
    const [holder, probe] = [new pg.Client({ connectionString: url.toString() }), new pg.Client({ connectionString: url.toString() })];
    await holder.connect();
    await probe.connect();
    const holderPid = (await holder.query('SELECT pg_backend_pid() AS pid')).rows[0].pid as number;
    return { holder, probe, holderPid };
  }

  async function line(saldo: number, caps: Partial<ReturnType<typeof celular>> = {}) {
    const c = await a.createCliente({ nombre: 'N', email: 'n@x.mx', plan: 'medido', estado: 'activo', max_celulares: null, saldo_global: 0, key_hash: 'h' }, 1);
    const cel = await a.insertCelular({ ...celular(c.id, '525512345678'), ...caps }, 1);
    if (!cel.ok) throw new Error('insert');
    if (saldo > 0) await a.changeBalance({ cliente_id: c.id, celular_id: null, monto: saldo, motivo: 'recarga', actor: 'op' }, 1);
    return { clienteId: c.id, cel: cel.celular, msg: messages(c.id, cel.celular.id) };
  }
  const ledger = async (clienteId: number) =>
    (await a.db.one<{ n: number; total: number }>(
      'SELECT COUNT(*) AS n, COALESCE(SUM(monto), 0)::bigint AS total FROM movimientos_saldo WHERE cliente_id = $1',
      [clienteId],
    ))!;

  /** The message.status data of a client in log order, read from the table (the readers' API waits for other test files' transactions). */
  const statusLog = async (clienteId: number) =>
    (await a.db.q<{ data: string }>("SELECT data FROM eventos WHERE cliente_id = $1 AND evento = 'message.status' ORDER BY seq", [clienteId])).map(
      (r) => JSON.parse(r.data) as Record<string, any>,
    );

  it('50 acceptances from each node against a balance of 60: exactly 60 accepted, the balance ends at 0 and equals its ledger', async () => {
    const l = await line(60);
    const batch: NewMensaje[] = Array.from({ length: 100 }, () => l.msg());
    const results = await Promise.all(batch.map((m, i) => (i % 2 ? a : b).acceptMensaje(m, { charge: true, maxPending: null }, 10 + i)));
    expect(results.filter((r) => r.ok)).toHaveLength(60);
    expect(results.filter((r) => !r.ok && r.reason === 'saldo')).toHaveLength(40);
    expect((await b.getCliente(l.clienteId))!.saldo_global).toBe(0);
    expect(await ledger(l.clienteId)).toEqual({ n: 61, total: 0 });
    expect((await a.db.one<{ pendientes: number }>('SELECT pendientes FROM celulares WHERE id = $1', [l.cel.id]))!.pendientes).toBe(60);

    // Both nodes now send, fail (with refunds) and top up the same client and line at once: no deadlock, and the money adds up.
    const accepted = batch.filter((_, i) => results[i]!.ok);
    await Promise.all([
      ...accepted.map((m, i) => (i % 3 === 0 ? a.failMensaje(m.msg_id, 'refused', 'rechazado', 100) : b.markSent(m.msg_id, `G${i}`, 100))),
      ...accepted.filter((_, i) => i % 3 === 1).map((_, i) => (i % 2 ? a : b).receipt(l.cel.id, `G${3 * i + 1}`, 'error', 101, 'lost')),
      ...Array.from({ length: 10 }, (_, i) =>
        (i % 2 ? a : b).changeBalance({ cliente_id: l.clienteId, celular_id: i % 4 ? null : l.cel.id, monto: 2, motivo: 'recarga', actor: 'op' }, 102),
      ),
    ]);
    const refunded = accepted.filter((_, i) => i % 3 !== 2).length;
    const cli = (await a.getCliente(l.clienteId))!;
    const cel = (await a.getCelular(l.cel.id))!;
    expect(cli.saldo_global + cel.saldo_actual).toBe(refunded + 20);
    expect((await ledger(l.clienteId)).total).toBe(refunded + 20);
    expect((await a.db.one<{ pendientes: number }>('SELECT pendientes FROM celulares WHERE id = $1', [l.cel.id]))!.pendientes).toBe(0);
    const kept = await a.listMensajes({ cliente_id: l.clienteId, page: 1, por_pagina: 1, estado: 'error' });
    const counted = await a.listMensajes({ cliente_id: l.clienteId, page: 1, por_pagina: 1, estado: 'error', desde: 1 });
    expect(kept.total).toBe(refunded);
    expect(counted.total).toBe(refunded);
  });

  it('direct sends from both nodes on a line capped at 7 a minute: exactly 7 take a slot', async () => {
    const l = await line(0, { max_envios_por_minuto: 7 });
    const t = 1_000_000;
    const results = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        (i % 2 ? a : b).acceptMensaje(l.msg('directo'), { charge: false, maxPending: null, slot: slotClaim(l.cel, t, 60_000) }, t),
      ),
    );
    expect(results.filter((r) => r.ok)).toHaveLength(7);
    expect(results.filter((r) => !r.ok && r.reason === 'cap')).toHaveLength(33);
  });

  it('claims of queued sends and direct acceptances from both nodes on a line capped at 7 a minute: exactly 7 take a slot', async () => {
    const l = await line(0, { max_envios_por_minuto: 7 });
    const t = 1_000_000;
    const queued = Array.from({ length: 20 }, () => l.msg());
    for (const m of queued) await a.acceptMensaje(m, { charge: false, maxPending: null }, t);
    const slot = () => slotClaim(l.cel, t, 60_000);
    const [claims, direct] = await Promise.all([
      Promise.all(queued.map((m, i) => (i % 2 ? a : b).claimQueued(m.msg_id, slot(), t))),
      Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 ? b : a).acceptMensaje(l.msg('directo'), { charge: false, maxPending: null, slot: slot() }, t))),
    ]);
    expect(claims.filter((r) => r.ok).length + direct.filter((r) => r.ok).length).toBe(7);
    expect(claims.filter((r) => !r.ok && r.reason === 'cap').length + direct.filter((r) => !r.ok && r.reason === 'cap').length).toBe(33);
  });

  it("an acceptance takes the key's lock, then the client's row, then the line's: none while the one before it is held by another", async () => {
    const l = await line(5);
    const { holder, probe, holderPid } = await holderAndProbe();
    try {
      const locks = (clave: string): Array<{ take: string; test: string; args: unknown[] }> => [
        {
          take: 'SELECT pg_advisory_xact_lock($1, hashtext($2))',
          test: 'SELECT pg_try_advisory_xact_lock($1, hashtext($2)) AS got',
          args: [LOCK.idempotencyKey, `${l.clienteId}:${clave}`],
        },
        {
          take: 'SELECT 1 FROM clientes WHERE id = $1 FOR NO KEY UPDATE',
          test: 'SELECT true AS got FROM clientes WHERE id = $1 FOR NO KEY UPDATE NOWAIT',
          args: [l.clienteId],
        },
        {
          take: 'SELECT 1 FROM celulares WHERE id = $1 FOR NO KEY UPDATE',
          test: 'SELECT true AS got FROM celulares WHERE id = $1 FOR NO KEY UPDATE NOWAIT',
          args: [l.cel.id],
        },
      ];
      /** Whether another transaction could take the lock now (it is let go at once). */
      const free = async (lock: { test: string; args: unknown[] }) => {
        await probe.query('BEGIN');
        try {
          return (await probe.query(lock.test, lock.args)).rows[0].got === true;
        } catch (err) {
          if ((err as { code?: string }).code === '55P03') return false;
          throw err;
        } finally {
          await probe.query('ROLLBACK');
        }
      };
      // A random key: advisory locks are the database's, and other schemas' tests take theirs.
      const run = randomUUID();
      for (const held of [0, 1, 2]) {
        const clave = `${run}-${held}`;
        const order = locks(clave);
        await holder.query('BEGIN');
        await holder.query(order[held]!.take, order[held]!.args);
        const idem = { clave, huella: 'h', expira_at: 1000, answer: () => ({ status: 200, body: '{}' }) };
        const accepted = a.acceptMensaje(l.msg(), { charge: true, maxPending: null, idem }, 10);
        await until(async () => (await probe.query('SELECT 1 FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))', [holderPid])).rowCount === 1, {
          what: 'the acceptance to wait for the held lock',
        });
        // Waiting on lock `held`: it holds those before it, and none after.
        for (const [i, lock] of order.entries()) if (i !== held) expect(await free(lock)).toBe(i > held);
        await holder.query('ROLLBACK');
        expect(await accepted).toMatchObject({ ok: true });
      }
    } finally {
      await holder.end().catch(() => undefined);
      await probe.end().catch(() => undefined);
    }
  });

  it('an acceptance is four round trips (BEGIN, a read, a write, COMMIT), a queued one without a key two (D-83); a refusal writes nothing', async () => {
    const l = await line(2, { max_envios_por_minuto: 1000 });
    const queries = firstWords(a);
    const t = 1_000_000;
    const slot = () => slotClaim(l.cel, t, 60_000);
    const idem = (clave: string) => ({ clave, huella: 'h', expira_at: t + 1000, answer: () => ({ status: 200, body: '{}' }) });
    const trips = async (m: NewMensaje, opts: AcceptOptions) => {
      queries.length = 0;
      const r = await a.acceptMensaje(m, opts, t);
      return { ok: r.ok, queries: [...queries] };
    };
    const four = { ok: true, queries: ['BEGIN', 'WITH', 'WITH', 'COMMIT'] };
    // Queued without a key: an unlocked read and the guarded write, no transaction; a refusal is answered on the locked path.
    expect(await trips(l.msg(), { charge: true, maxPending: 10 })).toEqual({ ok: true, queries: ['SELECT', 'WITH'] });
    expect(await trips(l.msg(), { charge: true, maxPending: 1 })).toEqual({ ok: false, queries: ['SELECT', 'BEGIN', 'WITH', 'COMMIT'] });
    expect(await trips(l.msg(), { charge: false, maxPending: 10 })).toEqual({ ok: true, queries: ['SELECT', 'WITH'] });
    expect(await trips(l.msg(), { charge: false, maxPending: null, idem: idem('a') })).toEqual(four);
    expect(await trips(l.msg('directo'), { charge: true, maxPending: null, slot: slot(), idem: idem('b') })).toEqual(four);
    // The client's balance is spent: a credit on the line's pays the next, then none is left.
    await a.changeBalance({ cliente_id: l.clienteId, celular_id: l.cel.id, monto: 1, motivo: 'r', actor: 'op' }, t);
    expect(await trips(l.msg('directo'), { charge: true, maxPending: null, slot: slot() })).toEqual(four);
    expect(await trips(l.msg('directo'), { charge: true, maxPending: null, slot: slot() })).toEqual({ ok: false, queries: ['BEGIN', 'WITH', 'COMMIT'] });
  });

  it('both nodes claim the same 30 queued messages: each is claimed once', async () => {
    const l = await line(0, { max_envios_por_minuto: 1000, max_envios_por_hora: 1000 });
    const ids: string[] = [];
    for (let i = 0; i < 30; i++) {
      const m = l.msg();
      await a.acceptMensaje(m, { charge: false, maxPending: null }, 10);
      ids.push(m.msg_id);
    }
    const claims = await Promise.all(ids.flatMap((id) => [a, b].map((s) => s.claimQueued(id, slotClaim(l.cel, 20, 60_000), 20))));
    expect(claims.filter((r) => r.ok)).toHaveLength(30);
    expect(claims.filter((r) => !r.ok && r.reason === 'taken')).toHaveLength(30);
  });

  it('a queued claim is one autocommitted statement: claimed, taken or capped, with windows or none (D-84)', async () => {
    const l = await line(0, { max_envios_por_minuto: 1 });
    const queries = firstWords(a);
    const t = 1_000_000;
    const [q1, q2, q3] = [l.msg(), l.msg(), l.msg()];
    for (const m of [q1, q2, q3]) await a.acceptMensaje(m, { charge: false, maxPending: null }, t);
    const trips = async (id: string, slot: SlotClaim) => {
      queries.length = 0;
      const r = await a.claimQueued(id, slot, t);
      return { r, queries: [...queries] };
    };
    const one = ['WITH'];
    expect(await trips(q1.msg_id, slotClaim(l.cel, t, 60_000))).toEqual({ r: { ok: true }, queries: one });
    expect(await trips(q1.msg_id, slotClaim(l.cel, t, 60_000))).toEqual({ r: { ok: false, reason: 'taken' }, queries: one });
    expect(await trips(q2.msg_id, slotClaim(l.cel, t, 60_000))).toEqual({
      r: { ok: false, reason: 'cap', retryAfterMs: 1000, which: 'per minute', cap: 1 },
      queries: one,
    });
    // No window binds (a claim core built so): no counts to keep, the slot is still taken and counted by the next claim.
    const free: SlotClaim = { windows: [], room: [], decide: () => null, holdUntil: t + 60_000 };
    expect(await trips(q2.msg_id, free)).toEqual({ r: { ok: true }, queries: one });
    expect(await trips(q3.msg_id, slotClaim({ ...l.cel, max_envios_por_minuto: 3 }, t, 60_000))).toMatchObject({ r: { ok: true } });
    expect(await a.claimQueued(l.msg().msg_id, slotClaim(l.cel, t, 60_000), t)).toEqual({ ok: false, reason: 'taken' });
    const slots = await a.db.q<{ n: number }>('SELECT COUNT(*) AS n FROM cupos WHERE celular_id = $1', [l.cel.id]);
    expect(slots[0]!.n).toBe(3);
    expect(await a.claimQueued(q3.msg_id, slotClaim({ ...l.cel, max_envios_por_minuto: 3 }, t, 60_000), t)).toEqual({ ok: false, reason: 'taken' });
  });

  it('claims arriving together share one statement: a line twice is counted in order, an absent message and a held-back guess are taken (D-193)', async () => {
    const t = 1_000_000;
    const lines: Array<Awaited<ReturnType<typeof line>>> = [];
    for (let k = 0; k < 6; k++) {
      const numero = `52551234570${k}`;
      lines.push(await line(0, { max_envios_por_minuto: 1, numero, gateway_token_hash: numero.padEnd(64, 'g') }));
    }
    // Each line numbers its messages from 1: ids of their own here.
    const msg = (l: (typeof lines)[number]) => ({ ...l.msg(), msg_id: randomUUID() });
    const heads = lines.map(msg);
    for (const [k, m] of heads.entries()) await a.acceptMensaje(m, { charge: false, maxPending: null }, t + k);
    // The first line's second message (capped at 1 a minute behind its head); on the last line, whose head is claimed alone
    // first, an older and a newer message to one recipient.
    const second = msg(lines[0]!);
    await a.acceptMensaje(second, { charge: false, maxPending: null }, t + 10);
    const older = { ...msg(lines[5]!), destinatario: '525500000111' };
    const newer = { ...msg(lines[5]!), destinatario: '525500000111' };
    const free = lines[5]!.cel;
    await a.acceptMensaje(older, { charge: false, maxPending: null }, t + 11);
    await a.acceptMensaje(newer, { charge: false, maxPending: null }, t + 12);
    const queries = firstWords(a);
    const slot = (l: (typeof lines)[number]) => slotClaim(l.cel, t + 20, 60_000);
    // A first claim starts a turn alone; those arriving while it runs share the next one.
    const warm = a.claimQueued(heads[5]!.msg_id, slot(lines[5]!), t + 20);
    const together = await Promise.all([
      ...heads.slice(0, 5).map((m, k) => a.claimQueued(m.msg_id, slot(lines[k]!), t + 20)),
      a.claimQueued(second.msg_id, slot(lines[0]!), t + 20),
      a.claimQueued('absent', slot(lines[2]!), t + 20),
      a.claimQueued(newer.msg_id, slotClaim({ ...free, max_envios_por_minuto: 100 }, t + 20, 60_000), t + 20, true),
    ]);
    expect(await warm).toEqual({ ok: true });
    expect(together).toEqual([
      ...heads.slice(0, 5).map(() => ({ ok: true })),
      { ok: false, reason: 'cap', retryAfterMs: 1000, which: 'per minute', cap: 1 },
      { ok: false, reason: 'taken' },
      { ok: false, reason: 'taken' },
    ]);
    // The turn alone, the turn of eight, and the first line's second claim again alone after it (it counts its head's slot).
    expect(queries).toEqual(['WITH', 'WITH', 'WITH']);
    const slots = await a.db.q<{ celular_id: number; n: number }>(
      'SELECT celular_id, COUNT(*)::int AS n FROM cupos WHERE celular_id = ANY($1::bigint[]) GROUP BY celular_id ORDER BY celular_id',
      [lines.map((l) => l.cel.id)],
    );
    expect(slots).toEqual(lines.map((l) => ({ celular_id: l.cel.id, n: 1 })));
    const claimed = await a.db.q<{ msg_id: string }>('SELECT msg_id FROM mensajes WHERE lease_until IS NOT NULL AND msg_id = ANY($1::text[]) ORDER BY seq', [
      [...heads, second, older, newer].map((m) => m.msg_id),
    ]);
    expect(claimed.map((m) => m.msg_id)).toEqual(heads.map((m) => m.msg_id));
  });

  it("a line another transaction holds holds up no other line's claim: a batch skips it, and its claim waits alone (D-193)", async () => {
    const t = 1_000_000;
    const lines: Array<Awaited<ReturnType<typeof line>>> = [];
    for (let k = 0; k < 3; k++) {
      const numero = `52551234580${k}`;
      lines.push(await line(0, { numero, gateway_token_hash: numero.padEnd(64, 'g') }));
    }
    const heads = lines.map((l) => ({ ...l.msg(), msg_id: randomUUID() }));
    for (const m of heads) await a.acceptMensaje(m, { charge: false, maxPending: null }, t);
    const { holder, probe, holderPid } = await holderAndProbe();
    try {
      await holder.query('BEGIN');
      await holder.query('SELECT 1 FROM celulares WHERE id = $1 FOR NO KEY UPDATE', [lines[1]!.cel.id]);
      const settled = new Set<number>();
      const claims = heads.map((m, k) => a.claimQueued(m.msg_id, slotClaim(lines[k]!.cel, t, 60_000), t).then((r) => (settled.add(k), r)));
      // The other lines' claims are answered while the held line's waits for its lock, alone.
      await until(async () => settled.has(0) && settled.has(2), { what: "the free lines' claims" });
      await until(async () => (await probe.query('SELECT 1 FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))', [holderPid])).rowCount === 1, {
        what: "the held line's claim to wait for its lock",
      });
      expect(settled.has(1)).toBe(false);
      await holder.query('COMMIT');
      expect(await Promise.all(claims)).toEqual([{ ok: true }, { ok: true }, { ok: true }]);
    } finally {
      await holder.end();
      await probe.end();
    }
  });

  it("a queued claim that waits for its line's lock counts the slot its holder took meanwhile (PostgreSQL, D-84)", async () => {
    const l = await line(0, { max_envios_por_minuto: 2 });
    const t = 1_000_000;
    const [q1, q2, q3] = [l.msg(), l.msg(), l.msg()];
    for (const m of [q1, q2, q3]) await a.acceptMensaje(m, { charge: false, maxPending: null }, t);
    expect(await a.claimQueued(q1.msg_id, slotClaim(l.cel, t, 60_000), t)).toEqual({ ok: true });
    const { holder, probe, holderPid } = await holderAndProbe();
    try {
      /** Another slot taker holds the line's lock and takes the minute's last slot; the claim starts, and waits for the lock. */
      const raced = async (end: 'COMMIT' | 'ROLLBACK', id: string, seq: number) => {
        await holder.query('BEGIN');
        await holder.query('SELECT 1 FROM celulares WHERE id = $1 FOR NO KEY UPDATE', [l.cel.id]);
        await holder.query('INSERT INTO cupos (seq, celular_id, cupo_at) VALUES ($1, $2, $3)', [seq, l.cel.id, t + 60_000]);
        const claim = b.claimQueued(id, slotClaim(l.cel, t, 60_000), t);
        await until(async () => (await probe.query('SELECT 1 FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))', [holderPid])).rowCount === 1, {
          what: "the claim to wait for the line's lock",
        });
        await holder.query(end);
        return claim;
      };
      // Its statement began before the holder's slot was committed; the count after the lock sees it all the same.
      expect(await raced('COMMIT', q2.msg_id, -1)).toEqual({ ok: false, reason: 'cap', retryAfterMs: 1000, which: 'per minute', cap: 2 });
      await a.db.q('DELETE FROM cupos WHERE seq = -1');
      // The holder gave its slot up: the claim takes the last one.
      expect(await raced('ROLLBACK', q2.msg_id, -2)).toEqual({ ok: true });
      const slots = await a.db.q<{ n: number }>('SELECT COUNT(*) AS n FROM cupos WHERE celular_id = $1', [l.cel.id]);
      expect(slots[0]!.n).toBe(2);
    } finally {
      await holder.end().catch(() => undefined);
      await probe.end().catch(() => undefined);
    }
  });

  it('receipts racing the record of their send on the other node are never left parked', async () => {
    const l = await line(0);
    const sends: string[] = [];
    for (let i = 0; i < 40; i++) {
      const m = l.msg('directo');
      await a.acceptMensaje(m, { charge: false, maxPending: null }, 10);
      sends.push(m.msg_id);
    }
    await Promise.all(
      sends.flatMap((id, i) => {
        const mark = () => a.markSent(id, `G-${i}`, 20);
        const ack = () => b.receipt(l.cel.id, `G-${i}`, 'entregado', 21);
        return i % 2 ? [mark(), ack()] : [ack(), mark()];
      }),
    );
    for (const id of sends) expect((await b.getMensaje(id))!.estado).toBe('entregado');
    expect(await a.db.q('SELECT * FROM acuses_pendientes')).toEqual([]);
  });

  /**
   * A send's record (node a) and a receipt that parks for it (node c), forced into either order on the line's lock (D-87):
   * `hold` holds a row from a session of its own; node c, opened with pg.Client.prototype.query patched, pauses the
   * statements `gate.match` names until `gate.open` resolves, noting the backends that sent them.
   */
  async function parkRace(
    run: (r: {
      hold: pg.Client;
      c: PgStore;
      gate: (match: (text: string) => boolean) => { pids: number[]; open: () => void };
      waiters: () => Promise<number>;
      waiting: (pid: number) => Promise<boolean>;
    }) => Promise<void>,
  ) {
    const { holder: hold, probe, holderPid: holder } = await holderAndProbe();
    let gated: { match: (text: string) => boolean; pids: number[]; opened: Promise<void>; open: () => void } | null = null;
    const proto = pg.Client.prototype as unknown as { query: (...a: unknown[]) => unknown };
    const plain = proto.query;
    // Each connection binds the prototype's method when it connects: node c's, opened below, see this one.
    proto.query = function (this: pg.Client, ...args: unknown[]) {
      const a0 = args[0] as string | { text?: unknown } | undefined;
      const text = typeof a0 === 'string' ? a0 : a0?.text;
      const g = gated;
      if (g && typeof text === 'string' && g.match(text)) {
        g.pids.push((this as unknown as { processID: number }).processID);
        return g.opened.then(() => plain.apply(this, args));
      }
      return plain.apply(this, args);
    };
    let c: PgStore | null = null;
    try {
      c = await openPg(schema.schema);
      await run({
        hold,
        c,
        gate: (match) => {
          let open!: () => void;
          const g = { match, pids: [] as number[], opened: new Promise<void>((r) => (open = r)), open: () => open() };
          gated = g;
          return { pids: g.pids, open };
        },
        // Sessions waiting for the holder, or for one that waits for it (a row's second waiter queues behind the first).
        waiters: async () =>
          (
            await probe.query(
              `WITH w AS (SELECT pid, pg_blocking_pids(pid) AS b FROM pg_stat_activity)
               SELECT COUNT(*)::int AS n FROM w WHERE $1 = ANY(w.b) OR EXISTS (SELECT 1 FROM w v WHERE $1 = ANY(v.b) AND v.pid = ANY(w.b))`,
              [holder],
            )
          ).rows[0].n as number,
        waiting: async (pid) => (await probe.query('SELECT cardinality(pg_blocking_pids($1)) > 0 AS w', [pid])).rows[0].w === true,
      });
    } finally {
      // A test that failed midway leaves nothing paused.
      (gated as { open: () => void } | null)?.open();
      proto.query = plain;
      // The holder first: its end lets go of what a paused statement may wait for.
      await hold.end().catch(() => undefined);
      await probe.end().catch(() => undefined);
      await c?.close();
    }
  }

  /** The message's status steps in the log, each [before, after]. */
  const steps = async (clienteId: number, msgId: string) =>
    (await statusLog(clienteId)).filter((d) => d.msg_id === msgId).map((d) => [d.estado_anterior, d.estado]);
  const parkedRows = () => a.db.q('SELECT gateway_msg_id, estado FROM acuses_pendientes');

  it("a receipt parked while its send's record waits for the line is read by that record and applied once: queued, direct, in a turn (D-87)", async () => {
    const l = await line(0);
    await parkRace(async ({ hold, c, gate, waiters }) => {
      for (const how of ['cola', 'directo', 'turn'] as const) {
        const modo = how === 'directo' ? 'directo' : 'cola';
        const m = l.msg(modo);
        const gid = `G-first-${how}`;
        // In a turn, another message of the line with it.
        const o = l.msg('cola');
        for (const x of how === 'turn' ? [m, o] : [m]) await a.acceptMensaje(x, { charge: false, maxPending: null }, 10);
        // Another session holds the line's row: the receipt, having found no message, waits there to park.
        await hold.query('BEGIN');
        await hold.query('SELECT 1 FROM celulares WHERE id = $1 FOR NO KEY UPDATE', [l.cel.id]);
        // Its look after parking waits until the record is done: the record alone can apply it.
        const look = gate((t) => t.includes('FROM mensajes WHERE msg_id = (SELECT msg_id FROM ids_gateway') && !t.startsWith('WITH'));
        const ack = c.receipt(l.cel.id, gid, 'leido', 21);
        await until(async () => (await waiters()) === 1, { what: 'the receipt to wait for the line to park' });
        // The record takes the id's lock, then waits for the line behind the park. In a turn: an unknown id goes alone
        // (no line to lock), and the two calls made meanwhile go together in the next turn, which waits for the line.
        let other: Promise<unknown> = Promise.resolve();
        let sent: Promise<unknown>;
        if (how === 'turn') {
          const none = a.markSent('00000000-0000-4000-8abc-00000000dead', 'G-none', 20);
          sent = a.markSent(m.msg_id, gid, 20);
          other = Promise.all([none, a.markSent(o.msg_id, 'G-first-other', 20)]);
        } else sent = a.markSent(m.msg_id, gid, 20);
        await until(async () => (await waiters()) === 2, { what: 'the record to wait for the line' });
        await hold.query('COMMIT');
        // Parked and committed before the record got the line: its statement, begun before, reads it all the same.
        expect(await sent, how).toMatchObject({ estado: 'leido', entregado_at: 20, leido_at: 20 });
        if (how === 'turn') expect(await other).toMatchObject([null, { estado: 'enviado' }]);
        look.open();
        // The receipt finds the message when it looks again, and its parked row already claimed.
        expect(await ack, how).toBe('parked');
        expect(await parkedRows(), how).toEqual([]);
        expect(await steps(l.clienteId, m.msg_id), how).toEqual([
          [null, 'pendiente'],
          ['pendiente', 'enviado'],
          ['enviado', 'entregado'],
          ['entregado', 'leido'],
        ]);
      }
    });
  });

  it("a receipt that parks while its send's record holds the line waits for that record, then applies itself once, queued or direct (D-87)", async () => {
    const l = await line(0);
    await parkRace(async ({ hold, c, gate, waiters, waiting }) => {
      for (const modo of ['cola', 'directo'] as const) {
        const m = l.msg(modo);
        const gid = `G-later-${modo}`;
        await a.acceptMensaje(m, { charge: false, maxPending: null }, 10);
        // The receipt finds no message (it has passed the id's lock too) and stops before it locks the line to park.
        const park = gate((t) => t === PARK);
        const ack = c.receipt(l.cel.id, gid, 'leido', 21);
        await until(() => park.pids.length === 1, { what: 'the receipt to come to park' });
        // Another session holds the message's row: the record locks the id and the line, then waits there.
        await hold.query('BEGIN');
        await hold.query('SELECT 1 FROM mensajes WHERE msg_id = $1 FOR UPDATE', [m.msg_id]);
        const sent = a.markSent(m.msg_id, gid, 20);
        await until(async () => (await waiters()) === 1, { what: 'the record to wait for the message' });
        park.open();
        await until(() => waiting(park.pids[0]!), { what: 'the park to wait for the record' });
        // It waits for the record, which waits for the holder.
        expect(await waiters()).toBe(2);
        await hold.query('COMMIT');
        // The record read nothing parked; the park, after its commit, sees the record and applies itself.
        expect(await sent, modo).toMatchObject({ estado: 'enviado' });
        const r = await ack;
        expect(r && r !== 'parked' ? [r.before.estado, r.after.estado, r.after.entregado_at, r.after.leido_at] : r, modo).toEqual(['enviado', 'leido', 21, 21]);
        expect(await parkedRows(), modo).toEqual([]);
        const log = await steps(l.clienteId, m.msg_id);
        expect(log, modo).toEqual([
          [null, 'pendiente'],
          ['pendiente', 'enviado'],
          ['enviado', 'entregado'],
          ['entregado', 'leido'],
        ]);
        // The data built in SQL is core's, field for field and in its order.
        const final = (await a.getMensaje(m.msg_id))!;
        const data = (await statusLog(l.clienteId)).filter((d) => d.msg_id === m.msg_id);
        expect(data[1]).toEqual(messageStatusData({ ...final, estado: 'enviado' }, 'pendiente', 20));
        expect(data[3]).toEqual(messageStatusData(final, 'entregado', 21));
        for (const d of data.slice(1)) expect(Object.keys(d)).toEqual([...MESSAGE_STATUS_FIELDS]);
      }
    });
  });

  it('a send recorded with receipts parked on both nodes applies each once, in order, and leaves none parked', async () => {
    const l = await line(0);
    const m = l.msg('cola');
    await a.acceptMensaje(m, { charge: false, maxPending: null }, 10);
    expect(await b.receipt(l.cel.id, 'G-p', 'leido', 12)).toBe('parked');
    expect(await a.receipt(l.cel.id, 'G-p', 'entregado', 11)).toBe('parked');
    const sent = (await b.markSent(m.msg_id, 'G-p', 20))!;
    expect(sent).toMatchObject({ estado: 'leido', entregado_at: 20, leido_at: 20 });
    expect(await a.db.one('SELECT pendientes FROM celulares WHERE id = $1', [l.cel.id])).toEqual({ pendientes: 0 });
    expect(await a.db.q('SELECT * FROM acuses_pendientes')).toEqual([]);
    const steps = (await statusLog(l.clienteId)).map((d) => d.estado);
    expect(steps).toEqual(['pendiente', 'enviado', 'entregado', 'leido']);
  });

  it('the send recorded on one node while the other fails the same message: one wins each, refunded once, one event each, the counter exact', async () => {
    const l = await line(30);
    const batch = Array.from({ length: 30 }, (_, i) => l.msg(i % 2 ? 'cola' : 'directo'));
    for (const m of batch) expect((await a.acceptMensaje(m, { charge: true, maxPending: null }, 10)).ok).toBe(true);
    const outcomes = await Promise.all(
      batch.map(async (m, i) => {
        const send = () => a.markSent(m.msg_id, `G-r${i}`, 20);
        const fail = () => b.failMensaje(m.msg_id, 'gave up', 'no_enviado', 20);
        // Either first; the failure's transaction takes longer, so it is given a head start of a few ms on half of them.
        const failFirst = async () => {
          const failing = fail();
          await new Promise((r) => setTimeout(r, i % 5));
          return [await send(), await failing] as const;
        };
        const [sent, failed] = i % 2 ? await Promise.all([send(), fail()]) : await failFirst();
        // A read receipt right after, whichever won: it moves only a sent message.
        await (i % 2 ? a : b).receipt(l.cel.id, `G-r${i}`, 'leido', 21);
        return { sent: sent !== null, failed: failed !== null };
      }),
    );
    for (const o of outcomes) expect(o.sent !== o.failed).toBe(true);
    const failed = outcomes.filter((o) => o.failed).length;
    expect((await a.getCliente(l.clienteId))!.saldo_global).toBe(failed);
    expect((await ledger(l.clienteId)).total).toBe(failed);
    expect(await a.db.one('SELECT pendientes FROM celulares WHERE id = $1', [l.cel.id])).toEqual({ pendientes: 0 });
    const steps = (await statusLog(l.clienteId)).filter((d) => d.estado_anterior !== null);
    for (const [i, m] of batch.entries()) {
      const mine = steps.filter((d) => d.msg_id === m.msg_id).map((d) => `${d.estado_anterior}>${d.estado}`);
      expect(mine, m.msg_id).toEqual(outcomes[i]!.failed ? ['pendiente>error'] : ['pendiente>enviado', 'enviado>entregado', 'entregado>leido']);
    }
    // A failed message never got its id: its receipt stays parked (until it expires); a sent one's never does.
    const parked = (await a.db.q<{ g: string }>('SELECT gateway_msg_id AS g FROM acuses_pendientes ORDER BY 1')).map((r) => r.g);
    expect(parked).toEqual(outcomes.flatMap((o, i) => (o.failed ? [`G-r${i}`] : [])).sort());
  });

  it('the inbox counts migration holds off writers of the previous version until its triggers exist', async () => {
    const fresh = await pgSchema();
    const url = new URL(PG_URL);
    url.searchParams.set('options', `-c search_path=${fresh.schema}`);
    const [migrator, oldNode] = [new pg.Client({ connectionString: url.toString() }), new pg.Client({ connectionString: url.toString() })];
    try {
      await migrator.connect();
      await oldNode.connect();
      const counts = PG_MIGRATIONS.find((m) => /inbox counts/.test(m.name))!;
      for (const m of PG_MIGRATIONS.filter((m) => m.version < counts.version)) await migrator.query(m.sql);
      await migrator.query('BEGIN');
      // The migration up to its triggers: the counts are filled, the triggers not made yet.
      await migrator.query(counts.sql.slice(0, counts.sql.indexOf('CREATE FUNCTION')));
      // A node of the previous version receiving now would be missed by the counts for good: it must wait.
      await oldNode.query("SET lock_timeout = '300ms'");
      const insert = oldNode.query(
        "INSERT INTO recibidos (cliente_id, celular_id, de, tipo, texto, media, gateway_msg_id, fecha, created_at) VALUES (1, 1, '525512345678', 'texto', 'hola', NULL, 'G1', 0, 0)",
      );
      await expect(insert).rejects.toMatchObject({ code: '55P03' });
      await migrator.query('ROLLBACK');
    } finally {
      await migrator.end().catch(() => undefined);
      await oldNode.end().catch(() => undefined);
      await fresh.drop();
    }
  });

  it('the quarter counts by estado migration holds off writers of the previous version until its trigger function is replaced', async () => {
    const fresh = await pgSchema();
    const url = new URL(PG_URL);
    url.searchParams.set('options', `-c search_path=${fresh.schema}`);
    const [migrator, oldNode] = [new pg.Client({ connectionString: url.toString() }), new pg.Client({ connectionString: url.toString() })];
    try {
      await migrator.connect();
      await oldNode.connect();
      const counts = PG_MIGRATIONS.find((m) => /quarter-hour counts by estado/.test(m.name))!;
      for (const m of PG_MIGRATIONS.filter((m) => m.version < counts.version)) await migrator.query(m.sql);
      await migrator.query('BEGIN');
      // The migration up to its trigger function: the counts refilled, the old function (no estado kept) still in place.
      await migrator.query(counts.sql.slice(0, counts.sql.indexOf('CREATE OR REPLACE FUNCTION')));
      // A node of the previous version changing a message's state now would leave its quarter's counts wrong: it must wait.
      await oldNode.query("SET lock_timeout = '300ms'");
      await expect(oldNode.query("UPDATE mensajes SET estado = 'enviado' WHERE msg_id = 'm1'")).rejects.toMatchObject({ code: '55P03' });
      await migrator.query('ROLLBACK');
    } finally {
      await migrator.end().catch(() => undefined);
      await oldNode.end().catch(() => undefined);
      await fresh.drop();
    }
  });

  it('statements of many messages, some changing no estado, keep the counts equal to a recount', async () => {
    const l = await line(0);
    const c2 = await a.createCliente(
      { nombre: 'M', email: 'm@x.mx', plan: 'medido', estado: 'activo', max_celulares: null, saldo_global: 0, key_hash: 'h2' },
      1,
    );
    const cel2 = await a.insertCelular(celular(c2.id, '525512345679'), 1);
    if (!cel2.ok) throw new Error('insert');
    const l2 = { clienteId: c2.id, cel: cel2.celular };
    const now = Date.now();
    // Two clients, messages in three quarters, inserted by one statement each.
    const add = (c: { clienteId: number; cel: { id: number } }, n: number, at: number) =>
      a.db.q(
        `INSERT INTO mensajes (msg_id, cliente_id, celular_id, destinatario, tipo, modo, estado, texto, payload, created_at)
         SELECT 'm' || g || '-' || $2::text, $1::bigint, $2::bigint, '14155552671', 'texto', 'cola', 'pendiente', 'x', '{}', $3::bigint + g * 600000
         FROM generate_series(1, $4::int) g`,
        [c.clienteId, c.cel.id, at, n],
      );
    await add(l, 6, now);
    await add(l2, 4, now);
    const recount = async () => {
      const k = (sql: string) => a.db.q<{ k: string }>(`SELECT a || ' ' || b || ' ' || e || ' ' || n AS k FROM (${sql}) x ORDER BY 1`);
      const mine = `cliente_id IN (${l.clienteId}, ${l2.clienteId})`;
      const lines = await k(`SELECT cliente_id AS a, celular_id AS b, estado AS e, n FROM conteos_mensajes WHERE n <> 0 AND ${mine}`);
      const quarters = await k(`SELECT cliente_id AS a, cuarto AS b, estado AS e, n FROM conteos_cuartos WHERE n <> 0 AND ${mine}`);
      expect(lines).toEqual(await k(`SELECT cliente_id AS a, celular_id AS b, estado AS e, COUNT(*) AS n FROM mensajes WHERE ${mine} GROUP BY 1, 2, 3`));
      expect(quarters).toEqual(
        await k(`SELECT cliente_id AS a, created_at / 900000 AS b, estado AS e, COUNT(*) AS n FROM mensajes WHERE ${mine} GROUP BY 1, 2, 3`),
      );
      return { lines: lines.length, quarters: quarters.length };
    };
    expect(await recount()).toEqual({ lines: 2, quarters: expect.any(Number) });
    const ids = (await a.db.q<{ msg_id: string }>('SELECT msg_id FROM mensajes WHERE cliente_id IN ($1, $2) ORDER BY seq', [l.clienteId, l2.clienteId])).map(
      (r) => r.msg_id,
    );
    // One statement: every message gets a new attempt, and only some change state, to different states.
    await a.db.q(
      `UPDATE mensajes SET intentos = intentos + 1,
         estado = CASE WHEN msg_id = ANY($1::text[]) THEN 'enviado' WHEN msg_id = ANY($2::text[]) THEN 'error' ELSE estado END
       WHERE msg_id = ANY($3::text[])`,
      [[ids[0], ids[1], ids[7]], [ids[2], ids[8]], ids],
    );
    expect(await recount()).toMatchObject({ lines: 6 });
    // One that changes no estado leaves every count as it was.
    await a.db.q('UPDATE mensajes SET intentos = intentos + 1 WHERE msg_id = ANY($1::text[])', [ids]);
    expect(await recount()).toMatchObject({ lines: 6 });
    // Messages moving on from different states in one statement.
    await a.db.q("UPDATE mensajes SET estado = CASE estado WHEN 'enviado' THEN 'entregado' ELSE 'enviado' END WHERE msg_id = ANY($1::text[])", [
      [ids[0], ids[3], ids[9]],
    ]);
    expect(await recount()).toMatchObject({ lines: 7 });
    // Removed in one statement, across both clients.
    await a.db.q('DELETE FROM mensajes WHERE msg_id = ANY($1::text[])', [[ids[0], ids[2], ids[4], ids[8]]]);
    expect(await recount()).toMatchObject({ lines: 4 });
    const left = await a.db.one<{ n: number }>('SELECT COUNT(*)::int AS n FROM mensajes WHERE cliente_id IN ($1, $2)', [l.clienteId, l2.clienteId]);
    expect(left!.n).toBe(6);
  });

  it("a line's health check, a client's balance and a lease's rest update their rows in place: no row leaves its page (D-196)", async () => {
    // Enough of each for several full pages.
    const clientes: number[] = [];
    for (let i = 0; i < 150; i++) {
      const c = await a.createCliente(
        { nombre: `N${i}`, email: 'n@x.mx', plan: 'medido', estado: 'activo', max_celulares: null, saldo_global: 0, key_hash: `h${i}` },
        1,
      );
      clientes.push(c.id);
    }
    const ids: number[] = [];
    for (let i = 0; i < 200; i++) {
      const cel = await a.insertCelular(celular(clientes[0]!, `5255${String(10_000_000 + i)}`), 1);
      if (!cel.ok) throw new Error('insert');
      ids.push(cel.celular.id);
    }
    await a.db.query("UPDATE celulares SET last_status = 'connected', gateway_instancia = 'pasarela-' || id");
    const takePage = async () => (await a.leaseTakeLines('n', 'salud:', 0, 1000, 0, 1)).taken.length;
    expect(await takePage()).toBe(ids.length);
    // Packed as tables of that many rows would be after a while: every page filled to its fillfactor.
    for (const t of ['celulares', 'clientes', 'leases']) await a.db.query(`VACUUM FULL ${t}`);
    const pages = async () =>
      (
        await a.db.q<{ t: string; k: string; page: string }>(
          `SELECT 'c' AS t, id::text AS k, (ctid::text::point)[0]::text AS page FROM celulares UNION ALL
         SELECT 'k', id::text, (ctid::text::point)[0]::text FROM clientes UNION ALL
         SELECT 'l', stream, (ctid::text::point)[0]::text FROM leases ORDER BY 1, 2`,
        )
      ).map((r) => `${r.t}:${r.k}@${r.page}`);
    const before = await pages();
    // A health pass (every line's check, every lease's rest) and a balance change of a client in four: one new version a
    // row, so the room asked of a page does not depend on old versions being pruned (another test's snapshot may hold them).
    const checks = ids.map((id) => ({ id, status: 'connected' as const, estado: 'desconectado' as const, vinculado: 0, at: 10 }));
    expect(await a.recordStatusChecks(checks, 10)).toEqual([]);
    expect(await takePage()).toBe(ids.length);
    for (const id of clientes.filter((_, i) => i % 4 === 0))
      expect((await a.changeBalance({ cliente_id: id, celular_id: null, monto: 5, motivo: 'recarga', actor: 'op' }, 1)).ok).toBe(true);
    expect(await pages()).toEqual(before);
  });

  it('nodes starting together apply each migration once', async () => {
    const fresh = await pgSchema();
    try {
      const nodes = await Promise.all([1, 2, 3].map(() => openPg(fresh.schema)));
      const versions = await nodes[0]!.db.q<{ version: number }>('SELECT version FROM schema_migrations ORDER BY version');
      expect(versions.map((v) => v.version)).toEqual(PG_MIGRATIONS.map((m) => m.version));
      await Promise.all(nodes.map((n) => n.close()));
    } finally {
      await fresh.drop();
    }
  });
});

describe.skipIf(PG_ABSENT !== null)("postgres: pg's last statement and messages kept alive (an idle node's compiled code)", () => {
  it('a prepared statement, on the pool or in a transaction, is the one kept with the messages of its answer; its errors still reject', async () => {
    const s = await pgSchema();
    const store = await openPgStore(PG_URL, { schema: s.schema, max: 2 });
    try {
      const onPool = 'SELECT n FROM generate_series(1, $1::int) AS n';
      expect(await store.db.q(onPool, [3])).toEqual([{ n: 1 }, { n: 2 }, { n: 3 }]);
      expect(keptByPg().statement).toBeInstanceOf(pg.Query);
      expect(keptByPg().statement).toMatchObject({ text: onPool, values: [3] });
      expect(keptByPg().messages).toEqual(expect.arrayContaining(['rowDescription', 'dataRow', 'commandComplete', 'readyForQuery']));

      const inTx = 'SELECT $1::text || $2::text AS s';
      expect(await store.db.tx(async (c) => (await c.query(inTx, ['a', 'b'])).rows)).toEqual([{ s: 'ab' }]);
      expect(keptByPg().statement).toMatchObject({ text: inTx, values: ['a', 'b'] });

      const err = await store.db.tx((c) => c.query('SELECT $1::int AS n', ['not a number'])).catch((e: unknown) => e);
      expect(err).toMatchObject({ code: '22P02' }); // a statement's own error, as pg's promise gave it
      expect(await store.db.one<{ s: string }>(inTx, ['c', 'd'])).toEqual({ s: 'cd' });
    } finally {
      await store.close();
      await s.drop();
    }
  });
});

describe.skipIf(PG_ABSENT !== null)('postgres: a store that cannot be written', () => {
  it('a read-only server answers STORE_UNAVAILABLE naming the store without its password, until a probe write succeeds', async () => {
    const s = await pgSchema();
    const url = new URL(PG_URL);
    // With trust authentication any password is accepted: one is put in only to check it never shows.
    if (!url.password) url.password = 'secreto-de-prueba';
    const store = await openPgStore(url.toString(), { schema: s.schema, max: 1 });
    try {
      expect(await store.writeHealth()).toEqual({ writable: true });
      // Every connection of the pool, the one open and any opened later (pg drops a connection a failed query ran on), is made read-only.
      const readOnly = (c: { query(sql: string): unknown }) => void c.query('SET default_transaction_read_only = on');
      store.db.pool.on('connect', readOnly);
      await store.db.pool.query('SET default_transaction_read_only = on');
      const err = await store.kvSet('ns', 'k', 1).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(AppError);
      expect((err as AppError).row.texto).toBe('ALMACEN_NO_DISPONIBLE');
      expect((err as AppError).message).toContain('read-only (25006)');
      expect((err as AppError).message).toContain(`${url.hostname}:${url.port || 5432}${url.pathname}`);
      expect((err as AppError).message).not.toContain(url.password);
      const health = await store.writeHealth();
      expect(health).toMatchObject({ writable: false });
      expect(health.writable === false && health.reason).not.toContain(url.password);
      store.db.pool.off('connect', readOnly);
      await store.db.pool.query('SET default_transaction_read_only = off');
      expect(await store.writeHealth()).toEqual({ writable: true });
      await store.kvSet('ns', 'k', 1);
    } finally {
      await store.close();
      await s.drop();
    }
  });
});

describe.skipIf(PG_ABSENT !== null)('postgres: the narrow write set (migration 14)', () => {
  it('a store at version 13 with pending, sent and parked rows moves to the latest: the queue, the caps, the receipts, the recovery and the quarter-hour counts continue', async () => {
    const fresh = await pgSchema();
    const url = new URL(PG_URL);
    url.searchParams.set('options', `-c search_path=${fresh.schema}`);
    const old = new pg.Client({ connectionString: url.toString() });
    const now = Date.now();
    let store: PgStore | null = null;
    try {
      // Version 13, written as its code wrote it: the state in mensajes' own indexed columns.
      await old.connect();
      await old.query('CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)');
      for (const m of PG_MIGRATIONS.filter((m) => m.version <= 13)) {
        await old.query(m.sql);
        await old.query('INSERT INTO schema_migrations VALUES ($1, $2, 0)', [m.version, m.name]);
      }
      await old.query(
        "INSERT INTO clientes (id, nombre, email, estado, plan, key_hash, created_at, updated_at) VALUES (1, 'A', 'a@x.mx', 'activo', 'medido', 'h', 0, 0)",
      );
      await old.query(
        `INSERT INTO celulares (id, cliente_id, numero, estado, max_envios_por_minuto, max_envios_por_hora, hora_inicio_permitido, hora_fin_permitido,
           key_hash, created_at, updated_at, pendientes)
         VALUES (1, 1, '525512345678', 'activo', 3, 500, '00:00', '23:59', 'k', 0, 0, 3)`,
      );
      const msg = (id: string, modo: string, estado: string, extra: Record<string, unknown>) =>
        old.query(
          `INSERT INTO mensajes (msg_id, cliente_id, celular_id, destinatario, tipo, modo, estado, texto, payload, created_at, ${Object.keys(extra).join(', ')})
           VALUES ($1, 1, 1, '14155552671', 'texto', $2, $3, 'x', '{}', $4, ${Object.keys(extra)
             .map((_, i) => `$${i + 5}`)
             .join(', ')})`,
          [id, modo, estado, now - 60_000, ...Object.values(extra)],
        );
      // Sent a minute ago (a slot in the minute window), its delivery still to come; a direct send in flight; three queued,
      // the first claimed by a worker that died.
      await msg('sent', 'cola', 'enviado', { gateway_msg_id: 'G-old', enviado_at: now - 30_000, cupo_at: now - 30_000, intentos: 1 });
      await msg('direct', 'directo', 'pendiente', { cupo_at: now + 5_000 });
      await msg('q1', 'cola', 'pendiente', { lease_until: now + 5_000, cupo_at: now + 5_000 });
      await msg('q2', 'cola', 'pendiente', { intentos: 0 });
      await msg('q3', 'cola', 'pendiente', { intentos: 0 });
      // Sent two days ago: no window counts its slot any more.
      await msg('ancient', 'cola', 'leido', { gateway_msg_id: 'G-ancient', enviado_at: now - 2 * 86_400_000, cupo_at: now - 2 * 86_400_000 });
      // A receipt that came before the record of q1's send.
      await old.query("INSERT INTO acuses_pendientes (gateway_msg_id, estado, at, celular_id) VALUES ('G-q1', 'entregado', $1, 1)", [now - 1_000]);
      await old.end();

      store = await openPg(fresh.schema);
      const indexes = await store.db.q<{ n: string }>("SELECT indexname AS n FROM pg_indexes WHERE schemaname = $1 AND tablename = 'mensajes' ORDER BY 1", [
        fresh.schema,
      ]);
      expect(indexes.map((i) => i.n)).toEqual(['mensajes_cliente_celular_fecha', 'mensajes_cliente_dest_fecha', 'mensajes_cliente_fecha', 'mensajes_pkey']);
      expect(await store.queueDepth()).toEqual({ pending: 3, oldest_at: now - 60_000 });
      const slots = async () => (await store!.db.q<{ seq: number }>('SELECT seq FROM cupos ORDER BY seq')).map((k) => Number(k.seq));
      expect(await slots()).toEqual([1, 2, 3]);
      // The dead worker's claim is released at start; the line's head is then claimable.
      expect(await store.releaseLeases()).toBe(1);
      expect((await store.queueHeads()).map((m) => m.msg_id)).toEqual(['q1']);
      const caps = { max_envios_por_minuto: 3, max_envios_por_hora: 500, max_envios_por_dia: null };
      // Three a minute: the sent one and the direct one in flight hold two, so q1 takes the third and q2 is capped.
      expect(await store.claimQueued('q1', slotClaim(caps, now, 10_000), now)).toEqual({ ok: true });
      expect(await store.claimQueued('q2', slotClaim(caps, now, 10_000), now)).toMatchObject({ ok: false, reason: 'cap' });
      // q1's send is recorded: the parked delivery receipt is applied, and q2 heads the queue.
      expect((await store.markSent('q1', 'G-q1', now + 1))!.estado).toBe('entregado');
      expect((await store.queueHeads()).map((m) => m.msg_id)).toEqual(['q2']);
      // The receipt of the message sent before the migration finds it by its gateway id.
      expect(await store.receipt(1, 'G-old', 'leido', now + 2)).toMatchObject({ before: { estado: 'enviado' }, after: { estado: 'leido' } });
      expect((await store.getMensajeByGatewayId('G-old'))!.msg_id).toBe('sent');
      // The direct send is recovered once its slot ends, and fails back to its slot.
      expect((await store.strandedDirect(now + 5_001, 10)).map((m) => m.msg_id)).toEqual(['direct']);
      expect((await store.failMensaje('direct', 'lost', 'no_enviado', now + 6_000))!.estado).toBe('error');
      expect(await store.strandedDirect(Number.MAX_SAFE_INTEGER, 10)).toEqual([]);
      // A slot no window counts (left by a node that stopped) goes with the line's next send.
      await store.db.q('INSERT INTO cupos (seq, celular_id, cupo_at) VALUES (999, 1, $1)', [now - 2 * 86_400_000]);
      // Its slot given back, q2 takes it: the queue goes on in order.
      expect(await store.claimQueued('q2', slotClaim(caps, now + 6_000, 10_000), now + 6_000)).toEqual({ ok: true });
      expect((await store.markSent('q2', 'G-q2', now + 6_001))!.estado).toBe('enviado');
      expect((await store.queueHeads()).map((m) => m.msg_id)).toEqual(['q3']);
      expect(await slots()).toEqual([1, 3, 4]);
      expect(await store.queueDepth()).toMatchObject({ pending: 1 });
      expect((await store.db.one<{ pendientes: number }>('SELECT pendientes FROM celulares WHERE id = 1'))!.pendientes).toBe(1);
      // Totals still from the kept counts.
      expect((await store.listMensajes({ cliente_id: 1, page: 1, por_pagina: 10, estado: 'enviado' })).rows.map((m) => m.msg_id)).toEqual(['q2']);
      // Migration 15 counted the rows by quarter hour and estado, and every change since kept them (D-73).
      const byQuarter = (sql: string) =>
        store!.db.q<{ k: string }>(`SELECT cliente_id || ' ' || cuarto || ' ' || estado || ' ' || n AS k FROM (${sql}) x ORDER BY 1`);
      const kept = await byQuarter('SELECT cliente_id, cuarto, estado, n FROM conteos_cuartos WHERE n <> 0');
      expect(kept).toEqual(await byQuarter('SELECT cliente_id, created_at / 900000 AS cuarto, estado, COUNT(*) AS n FROM mensajes GROUP BY 1, 2, 3'));
      expect(kept.length).toBeGreaterThan(2);
      const day = Math.floor(now / 86_400_000) * 86_400_000;
      const today = { cliente_id: 1, page: 1, por_pagina: 10, desde: day, hasta: day + 86_400_000 };
      expect((await store.listMensajes({ ...today, estado: 'error' })).total).toBe(now - 60_000 >= day ? 1 : 0);
    } finally {
      await old.end().catch(() => undefined);
      await store?.close();
      await fresh.drop();
    }
  });
});
