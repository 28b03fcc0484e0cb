import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rmSync } from 'node:fs';
import { ManualClock } from '../../src/core/time/clock.js';
import { GatewayFailure, type OutboundMessage } from '../../src/core/ports/gateway.js';
import type { SqliteStore } from '../../src/store/sqlite/store.js';
import type { PgStore } from '../../src/store/postgres/store.js';
import { pgSchema } from '../contract/adapters.js';
import { expectError, expectOk } from '../helpers/expect.js';
import { api, startTestServer, tempDir, type TestServer } from '../helpers/server.js';
import { describeWith, postgres, schemaUrl } from '../helpers/services.js';
import { type Line, linkedLine, mensaje, numeroNuevo, queueLinesExact, send, TEXT, uniqueText, waitEstado } from './send-helpers.js';

/**
 * Scheduled sends (`enviar_en`, docs/scheduling.md, D-162) and no head-of-line
 * blocking (D-163) over HTTP, on SQLite and PostgreSQL: sent at its time and not
 * before, also after a restart on the same store; cancelled with its refund; a
 * retrying message holds back only its own recipient's; bad values refused.
 */

const T0 = Date.UTC(2026, 3, 1, 12);
const MIN = 60_000;
const HOUR = 60 * MIN;
const iso = (ms: number) => new Date(ms).toISOString();
const SENT = ['enviado', 'entregado', 'leido'];

/** Each balance equals the sum of its ledger rows: the client's global one and the line's. */
async function ledgerAddsUp(s: TestServer, line: Line): Promise<void> {
  const sql = 'SELECT celular_id, SUM(monto) AS total FROM movimientos_saldo WHERE cliente_id = $1 GROUP BY celular_id';
  const store = s.core.store as unknown as Partial<SqliteStore & PgStore>;
  const sums: Array<{ celular_id: number | null; total: number }> =
    s.core.store.caps.name === 'postgres'
      ? await (store as PgStore).db.q(sql, [line.clienteId])
      : ((store as SqliteStore).db.prepare(sql.replace('$1', '?')).all(line.clienteId) as Array<{ celular_id: number | null; total: number }>);
  const total = (id: number | null) => Number(sums.find((r) => r.celular_id === id)?.total ?? 0);
  expect(total(null)).toBe((await s.core.store.getCliente(line.clienteId))!.saldo_global);
  expect(total(line.celularId)).toBe((await s.core.store.getCelular(line.celularId))!.saldo_actual);
}

async function credit(s: TestServer, line: Line): Promise<number> {
  return (await s.core.store.getCelular(line.celularId))!.saldo_actual + (await s.core.store.getCliente(line.clienteId))!.saldo_global;
}

