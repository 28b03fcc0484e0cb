import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/core/time/clock.js';
import type { SimGateway } from '../../src/gateways/sim.js';
import { api, startTestServer, type ApiResponse, type TestServer } from '../helpers/server.js';
import { expectError, expectOk } from '../helpers/expect.js';
import { linkedLine, mensaje, saldos, send, TEXT, uniqueText, waitEstado, type Line } from './send-helpers.js';
import { until } from '../helpers/poll.js';

/**
 * Gateway failures by kind, over HTTP against the simulator: the network's
 * rate limit (429 api_codigo 702 in direct mode, refunded; a pause of the
 * line in queue mode, for as long as the network said, not the backoff), a
 * gateway that cannot be reached (502 api_codigo 700, refunded; the backoff in
 * queue mode), a message kind the gateway cannot send (415 api_codigo 703,
 * nothing charged), and the inbound endpoint of a gateway that takes no HTTP
 * events.
 */

const DEST = '525598765432';
const SENT = ['enviado', 'entregado', 'leido'];

let s: TestServer;
const sim = () => s.core.gateway as SimGateway;
const clock = () => s.clock as ManualClock;

beforeAll(async () => {
  // random 0.5: the transient backoff is exactly 5 s (5 s x (0.8 + 0.4 x 0.5)).
  s = await startTestServer({ clock: new ManualClock(Date.now()), random: () => 0.5, queue: { gapMinMs: 0, gapMaxMs: 0 }, simDeliveryMs: 20, simReadMs: 40 });
});
afterAll(async () => {
  await s?.stop();
});
afterEach(() => {
  sim().setOutage(false);
  sim().rateLimitNext(0);
});

/** A queued send's answer (helpers/expect.ts), and its msg_id. */
function expectQueued(r: ApiResponse): string {
  expectOk(r, { modo: 'cola' });
  return r.body.msg_id as string;
}

/** The msg_id a refused direct send names in its error text. */
function msgIdOf(r: ApiResponse): string {
  const m = /msg_id ([0-9a-f-]{36})/.exec(r.body.error as string);
  if (!m) throw new Error(`no msg_id in ${r.text}`);
  return m[1]!;
}

async function historialErrors(line: Line): Promise<Array<{ msg_id: string; estado: string; error: string }>> {
  const h = await api(s.url, 'GET', '/api/historial_listar.php?estado=error', { key: line.celularKey });
  expect(h.status, h.text).toBe(200);
  return h.body.mensajes;
}

/** Asserts the messages are still `pendiente` after a full look of the worker at the clock's time. */
async function staysPending(ids: string[]): Promise<void> {
  await s.stepQueue();
  for (const id of ids) expect((await mensaje(s, id)).estado, id).toBe('pendiente');
}

describe('the network rate-limits the line', () => {
  it('direct: 429 api_codigo 702 with retry_after 30, the charge refunded, the message in error in historial; the next send goes', async () => {
    const L = await linkedLine(s, { saldo: 3 });
    expect((await saldos(s, L)).global).toBe(3);
    sim().rateLimitNext(1);
    const r = await send(s, L, TEXT, { destinatario: DEST, mensaje: uniqueText(), directo: 1 });
    expectError(r, 429, 702);
    expect(r.body.api_texto).toBe('GATEWAY_LIMITADO');
    expect(r.body.retry_after).toBe(30);
    expect(r.headers.get('retry-after')).toBe('30');
    expect(r.body.error).toMatch(/refunded/);
    expect(r.body.saldo).toBe(0); // the line's own balance; the charge was on the global one
    const id = msgIdOf(r);
    expect(await mensaje(s, id)).toMatchObject({ estado: 'error', modo: 'directo', cobrado: 0, gateway_msg_id: null });
    expect((await saldos(s, L)).global).toBe(3);
    expect(await historialErrors(L)).toEqual([expect.objectContaining({ msg_id: id, estado: 'error', error: expect.stringMatching(/^rate-overlimit/) })]);

    const ok = await send(s, L, TEXT, { destinatario: DEST, mensaje: uniqueText(), directo: 1 });
    expect(ok.status, ok.text).toBe(200);
    expect(ok.body).toMatchObject({ modo: 'directo', estado: 'enviado' });
    expect((await saldos(s, L)).global).toBe(2);
  });

  it('queue: the head stays pendiente with error rate-limited and proximo_intento_at = now + 30 s; the line waits, others do not; sent once the clock is there', async () => {
    const L = await linkedLine(s, { saldo: 5 });
    const O = await linkedLine(s, { saldo: 5 });
    const sentBefore = sim().sentCount;
    sim().rateLimitNext(1);
    const t0 = clock().now();
    const first = expectQueued(await send(s, L, TEXT, { destinatario: DEST, mensaje: uniqueText('primero') }));
    await until(async () => (await mensaje(s, first)).error !== null, { what: 'the rate-limited attempt' });
    const second = expectQueued(await send(s, L, TEXT, { destinatario: DEST, mensaje: uniqueText('segundo') }));

    const m1 = await mensaje(s, first);
    expect(m1).toMatchObject({ estado: 'pendiente', intentos: 1, lease_until: null, gateway_msg_id: null, cobrado: 1 });
    expect(m1.error).toMatch(/^rate-limited/);
    expect(m1.proximo_intento_at).toBe(t0 + 30_000);
    expect(sim().sentCount).toBe(sentBefore);

    // Another line is not held by this one's pause.
    const other = expectQueued(await send(s, O, TEXT, { destinatario: DEST, mensaje: uniqueText() }));
    await waitEstado(s, other, SENT);

    // Not the 5 s backoff of a transient failure: still waiting well after it.
    clock().advance(29_000);
    await staysPending([first, second]);
    expect((await mensaje(s, first)).intentos).toBe(1);

    clock().advance(1_000);
    await s.stepQueue();
    const a = await waitEstado(s, first, SENT);
    const b = await waitEstado(s, second, SENT);
    expect(a).toMatchObject({ intentos: 2, error: null, cobrado: 1 });
    expect(a.enviado_at!).toBeGreaterThanOrEqual(t0 + 30_000);
    expect(b.enviado_at!).toBeGreaterThanOrEqual(a.enviado_at!);
    // Charged once each, nothing refunded.
    expect((await saldos(s, L)).global).toBe(3);
  });
});

