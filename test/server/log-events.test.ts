import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/core/time/clock.js';
import { EventBus, type WebhookAttemptEvent } from '../../src/core/events/events.js';
import { logBusEvents, loggedReason, WEBHOOK_FAILING_AFTER } from '../../src/server/log-events.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { expectError, expectOk } from '../helpers/expect.js';
import { admin, linkedLine, send, TEXT, uniqueText } from './send-helpers.js';
import { setWebhook, startReceiver, type Receiver } from './webhook-helpers.js';
import { until } from '../helpers/poll.js';

/**
 * The operator's events in the log (docs/logs.md, "Events"), over real HTTP:
 * a line's session changing state, a message ending in error, a webhook
 * receiver failing and recovering. Then the rules of the module itself on a
 * bus of its own: one warning a streak, given-up deliveries, bounded memory.
 */

type Line = Record<string, any>;
const entries = (s: TestServer): Line[] => s.logs.map((l) => JSON.parse(l) as Line);
const events = (s: TestServer, name: string): Line[] => entries(s).filter((l) => l.event === name);

describe('over HTTP, on the system clock (webhook retries after 20 ms)', () => {
  let s: TestServer;
  let R: Receiver;
  /** Paths (clients) whose receiver answers 500. */
  const failing = new Set<string>();

  beforeAll(async () => {
    R = await startReceiver((h) => (failing.has(h.path) ? 500 : 200));
    s = await startTestServer({ allowPrivateUrls: true, webhookRetryMs: 20, clock: systemClock });
  });
  afterAll(async () => {
    await R?.close();
    await s?.stop();
  });

  it('a line linked, then logged out on the phone: info lines naming the line, its client and the change', async () => {
    const L = await linkedLine(s);
    await until(() => events(s, 'line.status').some((e) => e.celular_id === L.celularId && e.to === 'connected'), { what: 'the connected line' });
    expectOk(await admin(s, 'POST', '/admin/sim/logout', { celular_id: L.celularId }));
    await until(() => events(s, 'line.status').some((e) => e.celular_id === L.celularId && e.to === 'logged_out'), { what: 'the logged out line' });
    const out = events(s, 'line.status').find((e) => e.celular_id === L.celularId && e.to === 'logged_out')!;
    expect(out).toMatchObject({
      level: 30,
      msg: 'line status changed',
      cliente_id: L.clienteId,
      instancia: `pasarela-${L.celularId}`,
      from: 'connected',
      to: 'logged_out',
      estado: 'desconectado',
    });
  });

  it('a message ending in error: an info line with msg_id, line and reason; never the recipient nor the text', async () => {
    const L = await linkedLine(s);
    const dead = '525500007777';
    const texto = uniqueText('secreto del mensaje');
    expectOk(await admin(s, 'POST', '/admin/sim/fail', { numero: dead, motivo: `el numero ${dead} no existe` }));
    const r = await send(s, L, TEXT, { destinatario: dead, mensaje: texto, directo: 1 });
    expectError(r, 502, 704);
    const msgId = /msg_id ([0-9a-f-]{36})/.exec(r.body.error)![1]!;
    await until(() => events(s, 'message.error').some((e) => e.msg_id === msgId), { what: 'the message error line' });
    const line = events(s, 'message.error').find((e) => e.msg_id === msgId)!;
    expect(line).toMatchObject({
      level: 30,
      msg: 'message ended in error',
      celular_id: L.celularId,
      cliente_id: L.clienteId,
      tipo: 'texto',
      from: 'pendiente',
    });
    expect(line.error).toContain('el numero [number] no existe');
    const all = s.logs.join('\n');
    expect(all).not.toContain(dead);
    expect(all).not.toContain(texto);
  });

  it(`a webhook receiver answering 500: one warning after ${WEBHOOK_FAILING_AFTER} failed attempts in a row, an info line once it answers again`, async () => {
    const L = await linkedLine(s);
    const path = `/c${L.clienteId}`;
    failing.add(path);
    expectOk(await setWebhook(s, L.clientKey, { url: `${R.url}${path}`, eventos: ['messages.received'] }));
    for (let i = 0; i < WEBHOOK_FAILING_AFTER; i++)
      expectOk(await admin(s, 'POST', '/admin/sim/receive', { celular_id: L.celularId, de: '525511112222', texto: `hola ${i}` }));
    await until(() => events(s, 'webhook.failing').some((e) => e.cliente_id === L.clienteId), { what: 'the failing receiver warning' });
    const warned = events(s, 'webhook.failing').filter((e) => e.cliente_id === L.clienteId);
    expect(warned[0]).toMatchObject({
      level: 40,
      msg: 'webhook receiver failing',
      failures: WEBHOOK_FAILING_AFTER,
      evento: 'messages.received',
      status: 500,
      error: 'HTTP 500',
    });
    // More failures of the same streak warn no more.
    const before = R.hits.filter((h) => h.path === path).length;
    await until(() => R.hits.filter((h) => h.path === path).length > before, { what: 'another failed attempt' });
    failing.delete(path);
    await until(() => events(s, 'webhook.recovered').some((e) => e.cliente_id === L.clienteId), { what: 'the recovery line', timeoutMs: 10_000 });
    const recovered = events(s, 'webhook.recovered').find((e) => e.cliente_id === L.clienteId)!;
    expect(recovered).toMatchObject({ level: 30, msg: 'webhook receiver delivering again' });
    expect(recovered.failures).toBeGreaterThanOrEqual(WEBHOOK_FAILING_AFTER + 1);
    expect(events(s, 'webhook.failing').filter((e) => e.cliente_id === L.clienteId)).toHaveLength(1);
    expect(s.logs.join('\n')).not.toContain(R.url);
  });
});