function suite(label: string, over: () => Promise<{ store?: string; drop?: () => Promise<void> }>) {
  let s: TestServer;
  let store: string | undefined;
  let drop: (() => Promise<void>) | undefined;
  const dataDir = tempDir('pasarela-schedule-');
  /** Recipients whose next sends fail as transient (gateway down). */
  const failing = new Map<string, number>();
  const sent: string[] = [];
  const clock = () => s.clock as ManualClock;

  const start = async (now: number) => {
    s = await startTestServer({
      ...(store ? { store } : {}),
      dataDir,
      tz: 'UTC',
      clock: new ManualClock(now),
      queue: { gapMinMs: 0, gapMaxMs: 0, ttlMs: HOUR },
    });
    const gw = s.core.gateway;
    const orig = gw.send.bind(gw);
    gw.send = async (instancia: string, msg: OutboundMessage) => {
      const n = failing.get(msg.destinatario) ?? 0;
      if (n > 0) {
        failing.set(msg.destinatario, n - 1);
        throw new GatewayFailure('gateway timeout', 'transient');
      }
      sent.push(msg.msgId);
      return orig(instancia, msg);
    };
  };

  beforeAll(async () => {
    const o = await over();
    store = o.store;
    drop = o.drop;
    await start(T0);
  });
  afterAll(async () => {
    await s?.stop();
    await drop?.();
    rmSync(dataDir, { recursive: true, force: true });
  });

  describe(`scheduled sends (${label})`, () => {
    let a: Line;
    beforeAll(async () => {
      a = await linkedLine(s, { saldo: 20 });
    });

    it('refuses a malformed instant, one more than 30 days ahead, and one with directo=1 (400, saying why); JSON and form alike', async () => {
      const base = { destinatario: numeroNuevo(), mensaje: uniqueText('mal') };
      for (const bad of ['mañana', '2026-04-01 12:00', '2026-04-31T10:00:00Z', '2026-04-01T25:00:00Z', '1711960000']) {
        const r = await send(s, a, TEXT, { ...base, enviar_en: bad });
        expectError(r, 400, 100);
        expect(r.body.error).toMatch(/enviar_en must be an RFC 3339 instant/);
        expect((await send(s, a, TEXT, { ...base, enviar_en: bad }, { form: true })).status).toBe(400);
      }
      const far = await send(s, a, TEXT, { ...base, enviar_en: iso(clock().now() + 30 * 24 * HOUR + 1000) });
      expectError(far, 400, 100);
      expect(far.body.error).toMatch(/at most 30 days ahead/);
      const direct = await send(s, a, TEXT, { ...base, enviar_en: iso(clock().now() + HOUR), directo: 1 });
      expectError(direct, 400, 100);
      expect(direct.body.error).toMatch(/cannot go with directo=1/);
      // Nothing was accepted nor charged.
      const h = await api(s.url, 'GET', '/api/historial_listar.php', { key: a.celularKey });
      expect(h.body.mensajes.filter((m: { destinatario: string }) => m.destinatario === base.destinatario)).toEqual([]);
    });

    it('an instant in the past or now is sent as soon as possible (no enviar_en kept)', async () => {
      const r = await send(s, a, TEXT, { destinatario: numeroNuevo(), mensaje: uniqueText('ya'), enviar_en: iso(clock().now() - HOUR) });
      expectOk(r, { modo: 'cola' });
      expect(r.body.enviar_en).toBeUndefined();
      await s.stepQueue();
      expect((await waitEstado(s, r.body.msg_id, SENT)).enviar_en ?? null).toBeNull();
    });

    it('stays pendiente with its due time visible, charged at acceptance; sent at its time, not before, also after a restart', async () => {
      const before = await credit(s, a);
      const due = clock().now() + 2 * HOUR;
      const r = await send(s, a, TEXT, { destinatario: numeroNuevo(), mensaje: uniqueText('recordatorio'), enviar_en: iso(due) }, { form: true });
      expectOk(r, { modo: 'cola' });
      expect(r.body.enviar_en).toBe(iso(due));
      const id = r.body.msg_id as string;
      expect(await credit(s, a)).toBe(before - 1);
      // Its queue TTL counts from its due time.
      expect((await mensaje(s, id)).expira_at).toBe(due + HOUR);
      // A message accepted after it, due now, is not held back by it.
      const now = await send(s, a, TEXT, { destinatario: numeroNuevo(), mensaje: uniqueText('ahora') });
      await s.stepQueue();
      await waitEstado(s, now.body.msg_id, SENT);

      const view = await api(s.url, 'GET', `/api/mensaje.php?msg_id=${id}`, { key: a.celularKey });
      expect(view.status, view.text).toBe(200);
      expect(view.body.mensaje).toMatchObject({ estado: 'pendiente', enviar_en: iso(due) });
      const cola = await api(s.url, 'GET', '/api/cola.php', { key: a.celularKey });
      expect(cola.body.mensajes).toEqual([expect.objectContaining({ msg_id: id, enviar_en: iso(due), motivo: 'programado', due_at: iso(due) })]);
      const h = await api(s.url, 'GET', '/api/historial_listar.php?estado=pendiente', { key: a.celularKey });
      expect(h.body.mensajes).toEqual([expect.objectContaining({ msg_id: id, enviar_en: iso(due) })]);

      clock().set(due - 1000);
      await s.stepQueue();
      expect((await mensaje(s, id)).estado).toBe('pendiente');
      expect(sent).not.toContain(id);

      // The server stops and starts again on the same store, a second before the due time.
      await s.close();
      await start(due - 1000);
      await s.stepQueue();
      expect((await mensaje(s, id)).estado).toBe('pendiente');
      clock().set(due);
      await s.stepQueue();
      const m = await waitEstado(s, id, SENT);
      expect(m).toMatchObject({ intentos: 1, cobrado: 1, enviar_en: due });
      expect(m.enviado_at).toBeGreaterThanOrEqual(due);
      await ledgerAddsUp(s, a);
    });

    it('cancelled before its time with its refund: the ledger equals the balances', async () => {
      const before = await credit(s, a);
      const due = clock().now() + 24 * HOUR;
      const r = await send(s, a, TEXT, { destinatario: numeroNuevo(), mensaje: uniqueText('cancelar'), enviar_en: iso(due) });
      expectOk(r);
      expect(await credit(s, a)).toBe(before - 1);
      const c = await api(s.url, 'POST', '/api/cola_cancelar.php', { key: a.celularKey, json: { msg_ids: [r.body.msg_id] } });
      expect(c.status, c.text).toBe(200);
      expect(c.body.resultados).toEqual([expect.objectContaining({ msg_id: r.body.msg_id, resultado: 'cancelado' })]);
      expect(await mensaje(s, r.body.msg_id)).toMatchObject({ estado: 'error', error_clase: 'cancelado', cobrado: 0 });
      expect(await credit(s, a)).toBe(before);
      await ledgerAddsUp(s, a);
      clock().set(due + MIN);
      await s.stepQueue();
      expect(sent).not.toContain(r.body.msg_id);
    });

    it("the line's hours apply when it is due: it waits for them to open", async () => {
      const l = await linkedLine(s, { saldo: 5 });
      const day = Math.floor(clock().now() / (24 * HOUR)) * 24 * HOUR + 24 * HOUR;
      const e = await api(s.url, 'POST', `/api/celular_editar.php?id=${l.celularId}`, {
        key: l.clientKey,
        json: { hora_inicio_permitido: '09:00', hora_fin_permitido: '18:00' },
      });
      expect(e.status, e.text).toBe(200);
      // Due at 20:00 the next day, outside 09-18: it goes at 09:00 the day after (its TTL counts from 20:00, and is an hour).
      const r = await send(s, l, TEXT, { destinatario: numeroNuevo(), mensaje: uniqueText('horas'), enviar_en: iso(day + 20 * HOUR) });
      expectOk(r, { modo: 'cola' });
      expect(r.body).toMatchObject({ enviar_en: iso(day + 20 * HOUR), envio_desde: iso(day + 33 * HOUR) });
    });
  });

  describe(`no head-of-line blocking (${label})`, () => {
    it('a retrying message does not hold back a newer one to another recipient; a newer one to the same recipient waits', async () => {
      const l = await linkedLine(s, { saldo: 10 });
      const A = numeroNuevo();
      const B = numeroNuevo();
      failing.set(A, 1);
      const a1 = await send(s, l, TEXT, { destinatario: A, mensaje: uniqueText('a1') });
      await s.stepQueue();
      const m1 = await mensaje(s, a1.body.msg_id);
      expect(m1).toMatchObject({ estado: 'pendiente', intentos: 1, error: 'gateway timeout' });
      const retryAt = m1.proximo_intento_at!;
      expect(retryAt).toBeGreaterThan(clock().now());
      const a2 = await send(s, l, TEXT, { destinatario: A, mensaje: uniqueText('a2') });
      const b1 = await send(s, l, TEXT, { destinatario: B, mensaje: uniqueText('b1') });
      await s.stepQueue();
      await s.stepQueue();
      await waitEstado(s, b1.body.msg_id, SENT);
      expect((await mensaje(s, a1.body.msg_id)).estado).toBe('pendiente');
      expect((await mensaje(s, a2.body.msg_id)).estado).toBe('pendiente');
      // A scheduled message ahead of them holds back nothing either.
      const later = await send(s, l, TEXT, { destinatario: numeroNuevo(), mensaje: uniqueText('luego'), enviar_en: iso(clock().now() + HOUR) });
      const b2 = await send(s, l, TEXT, { destinatario: B, mensaje: uniqueText('b2') });
      await s.stepQueue();
      await waitEstado(s, b2.body.msg_id, SENT);

      clock().set(retryAt);
      await s.stepQueue();
      await waitEstado(s, a1.body.msg_id, SENT);
      await s.stepQueue();
      await waitEstado(s, a2.body.msg_id, SENT);
      // Per recipient, in order.
      expect(sent.indexOf(a1.body.msg_id)).toBeLessThan(sent.indexOf(a2.body.msg_id));
      expect((await mensaje(s, later.body.msg_id)).estado).toBe('pendiente');
    });

    it('a scheduled message that failed at its time and waits for a retry still holds back newer ones to its recipient', async () => {
      const l = await linkedLine(s, { saldo: 10 });
      const X = numeroNuevo();
      const rem = await send(s, l, TEXT, { destinatario: X, mensaje: uniqueText('recordatorio'), enviar_en: iso(clock().now() + MIN) });
      failing.set(X, 1);
      clock().set(clock().now() + MIN);
      await s.stepQueue();
      const m = await mensaje(s, rem.body.msg_id);
      expect(m).toMatchObject({ estado: 'pendiente', intentos: 1 });
      expect(m.proximo_intento_at!).toBeGreaterThan(clock().now());
      queueLinesExact(s);
      // Its line's next deferred time is ahead now, yet the claimed reminder is its recipient's oldest (D-187).
      const newer = await send(s, l, TEXT, { destinatario: X, mensaje: uniqueText('despues') });
      await s.stepQueue();
      await s.stepQueue();
      expect((await mensaje(s, newer.body.msg_id)).estado).toBe('pendiente');
      queueLinesExact(s);
      clock().set(m.proximo_intento_at!);
      await s.stepQueue();
      await waitEstado(s, rem.body.msg_id, SENT);
      await s.stepQueue();
      await waitEstado(s, newer.body.msg_id, SENT);
      expect(sent.indexOf(rem.body.msg_id)).toBeLessThan(sent.indexOf(newer.body.msg_id));
      queueLinesExact(s);
    });

    it("a reminder scheduled for later holds back no code to the same recipient now; once due, it waits for that recipient's older ones", async () => {
      const l = await linkedLine(s, { saldo: 10 });
      const X = numeroNuevo();
      const reminder = await send(s, l, TEXT, { destinatario: X, mensaje: uniqueText('recordatorio'), enviar_en: iso(clock().now() + 10 * MIN) });
      const code = await send(s, l, TEXT, { destinatario: X, mensaje: uniqueText('codigo'), vigencia: 300 });
      await s.stepQueue();
      await waitEstado(s, code.body.msg_id, SENT);
      expect((await mensaje(s, reminder.body.msg_id)).estado).toBe('pendiente');
      // Due now, behind a message to X that is retrying: it waits for that one (order among the due ones).
      failing.set(X, 1);
      const older = await send(s, l, TEXT, { destinatario: X, mensaje: uniqueText('antes') });
      await s.stepQueue();
      const m = await mensaje(s, older.body.msg_id);
      expect(m).toMatchObject({ estado: 'pendiente', intentos: 1 });
      clock().set(clock().now() + 10 * MIN);
      expect(m.proximo_intento_at!).toBeLessThan(clock().now());
      await s.stepQueue();
      await s.stepQueue();
      await waitEstado(s, older.body.msg_id, SENT);
      await waitEstado(s, reminder.body.msg_id, SENT);
      // The reminder was accepted first: once due it went before the one that had been retrying.
      expect(sent.indexOf(reminder.body.msg_id)).toBeLessThan(sent.indexOf(older.body.msg_id));
    });
  });
}

