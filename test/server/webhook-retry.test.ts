import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock, systemClock } from '../../src/core/time/clock.js';
import { RETRY_FACTORS } from '../../src/webhooks/sign.js';
import { api, seedClient, startTestServer, type Seeded, type TestServer } from '../helpers/server.js';
import { expectError, expectOk, numeroNuevo } from '../helpers/expect.js';
import { admin, linkedLine, type Line } from './send-helpers.js';
import {
  entrega,
  entregas,
  expectEnvelope,
  expectSigned,
  getWebhook,
  setWebhook,
  startReceiver,
  waitEntrega,
  waitFor,
  type Answer,
  type Hit,
  type Receiver,
} from './webhook-helpers.js';

/**
 * Webhook retries over real HTTP (docs/design.md §7): non-2xx answers are retried on
 * the schedule with the same webhook-id and body bytes and a fresh timestamp
 * and signature; every attempt is recorded; 410 turns the configuration off;
 * redirects are not followed; redelivery by hand; per-client order; and the
 * whole schedule to `fallido` on a manual clock.
 */

const SECRET = 'pasarela-retry-secret-abcdefghijklmnop';

describe('on the system clock, first retry after 20 ms (second after 60 x 20 = 1.2 s)', () => {
  let s: TestServer;
  let R: Receiver;
  /** What the receiver answers, per path (client); 200 when unset. */
  const plan = new Map<string, Answer[]>();

  const hookOf = (line: { clienteId: number }) => `${R.url}/c${line.clienteId}`;
  const hitsOf = (line: { clienteId: number }) => R.hits.filter((h) => h.path === `/c${line.clienteId}`);
  const receive = async (L: Line, texto: string) =>
    expectOk(await admin(s, 'POST', '/admin/sim/receive', { celular_id: L.celularId, de: '525511112222', texto }));

  beforeAll(async () => {
    R = await startReceiver((h: Hit) => plan.get(h.path)?.shift() ?? 200);
    s = await startTestServer({ allowPrivateUrls: true, webhookRetryMs: 20, clock: systemClock, random: () => 0.5 });
  });
  afterAll(async () => {
    await R?.close();
    await s?.stop();
  });

  it('500, 500, 200: three attempts of one event, same webhook-id and body, each freshly signed; recorded [500, 500, 200], entregado', async () => {
    const L = await linkedLine(s);
    expectOk(await setWebhook(s, L.clientKey, { url: hookOf(L), secret: SECRET, eventos: ['messages.received'] }));
    plan.set(`/c${L.clienteId}`, [500, 500]);
    await receive(L, 'reintento');

    const first = await R.wait((h) => h.path === `/c${L.clienteId}`, 5000, 'the first attempt');
    const id = first.json.id as string;
    // Between the attempts: pendiente, the error and the next time shown.
    const mid = await waitEntrega(s, L.clientKey, id, (e) => e.intentos === 2, 'two attempts', 5000);
    expect(mid).toMatchObject({ estado: 'pendiente', ultimo_error: 'HTTP 500', entregado_at: null });
    expect(mid.proximo_intento_at).toMatch(/Z$/);
    expect(Date.parse(mid.proximo_intento_at!) - Date.parse(mid.intentos_detalle[1]!.fecha)).toBe(1200);

    const done = await waitEntrega(s, L.clientKey, id, (e) => e.estado !== 'pendiente', 'the third attempt', 5000);
    expect(done).toMatchObject({ id, evento: 'messages.received', estado: 'entregado', intentos: 3, ultimo_error: null, proximo_intento_at: null });
    expect(done.entregado_at).toMatch(/Z$/);
    expect(done.intentos_detalle.map((a) => [a.n, a.status, a.error])).toEqual([
      [1, 500, 'HTTP 500'],
      [2, 500, 'HTTP 500'],
      [3, 200, null],
    ]);
    for (const a of done.intentos_detalle) expect(a.duracion_ms).toBeGreaterThanOrEqual(0);

    const hits = R.of(id);
    expect(hits).toHaveLength(3);
    for (const h of hits) {
      expectEnvelope(h, 'messages.received', L.clienteId);
      expectSigned(h, SECRET);
      expect(h.headers['webhook-id']).toBe(id);
      expect(h.raw.equals(first.raw)).toBe(true);
    }
    const ts = hits.map((h) => Number(h.headers['webhook-timestamp']));
    expect(ts[1]!).toBeGreaterThanOrEqual(ts[0]!);
    expect(ts[2]!).toBeGreaterThanOrEqual(ts[1]!);
    // The schedule: about 20 ms, then about 1.2 s (the dispatcher wakes when a retry falls due).
    expect(hits[1]!.at - hits[0]!.at).toBeGreaterThanOrEqual(15);
    expect(hits[2]!.at - hits[1]!.at).toBeGreaterThanOrEqual(1150);
    // A signature is only as fresh as its timestamp: same second, same signature; otherwise different.
    for (const h of hits.slice(1)) {
      if (h.headers['webhook-timestamp'] === first.headers['webhook-timestamp'])
        expect(h.headers['webhook-signature']).toBe(first.headers['webhook-signature']);
      else expect(h.headers['webhook-signature']).not.toBe(first.headers['webhook-signature']);
    }
  });

  it('connection refused and 404 are failures too, recorded (status null with the error, or the status)', async () => {
    const L = await linkedLine(s);
    // A port nothing listens on: the receiver's, once closed.
    const gone = await startReceiver(200);
    const deadUrl = `${gone.url}/nadie`;
    await gone.close();
    expectOk(await setWebhook(s, L.clientKey, { url: deadUrl, eventos: ['messages.received'] }));
    await receive(L, 'a nadie');
    const [e] = await (async () => {
      await waitFor(async () => (await entregas(s, L.clientKey)).some((x) => x.intentos >= 1), 'a refused attempt');
      return entregas(s, L.clientKey);
    })();
    expect(e!.estado).toBe('pendiente');
    expect(e!.intentos_detalle[0]!.status).toBeNull();
    expect(e!.intentos_detalle[0]!.error).toMatch(/ECONNREFUSED|refused|connect/i);

    const M = await linkedLine(s);
    plan.set(`/c${M.clienteId}`, [404]);
    expectOk(await setWebhook(s, M.clientKey, { url: hookOf(M), eventos: ['messages.received'] }));
    await receive(M, 'no encontrado');
    const [h] = await (async () => {
      await waitFor(() => hitsOf(M).length >= 2, 'the retry after a 404');
      return hitsOf(M);
    })();
    const done = await waitEntrega(s, M.clientKey, h!.json.id, (x) => x.estado === 'entregado', 'delivered after the 404');
    expect(done.intentos_detalle.map((a) => a.status)).toEqual([404, 200]);
  });

  it('redirects are not followed: a 302 is a failed attempt and the Location is never requested', async () => {
    const L = await linkedLine(s);
    plan.set(`/c${L.clienteId}`, [302]);
    expectOk(await setWebhook(s, L.clientKey, { url: hookOf(L), secret: SECRET, eventos: ['messages.received'] }));
    await receive(L, 'redirigido');
    const first = await R.wait((h) => h.path === `/c${L.clienteId}`);
    const done = await waitEntrega(s, L.clientKey, first.json.id, (e) => e.estado === 'entregado', 'delivered after the 302');
    expect(done.intentos_detalle.map((a) => [a.status, a.error])).toEqual([
      [302, 'HTTP 302'],
      [200, null],
    ]);
    expect(R.hits.filter((h) => h.path.startsWith('/elsewhere'))).toEqual([]);
    expect(R.of(first.json.id).map((h) => h.path)).toEqual([`/c${L.clienteId}`, `/c${L.clienteId}`]);
  });

  it('410 Gone turns the configuration off and ends the delivery as fallido; later events are not sent', async () => {
    const L = await linkedLine(s);
    plan.set(`/c${L.clienteId}`, [410]);
    expectOk(await setWebhook(s, L.clientKey, { url: hookOf(L), secret: SECRET, eventos: ['messages.received', 'session.status'] }));
    await receive(L, 'gone');
    const first = await R.wait((h) => h.path === `/c${L.clienteId}`);
    const id = first.json.id as string;
    const e = await waitEntrega(s, L.clientKey, id, (x) => x.estado !== 'pendiente', 'the end of the delivery');
    expect(e).toMatchObject({ estado: 'fallido', intentos: 1, ultimo_error: 'HTTP 410', proximo_intento_at: null, entregado_at: null });
    expect(e.intentos_detalle.map((a) => a.status)).toEqual([410]);

    const g = await getWebhook(s, L.clientKey);
    expectOk(g);
    expect(g.body).toMatchObject({ configurado: true, url: hookOf(L), has_secret: true, activo: false, eventos: ['messages.received', 'session.status'] });

    await receive(L, 'después del 410');
    // One look of the dispatcher now: the journal moved (the event routed to nothing) and any attempt it started, ended.
    await s.dispatcher!.step();
    expect(hitsOf(L)).toHaveLength(1);
    expect(await entregas(s, L.clientKey)).toHaveLength(1);
  });

  it('a pending retry ends as fallido, without a request, once the configuration is removed or turned off', async () => {
    const L = await linkedLine(s);
    const M = await linkedLine(s);
    plan.set(`/c${L.clienteId}`, [500, 500]);
    plan.set(`/c${M.clienteId}`, [500, 500]);
    expectOk(await setWebhook(s, L.clientKey, { url: hookOf(L), eventos: ['messages.received'] }));
    expectOk(await setWebhook(s, M.clientKey, { url: hookOf(M), eventos: ['messages.received'] }));
    await receive(L, 'se borra');
    await receive(M, 'se apaga');
    const hl = await R.wait((h) => h.path === `/c${L.clienteId}`);
    const hm = await R.wait((h) => h.path === `/c${M.clienteId}`);
    // The second attempt (about 20 ms later) fails too; the third is 1.2 s away.
    await waitEntrega(s, L.clientKey, hl.json.id, (e) => e.intentos === 2, 'two attempts of L');
    await waitEntrega(s, M.clientKey, hm.json.id, (e) => e.intentos === 2, 'two attempts of M');
    expectOk(await api(s.url, 'DELETE', '/api/webhook.php', { key: L.clientKey }));
    expectOk(await setWebhook(s, M.clientKey, { url: hookOf(M), eventos: ['messages.received'], activo: false }));
    const el = await waitEntrega(s, L.clientKey, hl.json.id, (e) => e.estado !== 'pendiente', 'the end of L', 5000);
    const em = await waitEntrega(s, M.clientKey, hm.json.id, (e) => e.estado !== 'pendiente', 'the end of M', 5000);
    expect(el).toMatchObject({ estado: 'fallido', intentos: 3 });
    expect(el.intentos_detalle[2]).toMatchObject({ status: null, error: expect.stringMatching(/removed/) });
    expect(em).toMatchObject({ estado: 'fallido', intentos: 3 });
    expect(em.intentos_detalle[2]).toMatchObject({ status: null, error: expect.stringMatching(/not active/) });
    expect(R.of(hl.json.id)).toHaveLength(2);
    expect(R.of(hm.json.id)).toHaveLength(2);
  });

  it('webhook_reenviar delivers a delivery again with the same id and body (after a 410, once re-enabled; and an already delivered one)', async () => {
    const L = await linkedLine(s);
    plan.set(`/c${L.clienteId}`, [410]);
    expectOk(await setWebhook(s, L.clientKey, { url: hookOf(L), secret: SECRET, eventos: ['messages.received'] }));
    await receive(L, 'para reenviar');
    const first = await R.wait((h) => h.path === `/c${L.clienteId}`);
    const id = first.json.id as string;
    await waitEntrega(s, L.clientKey, id, (x) => x.estado === 'fallido', 'fallido after 410');

    expectOk(await setWebhook(s, L.clientKey, { url: hookOf(L), secret: SECRET, eventos: ['messages.received'] }));
    const r = await api(s.url, 'POST', `/api/webhook_reenviar.php?id=${id}`, { key: L.clientKey });
    expectOk(r);
    expect(r.body).toMatchObject({ id, estado: 'pendiente' });
    const done = await waitEntrega(s, L.clientKey, id, (x) => x.estado === 'entregado', 'redelivered');
    expect(done.intentos_detalle.map((a) => a.status)).toEqual([410, 200]);
    let hits = R.of(id);
    expect(hits).toHaveLength(2);
    expect(hits[1]!.raw.equals(first.raw)).toBe(true);
    expectSigned(hits[1]!, SECRET);

    // Again, now that it was delivered (JSON body id): a third attempt, same id.
    const again = await api(s.url, 'POST', '/api/webhook_reenviar.php', { key: L.clientKey, json: { id } });
    expectOk(again);
    await waitEntrega(s, L.clientKey, id, (x) => x.intentos === 3 && x.estado === 'entregado', 'redelivered twice');
    hits = R.of(id);
    expect(hits).toHaveLength(3);
    expect(hits.every((h) => h.headers['webhook-id'] === id)).toBe(true);
  });

  it('webhook_reenviar: 404 for an unknown id or another client’s, 400 without an id', async () => {
    const L = await linkedLine(s);
    const O = await linkedLine(s);
    expectOk(await setWebhook(s, L.clientKey, { url: hookOf(L), eventos: ['messages.received'] }));
    await receive(L, 'de L');
    const h = await R.wait((x) => x.path === `/c${L.clienteId}`);
    await waitEntrega(s, L.clientKey, h.json.id, (x) => x.estado === 'entregado', 'delivered');

    expectError(await api(s.url, 'POST', '/api/webhook_reenviar.php?id=evt_00000000000000000000000000000000', { key: L.clientKey }), 404, 605);
    expectError(await api(s.url, 'POST', `/api/webhook_reenviar.php?id=${h.json.id}`, { key: O.clientKey }), 404, 605);
    expectError(await api(s.url, 'POST', '/api/webhook_reenviar.php', { key: L.clientKey }), 400, 100);
    // The other client does not see L's deliveries either.
    expect(await entregas(s, O.clientKey)).toEqual([]);
    expect(await entrega(s, L.clientKey, h.json.id)).toMatchObject({ intentos: 1 });
  });

  it('per-client order: every event once; several may be in flight, so `fecha` (in event order) is what restores the order', async () => {
    const L = await linkedLine(s);
    expectOk(await setWebhook(s, L.clientKey, { url: hookOf(L), eventos: ['messages.received'] }));
    const N = 15;
    for (let i = 0; i < N; i++) await receive(L, `orden ${i}`);
    await waitFor(() => hitsOf(L).length >= N, `${N} deliveries`);
    expect(new Set(hitsOf(L).map((h) => h.json.id)).size).toBe(N);
    const byEvent = [...hitsOf(L)].sort((a, b) => Number(a.json.data.texto.split(' ')[1]) - Number(b.json.data.texto.split(' ')[1]));
    expect(byEvent.map((h) => h.json.data.texto)).toEqual(Array.from({ length: N }, (_, i) => `orden ${i}`));
    const fechas = byEvent.map((h) => Date.parse(h.json.fecha));
    expect(fechas).toEqual([...fechas].sort((a, b) => a - b));
  });
});