describe('the rules, on a bus of their own', () => {
  const attempt = (cliente_id: number, estado: WebhookAttemptEvent['estado'], n = 1): WebhookAttemptEvent => ({
    cliente_id,
    evento: 'message.status',
    estado,
    status: estado === 'entregado' ? 200 : 503,
    error: estado === 'entregado' ? null : 'HTTP 503',
    duracion_ms: 5,
    intentos: n,
    edad_ms: 0,
  });
  const setup = (opts: { maxTracked?: number } = {}) => {
    const bus = new EventBus((err) => {
      throw err;
    });
    const lines: Array<{ level: 'info' | 'warn'; obj: Line; msg: string }> = [];
    logBusEvents(
      bus,
      { info: (obj, msg) => lines.push({ level: 'info', obj, msg }), warn: (obj, msg) => lines.push({ level: 'warn', obj, msg }) },
      { failingAfter: 3, ...opts },
    );
    return { bus, lines };
  };

  it('a delivery given up is a warning with the attempts and the last error; a success without a streak says nothing', () => {
    const { bus, lines } = setup();
    bus.publish('webhook.attempt', attempt(7, 'entregado'));
    expect(lines).toEqual([]);
    bus.publish('webhook.attempt', attempt(7, 'fallido', 8));
    expect(lines).toEqual([
      {
        level: 'warn',
        msg: 'webhook delivery given up',
        obj: { event: 'webhook.given_up', cliente_id: 7, evento: 'message.status', intentos: 8, status: 503, error: 'HTTP 503' },
      },
    ]);
  });

  it('streaks are per client; a recovery before the threshold says nothing; one warning per streak', () => {
    const { bus, lines } = setup();
    bus.publish('webhook.attempt', attempt(1, 'pendiente'));
    bus.publish('webhook.attempt', attempt(2, 'pendiente'));
    bus.publish('webhook.attempt', attempt(1, 'pendiente'));
    bus.publish('webhook.attempt', attempt(1, 'entregado'));
    expect(lines).toEqual([]);
    for (let i = 0; i < 5; i++) bus.publish('webhook.attempt', attempt(1, 'pendiente'));
    expect(lines.map((l) => [l.level, l.obj.event, l.obj.cliente_id, l.obj.failures])).toEqual([['warn', 'webhook.failing', 1, 3]]);
    bus.publish('webhook.attempt', attempt(1, 'entregado'));
    expect(lines.at(-1)).toMatchObject({ level: 'info', obj: { event: 'webhook.recovered', cliente_id: 1, failures: 5 } });
    // A new streak warns again.
    for (let i = 0; i < 3; i++) bus.publish('webhook.attempt', attempt(1, 'pendiente'));
    expect(lines.filter((l) => l.obj.event === 'webhook.failing')).toHaveLength(2);
  });

  it('the streaks kept are bounded: past the bound the oldest is forgotten', () => {
    const { bus, lines } = setup({ maxTracked: 10 });
    for (let c = 1; c <= 1000; c++) bus.publish('webhook.attempt', attempt(c, 'pendiente'));
    // Client 1's streak was dropped long ago: two more failures are not yet three.
    bus.publish('webhook.attempt', attempt(1, 'pendiente'));
    bus.publish('webhook.attempt', attempt(1, 'pendiente'));
    expect(lines).toEqual([]);
    // Client 1000's is still there.
    bus.publish('webhook.attempt', attempt(1000, 'pendiente'));
    bus.publish('webhook.attempt', attempt(1000, 'pendiente'));
    expect(lines.map((l) => l.obj.cliente_id)).toEqual([1000]);
  });

  it('messages: only the change into error is logged', () => {
    const { bus, lines } = setup();
    const m = {
      msg_id: 'm1',
      celular_id: 3,
      cliente_id: 1,
      destinatario: '5215512345678',
      tipo: 'texto',
      modo: 'cola' as const,
      gateway_msg_id: null,
      fecha: '',
    };
    bus.publish('message.status', { ...m, estado: 'enviado', estado_anterior: 'pendiente', error: null, error_clase: null });
    bus.publish('message.status', {
      ...m,
      estado: 'error',
      estado_anterior: 'enviado',
      error: 'jid 5215512345678@s.whatsapp.net not found',
      error_clase: 'fallido',
    });
    bus.publish('message.status', { ...m, estado: 'error', estado_anterior: 'error', error: 'again', error_clase: 'fallido' });
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({
      level: 'info',
      obj: { event: 'message.error', msg_id: 'm1', from: 'enviado', error: 'jid [number]@s.whatsapp.net not found' },
    });
    expect(JSON.stringify(lines)).not.toContain('5215512345678');
  });

  it('reasons: numbers masked (spaced too), addresses and short numbers kept, long reasons cut', () => {
    expect(loggedReason('+52 1 55 1234 5678 is not on the network')).toBe('[number] is not on the network');
    expect(loggedReason('connect ECONNREFUSED 10.0.0.12:8080')).toBe('connect ECONNREFUSED 10.0.0.12:8080');
    expect(loggedReason('HTTP 500')).toBe('HTTP 500');
    expect(loggedReason(null)).toBe(null);
    const long = loggedReason('x'.repeat(1000))!;
    expect(long.length).toBe(300);
    expect(long.endsWith('…')).toBe(true);
  });
});