describe('the gateway cannot be reached', () => {
  it('direct: 502 api_codigo 700, the charge refunded, the message in error', async () => {
    const L = await linkedLine(s, { saldo: 2 });
    sim().setOutage(true);
    const r = await send(s, L, TEXT, { destinatario: DEST, mensaje: uniqueText(), directo: 1 });
    expectError(r, 502, 700);
    expect(r.body).not.toHaveProperty('retry_after');
    const id = msgIdOf(r);
    expect(await mensaje(s, id)).toMatchObject({ estado: 'error', cobrado: 0, error: expect.stringMatching(/unreachable/) });
    expect((await saldos(s, L)).global).toBe(2);
    expect(await historialErrors(L)).toEqual([expect.objectContaining({ msg_id: id, estado: 'error' })]);
  });

  it('queue: retried after the 5 s backoff, then sent; nothing refunded', async () => {
    const L = await linkedLine(s, { saldo: 2 });
    sim().setOutage(true);
    const t0 = clock().now();
    const id = expectQueued(await send(s, L, TEXT, { destinatario: DEST, mensaje: uniqueText() }));
    await until(async () => (await mensaje(s, id)).intentos === 1, { what: 'the failed attempt' });
    const m = await mensaje(s, id);
    expect(m).toMatchObject({ estado: 'pendiente', error: expect.stringMatching(/unreachable/) });
    expect(m.error).not.toMatch(/^rate-limited/);
    expect(m.proximo_intento_at).toBe(t0 + 5_000);
    sim().setOutage(false);
    clock().advance(5_000);
    await s.stepQueue();
    expect(await waitEstado(s, id, SENT)).toMatchObject({ intentos: 2, error: null, cobrado: 1 });
    expect((await saldos(s, L)).global).toBe(1);
  });
});

describe('a message kind the gateway cannot send', () => {
  it('415 api_codigo 703 in both modes, before any charge or record', async () => {
    const L = await linkedLine(s, { saldo: 2 });
    const unsupported = sim().capabilities.unsupported;
    unsupported.sticker = 'no sticker route';
    try {
      for (const directo of [1, 0]) {
        const r = await send(s, L, '/api/mensaje_enviar_sticker.php', { destinatario: DEST, url: 'http://127.0.0.1:9/sticker.webp', directo });
        expectError(r, 415, 703);
        expect(r.body.error).toContain('sticker');
        expect(r.body.error).toContain('no sticker route');
      }
      expect((await saldos(s, L)).global).toBe(2);
      const h = await api(s.url, 'GET', '/api/historial_listar.php', { key: L.celularKey });
      expect(h.body.mensajes).toEqual([]);
      // Other kinds still go.
      const t = await send(s, L, TEXT, { destinatario: DEST, mensaje: uniqueText(), directo: 1 });
      expect(t.status, t.text).toBe(200);
    } finally {
      delete unsupported.sticker;
    }
  });
});

describe('POST /gateway/<gateway>/<instancia> on a sim server', () => {
  it("404 JSON errors: the simulator takes no HTTP events, and no other gateway is this server's", async () => {
    const L = await linkedLine(s);
    const inst = `pasarela-${L.celularId}`;
    for (const path of [`/gateway/sim/${inst}`, '/gateway/sim/x', '/gateway/evolution/x', '/gateway/waha/x', `/gateway/evolution/${inst}/messages-upsert`]) {
      const r = await api(s.url, 'POST', path, { json: { event: 'messages.upsert', instance: inst, data: {} } });
      expectError(r, 404, 104);
      expect(r.headers.get('content-type')).toMatch(/^application\/json/);
    }
    const raw = await api(s.url, 'POST', '/gateway/sim/x', { raw: 'not json', contentType: 'text/plain' });
    expectError(raw, 404, 104);
    expect(raw.body.error).toMatch(/sim/);
    // Nothing reached the line.
    expect(await s.core.store.getCelular(L.celularId)).toMatchObject({ estado: 'activo', last_status: 'connected' });
  });
});