// Retry-After (RFC 9110 §10.2.3) is seconds or an HTTP-date, read against the server's clock: the next
// attempt is at that time, not after the (much shorter) backoff.
describe('Retry-After on a manual clock (a 20 ms backoff; the receiver asks for seconds)', () => {
  let s: TestServer;
  let R: Receiver;
  const plan = new Map<string, Answer[]>();
  const hookOf = (line: { clienteId: number }) => `${R.url}/c${line.clienteId}`;
  const receive = async (L: Line, texto: string) =>
    expectOk(await admin(s, 'POST', '/admin/sim/receive', { celular_id: L.celularId, de: '525511112222', texto }));

  beforeAll(async () => {
    R = await startReceiver((h: Hit) => plan.get(h.path)?.shift() ?? 200);
    // On a whole second, so an HTTP-date (whole seconds) is an exact distance from it.
    const clock = new ManualClock(Math.floor(Date.now() / 1000) * 1000);
    s = await startTestServer({ allowPrivateUrls: true, webhookRetryMs: 20, webhookPollMs: 20, clock, random: () => 0.5 });
  });
  afterAll(async () => {
    await R?.close();
    await s?.stop();
  });

  it('Retry-After (seconds) on a 503 puts the next attempt that long after this one; it is made once the clock is there', async () => {
    const clock = s.clock as ManualClock;
    const L = await linkedLine(s);
    plan.set(`/c${L.clienteId}`, [{ status: 503, headers: { 'retry-after': '2' } }]);
    expectOk(await setWebhook(s, L.clientKey, { url: hookOf(L), secret: SECRET, eventos: ['messages.received'] }));
    await receive(L, 'espera');
    const first = await R.wait((h) => h.path === `/c${L.clienteId}`);
    const mid = await waitEntrega(s, L.clientKey, first.json.id, (e) => e.intentos === 1, 'the 503 attempt');
    const at = Date.parse(mid.proximo_intento_at!);
    expect(at - Date.parse(mid.intentos_detalle[0]!.fecha)).toBe(2000);
    clock.set(at);
    const done = await waitEntrega(s, L.clientKey, first.json.id, (e) => e.estado === 'entregado', 'delivered after Retry-After', 5000);
    expect(done.intentos_detalle.map((a) => a.status)).toEqual([503, 200]);
    expect(Date.parse(done.intentos_detalle[1]!.fecha)).toBe(at);
    const hits = R.of(first.json.id);
    expect(hits).toHaveLength(2);
    expect(Number(hits[1]!.headers['webhook-timestamp']) - Number(hits[0]!.headers['webhook-timestamp'])).toBe(2);
    expectSigned(hits[1]!, SECRET);
  });

  it('Retry-After as an HTTP-date on a 429 is honoured too, against the server clock', async () => {
    const clock = s.clock as ManualClock;
    const L = await linkedLine(s);
    plan.set(`/c${L.clienteId}`, [{ status: 429, headers: { 'retry-after': new Date(clock.now() + 3000).toUTCString() } }]);
    expectOk(await setWebhook(s, L.clientKey, { url: hookOf(L), eventos: ['messages.received'] }));
    await receive(L, 'espera fecha');
    const first = await R.wait((h) => h.path === `/c${L.clienteId}`);
    const mid = await waitEntrega(s, L.clientKey, first.json.id, (e) => e.intentos === 1, 'the 429 attempt');
    expect(mid.intentos_detalle[0]!.status).toBe(429);
    expect(Date.parse(mid.proximo_intento_at!) - Date.parse(mid.intentos_detalle[0]!.fecha)).toBe(3000);
  });
});

