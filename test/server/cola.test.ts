import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/core/time/clock.js';
import type { MessageStatusEvent } from '../../src/core/events/events.js';
import type { OutboundMessage } from '../../src/core/ports/gateway.js';
import type { SqliteStore } from '../../src/store/sqlite/store.js';
import type { PgStore } from '../../src/store/postgres/store.js';
import { pgSchema } from '../contract/adapters.js';
import { expectError, expectOk } from '../helpers/expect.js';
import { until } from '../helpers/poll.js';
import { api, startTestServer, type TestServer } from '../helpers/server.js';
import { describeWith, postgres, schemaUrl } from '../helpers/services.js';
import { admin, editCelular, linkedLine, mensaje, numeroNuevo, queueLinesExact, send, TEXT, uniqueText, waitEstado, type Line } from './send-helpers.js';

/**
 * The queue's actions over HTTP (issue 36): the listing with why each message
 * waits, cancel (refunded, exact against the worker's claim), retry (a new
 * send linked to the old one), and the bulk redelivery of failed webhook
 * deliveries; on SQLite and on PostgreSQL.
 */

const at = (h: number, m = 0) => Date.UTC(2026, 3, 1, h, m);

/** What a line may still spend: its own balance and its client's global one. */
async function credit(s: TestServer, line: Line): Promise<number> {
  return (await s.core.store.getCelular(line.celularId))!.saldo_actual + (await s.core.store.getCliente(line.clienteId))!.saldo_global;
}

/** Each balance equals the sum of its ledger rows: the client's global one and each line's. */
async function ledgerAddsUp(s: TestServer, clienteId: number, lineIds: number[]): Promise<void> {
  const sql = 'SELECT celular_id, SUM(monto) AS total FROM movimientos_saldo WHERE cliente_id = $1 GROUP BY celular_id';
  const store = s.core.store as unknown as Partial<SqliteStore & PgStore>;
  const sums: Array<{ celular_id: number | null; total: number }> =
    s.core.store.caps.name === 'postgres'
      ? await (store as PgStore).db.q(sql, [clienteId])
      : ((store as SqliteStore).db.prepare(sql.replace('$1', '?')).all(clienteId) as Array<{ celular_id: number | null; total: number }>);
  const total = (id: number | null) => Number(sums.find((r) => r.celular_id === id)?.total ?? 0);
  expect(total(null)).toBe((await s.core.store.getCliente(clienteId))!.saldo_global);
  for (const id of lineIds) expect(total(id)).toBe((await s.core.store.getCelular(id))!.saldo_actual);
}

/** Runs SQL on the server's store (tests only: to make deliveries failed without waiting out their retries). */
async function exec(s: TestServer, sql: string, params: unknown[]): Promise<void> {
  if (s.core.store.caps.name === 'postgres') await (s.core.store as unknown as PgStore).db.q(sql, params);
  else (s.core.store as unknown as SqliteStore).db.prepare(sql.replace(/\$\d+/g, '?')).run(...params);
}

