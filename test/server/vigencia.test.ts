import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applySessionStatus } from '../../src/core/accounts/celulares.js';
import type { MessageStatusEvent } from '../../src/core/events/events.js';
import { ManualClock } from '../../src/core/time/clock.js';
import type { PgStore } from '../../src/store/postgres/store.js';
import type { SqliteStore } from '../../src/store/sqlite/store.js';
import { pgSchema } from '../contract/adapters.js';
import { expectError, expectOk } from '../helpers/expect.js';
import { api, startTestServer, type TestServer } from '../helpers/server.js';
import { describeWith, postgres, schemaUrl } from '../helpers/services.js';
import { openStream, type SseStream } from './eventos-helpers.js';
import { b64, editCelular, linkedLine, mensaje, numeroNuevo, PNG, send, TEXT, uniqueText, type Line } from './send-helpers.js';
import { setWebhook, startReceiver, type Receiver } from './webhook-helpers.js';

/**
 * A send's validity (`vigencia`, issue 40 item 1, docs/validity.md): a queued
 * message not handed to the gateway within it ends `error` with class
 * `caducado`, refunded, with its event, on time even behind a line that
 * cannot send; on SQLite and PostgreSQL (two nodes: each ended once).
 */

const T0 = Date.UTC(2026, 3, 1, 12);

/** What a line may still spend: its own balance and its client's global one. */
async function credit(s: TestServer, line: Line): Promise<number> {
  return (await s.core.store.getCelular(line.celularId))!.saldo_actual + (await s.core.store.getCliente(line.clienteId))!.saldo_global;
}

/** Runs a read on the server's store (tests only). */
async function query<T>(s: TestServer, sql: string, params: unknown[]): Promise<T[]> {
  if (s.core.store.caps.name === 'postgres') return (s.core.store as unknown as PgStore).db.q(sql, params);
  return (s.core.store as unknown as SqliteStore).db.prepare(sql.replace(/\$\d+/g, '?')).all(...params) as T[];
}

/** Each balance equals the sum of its ledger rows: the client's global one and each line's. */
async function ledgerAddsUp(s: TestServer, line: Line): Promise<void> {
  const sums = await query<{ celular_id: number | null; total: number }>(
    s,
    'SELECT celular_id, SUM(monto) AS total FROM movimientos_saldo WHERE cliente_id = $1 GROUP BY celular_id',
    [line.clienteId],
  );
  const total = (id: number | null) => Number(sums.find((r) => r.celular_id === id)?.total ?? 0);
  expect(total(null)).toBe((await s.core.store.getCliente(line.clienteId))!.saldo_global);
  expect(total(line.celularId)).toBe((await s.core.store.getCelular(line.celularId))!.saldo_actual);
}

/** The `message.status` events the store logged for a message, in order. */
async function loggedEstados(s: TestServer, clienteId: number, msgId: string): Promise<string[]> {
  const rows = await query<{ data: string }>(s, "SELECT data FROM eventos WHERE cliente_id = $1 AND evento = 'message.status' ORDER BY seq", [clienteId]);
  return rows.map((r) => JSON.parse(r.data) as { msg_id: string; estado: string }).flatMap((d) => (d.msg_id === msgId ? [d.estado] : []));
}