describe('the whole schedule on a manual clock (default --webhook-retry-ms 5000, no jitter)', () => {
  let s: TestServer;
  let R: Receiver;
  let C: Seeded;
  beforeAll(async () => {
    R = await startReceiver(503);
    // A moved clock is seen within a 20 ms poll, not 500 ms.
    s = await startTestServer({ allowPrivateUrls: true, clock: new ManualClock(Date.now()), random: () => 0.5, webhookPollMs: 20 });
    C = await seedClient(s, { numero: numeroNuevo() });
  });
  afterAll(async () => {
    await R?.close();
    await s?.stop();
  });

  it('8 attempts, spaced 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h, then fallido with every attempt listed', async () => {
    const clock = s.clock as ManualClock;
    expectOk(await setWebhook(s, C.clientKey, { url: `${R.url}/hook`, secret: SECRET }));
    const t = await api(s.url, 'POST', '/api/webhook_test.php', { key: C.clientKey });
    expectOk(t);
    const id = t.body.id as string;
    const gaps: number[] = [];
    for (let n = 1; n <= RETRY_FACTORS.length; n++) {
      const e = await waitEntrega(s, C.clientKey, id, (x) => x.intentos === n, `attempt ${n}`);
      expect(e.estado).toBe('pendiente');
      const last = Date.parse(e.intentos_detalle[n - 1]!.fecha);
      const next = Date.parse(e.proximo_intento_at!);
      gaps.push(next - last);
      clock.set(next);
    }
    const e = await waitEntrega(s, C.clientKey, id, (x) => x.estado !== 'pendiente', 'the last attempt');
    expect(gaps).toEqual(RETRY_FACTORS.map((f) => f * 5000));
    expect(gaps).toEqual([5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000]);
    expect(e).toMatchObject({ estado: 'fallido', intentos: 8, ultimo_error: 'HTTP 503', proximo_intento_at: null, entregado_at: null });
    expect(e.intentos_detalle.map((a) => a.n)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(e.intentos_detalle.every((a) => a.status === 503)).toBe(true);
    const hits = R.of(id);
    expect(hits).toHaveLength(8);
    // Each attempt carries the time of that attempt, about 27.6 h apart from first to last.
    const ts = hits.map((h) => Number(h.headers['webhook-timestamp']));
    expect(ts[7]! - ts[0]!).toBe(gaps.reduce((a, b) => a + b, 0) / 1000);
    for (const h of hits) expect(h.raw.equals(hits[0]!.raw)).toBe(true);
    // The configuration stays on (only 410 turns it off).
    expect((await getWebhook(s, C.clientKey)).body.activo).toBe(true);
  });
});