suite('SQLite', async () => ({}));

describeWith(postgres, 'scheduled sends on PostgreSQL', () => {
  suite('PostgreSQL', async () => {
    const schema = await pgSchema();
    return { store: schemaUrl(schema.schema), drop: schema.drop };
  });
});

describeWith(postgres, 'per-recipient order across two nodes (PostgreSQL)', () => {
  it("two nodes' workers racing on one line send each recipient's messages once and in their order; a scheduled one waits", async () => {
    const schema = await pgSchema();
    const clock = new ManualClock(T0);
    const opts = { store: schemaUrl(schema.schema), tz: 'UTC', clock, queue: { gapMinMs: 0, gapMaxMs: 0 } };
    const n1 = await startTestServer(opts);
    const n2 = await startTestServer({ ...opts, dataDir: tempDir() });
    const sent: string[] = [];
    for (const n of [n1, n2]) {
      const orig = n.core.gateway.send.bind(n.core.gateway);
      n.core.gateway.send = async (instancia: string, msg: OutboundMessage) => {
        sent.push(msg.msgId);
        return orig(instancia, msg);
      };
    }
    try {
      const l = await linkedLine(n1, { saldo: 100 });
      expectOk(await api(n1.url, 'POST', `/api/celular_editar.php?id=${l.celularId}`, { key: l.clientKey, json: { max_envios_por_minuto: 1000 } }));
      const recipients = [numeroNuevo(), numeroNuevo(), numeroNuevo()];
      const order = new Map<string, string[]>(recipients.map((r) => [r, []]));
      // A scheduled message to the first recipient, accepted first: until its time it holds back none of theirs (D-181).
      const later = await send(n1, l, TEXT, { destinatario: recipients[0], mensaje: uniqueText('luego'), enviar_en: iso(T0 + HOUR) });
      for (let i = 0; i < 24; i++) {
        const to = recipients[i % 3]!;
        const r = await send(i % 2 ? n2 : n1, l, TEXT, { destinatario: to, mensaje: uniqueText(`m${i}`) });
        expectOk(r, { modo: 'cola' });
        order.get(to)!.push(r.body.msg_id as string);
      }
      const all = [...order.values()].flat();
      // A worker that finds the line taken by the other looks again a moment later: the clock moves a second a round.
      for (let round = 0; round < 200 && !(await Promise.all(all.map((id) => mensaje(n1, id)))).every((m) => SENT.includes(m.estado)); round++) {
        await Promise.all([n1.stepQueue(), n2.stepQueue()]);
        clock.advance(1000);
      }
      for (const id of all) expect(SENT, id).toContain((await mensaje(n1, id)).estado);
      expect(sent.filter((id) => all.includes(id))).toHaveLength(all.length);
      for (const ids of order.values()) expect(sent.filter((id) => ids.includes(id))).toEqual(ids);
      expect((await mensaje(n1, later.body.msg_id)).estado).toBe('pendiente');
      expect(sent).not.toContain(later.body.msg_id);
    } finally {
      await n2.stop();
      await n1.stop();
      await schema.drop();
    }
  });
});