function suite(label: string, over: () => Promise<{ store?: string; drop?: () => Promise<void> }>) {
  let s: TestServer;
  let clock: ManualClock;
  let R: Receiver;
  let drop: (() => Promise<void>) | undefined;
  const events: MessageStatusEvent[] = [];
  const streams: SseStream[] = [];

  beforeAll(async () => {
    const o = await over();
    drop = o.drop;
    R = await startReceiver(200);
    clock = new ManualClock(T0);
    s = await startTestServer({
      ...(o.store ? { store: o.store } : {}),
      tz: 'UTC',
      allowPrivateUrls: true,
      clock,
      queue: { gapMinMs: 0, gapMaxMs: 0 },
    });
    s.core.bus.subscribe('message.status', (e) => events.push(e));
  });
  afterAll(async () => {
    for (const st of streams) st.close();
    await s?.stop();
    await R?.close();
    await drop?.();
  });

  const queue = async (line: Line, extra: Record<string, unknown> = {}): Promise<string> => {
    const r = await send(s, line, TEXT, { destinatario: numeroNuevo(), mensaje: uniqueText('codigo'), ...extra });
    expectOk(r);
    return r.body.msg_id as string;
  };

  describe(`a send's validity (${label})`, () => {
    it('a code behind a disconnected line expires on time: error caducado, refunded, the ledger adds up, its event on the stream and the webhook', async () => {
      const b = await linkedLine(s, { saldo: 10 });
      expectOk(await setWebhook(s, b.clientKey, { url: `${R.url}/hook`, eventos: ['message.status'] }));
      const st = await openStream(s.url, '/api/eventos.php?eventos=message.status', b.clientKey);
      streams.push(st);
      expect(st.status).toBe(200);
      // Sent within its validity: unaffected when the validity later passes.
      const early = await queue(b, { vigencia: 60 });
      await s.stepQueue();
      expect((await mensaje(s, early)).estado).not.toBe('pendiente');
      // Queued while the line's hours are closed (a send to a line already down is refused), then the line drops and its
      // hours open: the head (no validity) and the code behind it wait for the line.
      await editCelular(s, b, { hora_inicio_permitido: '00:00', hora_fin_permitido: '01:00' });
      const head = await queue(b);
      const code = await queue(b, { vigencia: 30 });
      const later = await queue(b, { vigencia: 3600 });
      await applySessionStatus(s.core, b.celularId, 'disconnected');
      await editCelular(s, b, { hora_inicio_permitido: '00:00', hora_fin_permitido: '23:59' });
      expect(await credit(s, b)).toBe(6);
      const view = await api(s.url, 'GET', `/api/mensaje.php?msg_id=${code}`, { key: b.clientKey });
      expectOk(view);
      expect(view.body.mensaje).toMatchObject({ estado: 'pendiente', vigencia_hasta: new Date(T0 + 30_000).toISOString(), error_clase: null });
      expect((await api(s.url, 'GET', `/api/mensaje.php?msg_id=${head}`, { key: b.clientKey })).body.mensaje.vigencia_hasta).toBeNull();
      await s.stepQueue();
      clock.advance(29_999);
      await s.stepQueue();
      expect((await mensaje(s, code)).estado).toBe('pendiente');
      clock.advance(1);
      await s.stepQueue();
      const ended = await mensaje(s, code);
      expect(ended).toMatchObject({ estado: 'error', error_clase: 'caducado', cobrado: 0, enviado_at: null });
      expect(ended.error).toMatch(/validity/);
      // Only the code: the head and the message with an hour left still wait; the early one stays as it went.
      expect((await mensaje(s, head)).estado).toBe('pendiente');
      expect((await mensaje(s, later)).estado).toBe('pendiente');
      expect((await mensaje(s, early)).error_clase).toBeNull();
      clock.advance(120_000);
      await s.stepQueue();
      expect((await mensaje(s, early)).estado).not.toBe('error');
      // Refunded once; every balance is its ledger's sum.
      expect(await credit(s, b)).toBe(7);
      await ledgerAddsUp(s, b);
      const after = await api(s.url, 'GET', `/api/mensaje.php?msg_id=${code}`, { key: b.clientKey });
      expect(after.body.mensaje).toMatchObject({ estado: 'error', error_clase: 'caducado', vigencia_hasta: new Date(T0 + 30_000).toISOString() });
      // Its event: on the bus, in the log once, on the stream and at the webhook.
      expect(events.filter((e) => e.msg_id === code && e.estado === 'error')).toHaveLength(1);
      expect(await loggedEstados(s, b.clienteId, code)).toEqual(['pendiente', 'error']);
      await st.waitEvents(1);
      const onStream = async () =>
        st.events.find((e) => {
          const d = (JSON.parse(e.data) as { data: { msg_id: string; estado: string } }).data;
          return d.msg_id === code && d.estado === 'error';
        });
      for (let i = 0; i < 50 && !(await onStream()); i++) await new Promise((r) => setTimeout(r, 100));
      expect(JSON.parse((await onStream())!.data).data).toMatchObject({ msg_id: code, estado: 'error', estado_anterior: 'pendiente' });
      const hit = await R.wait((h) => h.json?.data?.msg_id === code && h.json.data.estado === 'error', 10_000, 'the caducado webhook');
      expect(hit.json).toMatchObject({ evento: 'message.status', cliente_id: b.clienteId });
    });

    it('expires queued messages behind closed hours, many at once, in their order of expiry', async () => {
      const b = await linkedLine(s, { saldo: 300 });
      await editCelular(s, b, { hora_inicio_permitido: '00:00', hora_fin_permitido: '01:00' });
      const ids: string[] = [];
      for (let i = 0; i < 120; i++) ids.push(await queue(b, { vigencia: i < 110 ? 10 : 20 }));
      clock.advance(10_000);
      await s.stepQueue();
      const states = await Promise.all(ids.map((id) => mensaje(s, id)));
      expect(states.slice(0, 110).every((m) => m.error_clase === 'caducado')).toBe(true);
      expect(states.slice(110).every((m) => m.estado === 'pendiente')).toBe(true);
      clock.advance(10_000);
      await s.stepQueue();
      expect((await Promise.all(ids.slice(110).map((id) => mensaje(s, id)))).every((m) => m.error_clase === 'caducado')).toBe(true);
      expect(await credit(s, b)).toBe(300);
      await ledgerAddsUp(s, b);
      expect((await api(s.url, 'GET', `/api/cola.php?celular_id=${b.celularId}`, { key: b.clientKey })).body.total).toBe(0);
    });

    it('directo=1 ignores it: sent at once, no validity in its record', async () => {
      const b = await linkedLine(s, { saldo: 5 });
      const r = await send(s, b, TEXT, { destinatario: numeroNuevo(), mensaje: uniqueText('directo'), directo: 1, vigencia: 10 });
      expectOk(r);
      expect(r.body.modo).toBe('directo');
      const view = await api(s.url, 'GET', `/api/mensaje.php?msg_id=${r.body.msg_id}`, { key: b.clientKey });
      expect(view.body.mensaje).toMatchObject({ modo: 'directo', vigencia_hasta: null });
      expect((await mensaje(s, r.body.msg_id)).estado).not.toBe('error');
    });

    it('every send endpoint takes it, in JSON and in a form; a base64 one too', async () => {
      const b = await linkedLine(s, { saldo: 20 });
      const form = await send(s, b, TEXT, { destinatario: numeroNuevo(), mensaje: uniqueText('form'), vigencia: '45' }, { form: true });
      expectOk(form);
      expect((await mensaje(s, form.body.msg_id)).vigencia_hasta).toBe(clock.now() + 45_000);
      const img = await send(s, b, '/api/mensaje_enviar_imagen_base64.php', { destinatario: numeroNuevo(), imageBase64: b64(PNG), vigencia: 600 });
      expectOk(img);
      expect((await mensaje(s, img.body.msg_id)).vigencia_hasta).toBe(clock.now() + 600_000);
      const imgForm = await send(
        s,
        b,
        '/api/mensaje_enviar_imagen_base64.php',
        { destinatario: numeroNuevo(), imageBase64: b64(PNG), vigencia: '90' },
        { form: true },
      );
      expectOk(imgForm);
      expect((await mensaje(s, imgForm.body.msg_id)).vigencia_hasta).toBe(clock.now() + 90_000);
      // The legacy endpoint (a line's token in the form): seconds or an instant; a bad one refused with its reason.
      const legacy = (vigencia: string) =>
        api(s.url, 'POST', '/panel/api_wa.php', { form: { token: b.gatewayToken, destinatario: numeroNuevo(), mensaje: uniqueText('legado'), vigencia } });
      const secs = await legacy('120');
      expectOk(secs);
      expect((await mensaje(s, secs.body.msg_id)).vigencia_hasta).toBe(clock.now() + 120_000);
      const until = clock.now() + 300_000;
      const instant = await legacy(new Date(until).toISOString());
      expectOk(instant);
      expect((await mensaje(s, instant.body.msg_id)).vigencia_hasta).toBe(until);
      const bad = await legacy('5');
      expectError(bad, 400, 100);
      expect(bad.body.error).toMatch(/vigencia/);
      for (let i = 0; i < 5; i++) await s.stepQueue();
    });

    it('refuses a validity out of range or not a whole number of seconds: 400 with the reason', async () => {
      const b = await linkedLine(s, { saldo: 5 });
      const before = await credit(s, b);
      for (const vigencia of [9, 86_401, 0, -5, 1.5, 'abc', '', true]) {
        const r = await send(s, b, TEXT, { destinatario: numeroNuevo(), mensaje: uniqueText('mal'), vigencia });
        expectError(r, 400, 100);
        expect(r.body.error ?? r.text).toMatch(/vigencia/);
      }
      for (const vigencia of ['9', '86401', 'abc', '1.5']) {
        const r = await send(s, b, TEXT, { destinatario: numeroNuevo(), mensaje: uniqueText('mal'), vigencia }, { form: true });
        expectError(r, 400, 100);
        expect(r.body.error ?? r.text).toMatch(/vigencia/);
      }
      const img = await send(s, b, '/api/mensaje_enviar_imagen_base64.php', { destinatario: numeroNuevo(), imageBase64: b64(PNG), vigencia: 5 });
      expectError(img, 400, 100);
      // An instant: 10 s to 24 h after the send starts (now, or its enviar_en).
      const at = (ms: number) => new Date(s.clock.now() + ms).toISOString();
      for (const [vigencia, extra] of [
        [at(5_000), {}],
        [at(86_401_000), {}],
        ['2026-13-01T00:00:00Z', {}],
        [at(3_600_000), { enviar_en: at(2 * 3_600_000) }],
      ] as const) {
        const r = await send(s, b, TEXT, { destinatario: numeroNuevo(), mensaje: uniqueText('mal'), vigencia, ...extra });
        expectError(r, 400, 100);
        expect(r.body.error ?? r.text).toMatch(/vigencia/);
      }
      expect(await credit(s, b)).toBe(before);
    });

    it('takes an instant instead of seconds, in JSON and in a form; a scheduled send may end after its due time', async () => {
      const b = await linkedLine(s, { saldo: 5 });
      const until = s.clock.now() + 600_000;
      for (const form of [false, true]) {
        const r = await send(s, b, TEXT, { destinatario: numeroNuevo(), mensaje: uniqueText('hasta'), vigencia: new Date(until).toISOString() }, { form });
        expectOk(r, { modo: 'cola' });
        expect((await mensaje(s, r.body.msg_id as string)).vigencia_hasta).toBe(until);
      }
      const due = s.clock.now() + 3_600_000;
      const later = await send(s, b, TEXT, {
        destinatario: numeroNuevo(),
        mensaje: uniqueText('programado'),
        enviar_en: new Date(due).toISOString(),
        vigencia: new Date(due + 60_000).toISOString(),
      });
      expectOk(later, { modo: 'cola' });
      expect((await mensaje(s, later.body.msg_id as string)).vigencia_hasta).toBe(due + 60_000);
    });
  });
}