function suite(label: string, over: () => Promise<{ store?: string; drop?: () => Promise<void> }>) {
  let s: TestServer;
  let a: Line;
  let drop: (() => Promise<void>) | undefined;
  const events: MessageStatusEvent[] = [];
  const sent: string[] = [];
  /** While set, the gateway's sends wait for it: a send in flight the test holds. */
  let gate: Promise<void> | null = null;

  beforeAll(async () => {
    const o = await over();
    drop = o.drop;
    s = await startTestServer({
      ...(o.store ? { store: o.store } : {}),
      tz: 'UTC',
      allowPrivateUrls: true,
      clock: new ManualClock(at(12)),
      queue: { gapMinMs: 0, gapMaxMs: 0 },
    });
    s.core.bus.subscribe('message.status', (e) => events.push(e));
    const gw = s.core.gateway;
    const orig = gw.send.bind(gw);
    gw.send = async (instancia: string, msg: OutboundMessage) => {
      if (gate) await gate;
      sent.push(msg.msgId);
      return orig(instancia, msg);
    };
    a = await linkedLine(s, { saldo: 10 });
  });
  afterAll(async () => {
    await s?.stop();
    await drop?.();
  });

  const cola = (key: string, q = '') => api(s.url, 'GET', `/api/cola.php${q}`, { key });
  const cancel = (key: string, json: unknown) => api(s.url, 'POST', '/api/cola_cancelar.php', { key, json });
  const retry = (key: string, msg_ids: string[]) => api(s.url, 'POST', '/api/mensaje_reintentar.php', { key, json: { msg_ids } });
  const queueOn = async (line: Line, n: number): Promise<string[]> => {
    const ids: string[] = [];
    for (let i = 0; i < n; i++) {
      const r = await send(s, line, TEXT, { destinatario: numeroNuevo(), mensaje: uniqueText('cola') });
      expectOk(r);
      ids.push(r.body.msg_id as string);
    }
    return ids;
  };

  describe(`the queue's actions (${label})`, () => {
    it('every new statement is served by an index (PostgreSQL: the plans with sequential scans off)', async () => {
      if (s.core.store.caps.name !== 'postgres') return;
      const db = (s.core.store as unknown as PgStore).db;
      const seen: Array<{ sql: string; params: unknown[] }> = [];
      const q = db.q.bind(db);
      db.q = async (sql: string, params: unknown[] = []) => {
        if (
          /LATERAL \(SELECT seq, msg_id FROM mensajes_pendientes|entrega = 'fallido'|FROM cupos WHERE celular_id = \$1 AND cupo_at <=|pendientes FROM celulares/.test(
            sql,
          )
        )
          seen.push({ sql, params });
        return q(sql, params);
      };
      try {
        const b = await linkedLine(s, { saldo: 5 });
        await queueOn(b, 1);
        await cola(b.clientKey, `?celular_id=${b.celularId}`);
        await api(s.url, 'POST', '/api/webhook_reenviar_fallidas.php', { key: b.clientKey });
        await cancel(b.clientKey, { celular_id: b.celularId, todos: 1 });
      } finally {
        db.q = q;
      }
      expect(seen.length).toBeGreaterThanOrEqual(4);
      const scans: string[] = [];
      await db.tx(async (c) => {
        await c.query('SET LOCAL enable_seqscan = off');
        for (const { sql, params } of seen) {
          const plan = JSON.stringify((await c.query(`EXPLAIN (FORMAT JSON) ${sql}`, params)).rows[0]['QUERY PLAN']);
          if (plan.includes('Seq Scan')) scans.push(sql);
        }
      });
      expect(scans).toEqual([]);
    });

    it('lists a closed line in order, each with why it waits; keyset pages; scope', async () => {
      const b = await linkedLine(s, { saldo: 10 });
      await editCelular(s, b, { hora_inicio_permitido: '00:00', hora_fin_permitido: '01:00' });
      const ids = await queueOn(b, 3);
      await s.stepQueue();
      const r = await cola(b.clientKey, `?celular_id=${b.celularId}&por_pagina=2`);
      expectOk(r);
      expect(r.body.total).toBe(3);
      expect(r.body.mensajes.map((m: { msg_id: string }) => m.msg_id)).toEqual(ids.slice(0, 2));
      expect(r.body.mensajes[0]).toMatchObject({ motivo: 'fuera_de_horario', due_at: '2026-04-02T00:00:00.000Z', celular_id: b.celularId, tipo: 'texto' });
      expect(r.body.mensajes[1].motivo).toBe('en_turno');
      const next = await cola(b.clientKey, `?celular_id=${b.celularId}&por_pagina=2&despues=${r.body.siguiente}`);
      expect(next.body.mensajes.map((m: { msg_id: string }) => m.msg_id)).toEqual([ids[2]]);
      expect(next.body.mensajes[0].motivo).toBe('en_turno');
      expect(next.body.siguiente).toBeNull();
      // The line's own key sees its line; the client's key without a line lists every line.
      expect((await cola(b.celularKey)).body.total).toBe(3);
      expect((await cola(b.clientKey)).body.mensajes).toHaveLength(3);
      // Another client's line is 404; a bad page size 400.
      expectError(await cola(a.clientKey, `?celular_id=${b.celularId}`), 404, 600);
      expectError(await cola(b.clientKey, '?por_pagina=501'), 400, 100);
      // A suspended line says so.
      await editCelular(s, b, { estado: 'suspendido' });
      const off = await cola(b.clientKey, `?celular_id=${b.celularId}`);
      expect(off.body.mensajes[0]).toMatchObject({ motivo: 'desconectado', due_at: null });
      const done = await cancel(b.clientKey, { celular_id: b.celularId, todos: 1 });
      expect(done.body.cancelados).toBe(3);
      queueLinesExact(s);
    });

    it('cancels a selection: error with class cancelado, refunded, its event sent, the ledger adds up', async () => {
      const b = await linkedLine(s, { saldo: 10 });
      await editCelular(s, b, { hora_inicio_permitido: '00:00', hora_fin_permitido: '01:00' });
      const ids = await queueOn(b, 3);
      expect(await credit(s, b)).toBe(7);
      const r = await cancel(b.clientKey, { msg_ids: [ids[0], ids[2], 'no-such-id'] });
      expectOk(r);
      expect(r.body).toMatchObject({ cancelados: 2, no_cancelados: 1, reembolso: 2 });
      expect(r.body.resultados).toEqual([
        { msg_id: ids[0], resultado: 'cancelado', reembolso: 1 },
        { msg_id: ids[2], resultado: 'cancelado', reembolso: 1 },
        { msg_id: 'no-such-id', resultado: 'no_encontrado', reembolso: 0 },
      ]);
      const m = await mensaje(s, ids[0]!);
      expect(m).toMatchObject({ estado: 'error', error_clase: 'cancelado', cobrado: 0 });
      expect(events.some((e) => e.msg_id === ids[0] && e.estado === 'error')).toBe(true);
      expect(await credit(s, b)).toBe(9);
      await ledgerAddsUp(s, b.clienteId, [b.celularId]);
      // Cancelling again: no longer pending, nothing refunded twice.
      const again = await cancel(b.clientKey, { msg_ids: [ids[0]] });
      expect(again.body.resultados[0]).toMatchObject({ resultado: 'no_pendiente', reembolso: 0 });
      // Another client's key cannot cancel it (no_encontrado, nothing said about it).
      const foreign = await cancel(a.clientKey, { msg_ids: [ids[1]] });
      expect(foreign.body.resultados[0].resultado).toBe('no_encontrado');
      expect((await mensaje(s, ids[1]!)).estado).toBe('pendiente');
      // The audit names the action and its counts.
      const audit = await admin(s, 'GET', `/admin/auditoria?cliente_id=${b.clienteId}`);
      expect(JSON.stringify(audit.body)).toContain('mensaje.cancelar');
      // Bad input: neither ids nor a line; todos without a line; too many ids.
      expectError(await cancel(b.clientKey, {}), 400, 100);
      expectError(await cancel(b.clientKey, { todos: 1 }), 400, 100);
      expectError(await cancel(b.clientKey, { celular_id: b.celularId }), 400, 100);
      expectError(await cancel(b.clientKey, { msg_ids: Array.from({ length: 501 }, (_, i) => `x${i}`) }), 400, 100);
      await cancel(b.clientKey, { celular_id: b.celularId, todos: 1 });
    });

    it('cancels all of a line, only that line, and the ledger adds up', async () => {
      const b = await linkedLine(s, { saldo: 20 });
      await editCelular(s, b, { hora_inicio_permitido: '00:00', hora_fin_permitido: '01:00' });
      const c = await linkedLine(s, { saldo: 5 });
      await editCelular(s, c, { hora_inicio_permitido: '00:00', hora_fin_permitido: '01:00' });
      const ids = await queueOn(b, 12);
      const keep = await queueOn(c, 1);
      const r = await cancel(b.celularKey, { celular_id: b.celularId, todos: '1' });
      expectOk(r);
      expect(r.body).toMatchObject({ cancelados: 12, no_cancelados: 0, reembolso: 12 });
      for (const id of ids) expect((await mensaje(s, id)).error_clase).toBe('cancelado');
      expect((await mensaje(s, keep[0]!)).estado).toBe('pendiente');
      expect((await cola(b.clientKey, `?celular_id=${b.celularId}`)).body.total).toBe(0);
      expect(await credit(s, b)).toBe(20);
      await ledgerAddsUp(s, b.clienteId, [b.celularId]);
      // A celular key cannot cancel a line of another client.
      expectError(await cancel(b.celularKey, { celular_id: c.celularId, todos: 1 }), 404, 600);
      await cancel(c.clientKey, { celular_id: c.celularId, todos: 1 });
    });

    it('a message being sent is not cancelled (enviando); it is sent', async () => {
      let open!: () => void;
      gate = new Promise<void>((r) => (open = r));
      const [id] = await queueOn(a, 1);
      const step = s.stepQueue();
      await until(async () => (await mensaje(s, id!)).lease_until !== null, { what: 'the claim' });
      const r = await cancel(a.clientKey, { msg_ids: [id] });
      expect(r.body.resultados[0]).toMatchObject({ resultado: 'enviando', reembolso: 0 });
      const listed = await cola(a.clientKey, `?celular_id=${a.celularId}`);
      expect(listed.body.mensajes[0]).toMatchObject({ msg_id: id, motivo: 'enviando' });
      gate = null;
      open();
      await step;
      await waitEstado(s, id!, ['enviado', 'entregado', 'leido']);
      expect(sent).toContain(id);
    });

    it('cancels racing the worker: each message either sent or cancelled, never both, and the ledger adds up', async () => {
      const b = await linkedLine(s, { saldo: 40 });
      const ids = await queueOn(b, 30);
      // The worker sends while the cancels arrive one by one.
      const stepping = (async () => {
        for (let i = 0; i < 40; i++) await s.stepQueue();
      })();
      const outcomes = new Map<string, string>();
      for (const id of ids.reverse()) {
        const r = await cancel(b.clientKey, { msg_ids: [id] });
        outcomes.set(id, r.body.resultados[0].resultado);
      }
      await stepping;
      for (let i = 0; i < 40 && (await cola(b.clientKey, `?celular_id=${b.celularId}`)).body.total > 0; i++) await s.stepQueue();
      let cancelled = 0;
      for (const id of ids) {
        const m = await mensaje(s, id);
        if (outcomes.get(id) === 'cancelado') {
          cancelled++;
          expect(m.error_clase, id).toBe('cancelado');
          expect(sent, id).not.toContain(id);
        } else {
          expect(['enviando', 'no_pendiente'], id).toContain(outcomes.get(id));
          expect(m.estado, id).not.toBe('error');
          expect(sent, id).toContain(id);
        }
      }
      expect(cancelled).toBeGreaterThan(0);
      expect(await credit(s, b)).toBe(40 - (30 - cancelled));
      await ledgerAddsUp(s, b.clienteId, [b.celularId]);
    });

    it('retries a cancelled message: a new send linked to the old one, charged; again answers the same; refusals', async () => {
      const b = await linkedLine(s, { saldo: 2 });
      await editCelular(s, b, { hora_inicio_permitido: '00:00', hora_fin_permitido: '01:00' });
      const [id, id2] = await queueOn(b, 2);
      await cancel(b.clientKey, { msg_ids: [id, id2] });
      // A pending message is not retried.
      const [pending] = await queueOn(b, 1);
      expectError(await retry(b.clientKey, [pending!]), 409, 630);
      const r = await retry(b.celularKey, [id!]);
      expectOk(r);
      expect(r.body.reintentados).toBe(1);
      const nuevo = r.body.resultados[0].nuevo_msg_id as string;
      expect(nuevo).not.toBe(id);
      const m = await mensaje(s, nuevo);
      expect(m).toMatchObject({ estado: 'pendiente', reintento_de: id, destinatario: (await mensaje(s, id!)).destinatario, cobrado: 1 });
      const seen = await api(s.url, 'GET', `/api/mensaje.php?msg_id=${nuevo}`, { key: b.clientKey });
      expect(seen.body.mensaje.reintento_de).toBe(id);
      // The same message retried again: the same new message, not a second send.
      const twice = await retry(b.clientKey, [id!]);
      expect(twice.body.resultados[0].nuevo_msg_id).toBe(nuevo);
      expect(await credit(s, b)).toBe(0);
      // The balance is short: the refusal says so.
      expectError(await retry(b.clientKey, [id2!]), 402);
      // Several: each its outcome.
      const many = await retry(b.clientKey, [id2!, 'nope']);
      expectOk(many);
      expect(many.body).toMatchObject({ reintentados: 0, rechazados: 2 });
      expect(many.body.resultados[1]).toMatchObject({ msg_id: 'nope', api_codigo: 611 });
      await ledgerAddsUp(s, b.clienteId, [b.celularId]);
      await cancel(b.clientKey, { celular_id: b.celularId, todos: 1 });
    });

    it('refuses to retry a message refused for good (rechazado)', async () => {
      const dead = numeroNuevo();
      expectOk(await admin(s, 'POST', '/admin/sim/fail', { numero: dead, motivo: 'not on the network' }));
      const r = await send(s, a, TEXT, { destinatario: dead, mensaje: 'nunca', directo: 1 });
      const id = /msg_id ([0-9a-f-]{36})/.exec(r.body.error)![1]!;
      const refused = await retry(a.clientKey, [id]);
      expectError(refused, 409, 630);
      expect(refused.body.error).toContain('refused it for good');
    });

    it('redelivers every failed delivery of a filter at once, a batch at a time', async () => {
      const b = await linkedLine(s, { saldo: 10 });
      expectOk(await api(s.url, 'POST', '/api/webhook.php', { key: b.clientKey, json: { url: 'http://127.0.0.1:9/hook', eventos: 'all' } }));
      for (let i = 0; i < 3; i++) expectOk(await api(s.url, 'POST', '/api/webhook_test.php', { key: b.clientKey }));
      // Dropping the claim too: an attempt in flight must not write its retry over 'fallido'.
      await exec(s, "UPDATE eventos SET entrega = 'fallido', reclamo = NULL, reclamo_hasta = NULL WHERE cliente_id = $1 AND entrega IS NOT NULL", [
        b.clienteId,
      ]);
      const first = await api(s.url, 'POST', '/api/webhook_reenviar_fallidas.php', { key: b.clientKey, json: { limit: 2 } });
      expectOk(first);
      expect(first.body).toMatchObject({ reprogramadas: 2, quedan: true });
      const rest = await api(s.url, 'POST', '/api/webhook_reenviar_fallidas.php?estado=fallido', { key: b.clientKey });
      expect(rest.body).toMatchObject({ reprogramadas: 1, quedan: false });
      const list = await api(s.url, 'GET', '/api/webhook_entregas.php', { key: b.clientKey });
      expect(list.body.entregas.filter((e: { estado: string }) => e.estado === 'fallido')).toHaveLength(0);
      expectError(await api(s.url, 'POST', '/api/webhook_reenviar_fallidas.php', { key: b.clientKey, json: { estado: 'entregado' } }), 400, 100);
      expectError(await api(s.url, 'POST', '/api/webhook_reenviar_fallidas.php', { key: b.celularKey }), 403);
      const audit = await admin(s, 'GET', `/admin/auditoria?cliente_id=${b.clienteId}`);
      expect(JSON.stringify(audit.body)).toContain('webhook.reentregar_fallidas');
    });
  });
}

suite('SQLite', async () => ({}));

describeWith(postgres, 'the queue on PostgreSQL', () => {
  suite('PostgreSQL', async () => {
    const schema = await pgSchema();
    return { store: schemaUrl(schema.schema), drop: schema.drop };
  });
});