suite('SQLite', async () => ({}));

describeWith(postgres, 'a send validity on PostgreSQL', () => {
  suite('PostgreSQL', async () => {
    const schema = await pgSchema();
    return { store: schemaUrl(schema.schema), drop: schema.drop };
  });

  describe('two nodes on one store (PostgreSQL)', () => {
    let a: TestServer;
    let b: TestServer;
    let drop: () => Promise<void>;
    const clock = new ManualClock(T0);
    beforeAll(async () => {
      const schema = await pgSchema();
      drop = schema.drop;
      const store = schemaUrl(schema.schema);
      a = await startTestServer({ store, tz: 'UTC', clock, queue: { gapMinMs: 0, gapMaxMs: 0 } });
      b = await startTestServer({ store, tz: 'UTC', clock, queue: { gapMinMs: 0, gapMaxMs: 0 } });
    });
    afterAll(async () => {
      await a?.stop();
      await b?.stop();
      await drop?.();
    });

    it('both sweep at once: each message ended once, refunded once, one event each (PostgreSQL)', async () => {
      const line = await linkedLine(a, { saldo: 100 });
      await editCelular(a, line, { hora_inicio_permitido: '00:00', hora_fin_permitido: '01:00' });
      const ids: string[] = [];
      for (let i = 0; i < 40; i++) {
        const r = await send(i % 2 ? a : b, line, TEXT, { destinatario: numeroNuevo(), mensaje: uniqueText('dos'), vigencia: 10 });
        expectOk(r);
        ids.push(r.body.msg_id as string);
      }
      await applySessionStatus(a.core, line.celularId, 'disconnected');
      clock.advance(10_000);
      await Promise.all([a.stepQueue(), b.stepQueue(), a.stepQueue(), b.stepQueue()]);
      for (const id of ids) {
        expect((await mensaje(a, id)).error_clase, id).toBe('caducado');
        expect(await loggedEstados(a, line.clienteId, id), id).toEqual(['pendiente', 'error']);
      }
      const refunds = await query<{ n: number }>(
        a,
        "SELECT COUNT(*) AS n FROM movimientos_saldo WHERE cliente_id = $1 AND monto > 0 AND motivo LIKE '%reembolso%'",
        [line.clienteId],
      );
      expect(Number(refunds[0]!.n)).toBe(40);
      expect(await credit(a, line)).toBe(100);
      await ledgerAddsUp(a, line);
    });
  });
});
