import { existsSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/core/time/clock.js';
import type { MessageStatusEvent } from '../../src/core/events/events.js';
import { GatewayFailure } from '../../src/core/ports/gateway.js';
import { api, startTestServer, tempDir, type TestServer } from '../helpers/server.js';
import { expectError, expectOk } from '../helpers/expect.js';
import {
  admin,
  b64,
  editCelular,
  linkedLine,
  mensaje,
  PNG,
  saldos,
  send,
  startMediaServer,
  TEXT,
  uniqueText,
  waitEstado,
  type MediaServer,
} from './send-helpers.js';
import { until } from '../helpers/poll.js';

/**
 * The humanized queue (docs/design.md §5, §6) over HTTP: per-line order, the gap
 * between two sends, independence of lines, the TTL, permanent gateway
 * failures, the pending cap, and the message states and `message.status`
 * events through the receipts of the simulated network.
 */

/** Asserts the messages are still `pendiente` after a full look of the worker at the clock's time. */
async function staysPending(s: TestServer, ids: string[]): Promise<void> {
  await s.stepQueue();
  for (const id of ids) expect((await mensaje(s, id)).estado, id).toBe('pendiente');
}

const DEST = '525598765432';
const SENT = ['enviado', 'entregado', 'leido'];
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const at = (day: number, h: number, m = 0, sec = 0) => Date.UTC(2026, 3, day, h, m, sec);
const opts = { tz: 'UTC', allowPrivateUrls: true, simDeliveryMs: 20, simReadMs: 40 } as const;

let media: MediaServer;
beforeAll(async () => {
  media = await startMediaServer();
});
afterAll(async () => {
  await media?.close();
});

describe('order, independence and events (gap 0)', () => {
  let s: TestServer;
  const events: MessageStatusEvent[] = [];
  let unsub: () => void = () => {};
  const clock = () => s.clock as ManualClock;
  beforeAll(async () => {
    s = await startTestServer({ ...opts, clock: new ManualClock(at(1, 12)), queue: { gapMinMs: 0, gapMaxMs: 0 } });
    unsub = s.core.bus.subscribe('message.status', (e) => events.push(e));
  });
  afterAll(async () => {
    unsub();
    await s?.stop();
  });
  const of = (msgId: string) => events.filter((e) => e.msg_id === msgId);

  it('the messages of one line are sent in acceptance order; a line held by its hours never delays another', async () => {
    const L = await linkedLine(s);
    const O = await linkedLine(s);
    await editCelular(s, L, { hora_inicio_permitido: '13:00', hora_fin_permitido: '14:00' });
    const ids: string[] = [];
    const bodies: Array<[string, Record<string, unknown>]> = [
      [TEXT, { mensaje: uniqueText('uno') }],
      ['/api/mensaje_enviar_imagen.php', { url: `${media.base}/img.png`, caption: 'dos' }],
      [TEXT, { mensaje: uniqueText('tres') }],
      ['/api/mensaje_enviar_imagen_base64.php', { imageBase64: b64(PNG), caption: 'cuatro' }],
      [TEXT, { mensaje: uniqueText('cinco') }, { form: true }] as unknown as [string, Record<string, unknown>],
      [TEXT, { mensaje: uniqueText('seis') }],
    ];
    for (const [path, body] of bodies) {
      const r = await send(s, L, path, { destinatario: DEST, ...body });
      expectOk(r, { modo: 'cola' });
      ids.push(r.body.msg_id);
    }
    // The other line goes at once.
    const o = await send(s, O, TEXT, { destinatario: DEST, mensaje: uniqueText() });
    expectOk(o, { modo: 'cola' });
    await waitEstado(s, o.body.msg_id, SENT);
    // A second before the window opens, the line still waits.
    clock().set(at(1, 12, 59, 59));
    await staysPending(s, ids);

    clock().set(at(1, 13));
    await s.stepQueue();
    for (const id of ids) await waitEstado(s, id, SENT);
    const sentOrder = events.filter((e) => e.estado === 'enviado' && ids.includes(e.msg_id)).map((e) => e.msg_id);
    expect(sentOrder).toEqual(ids);
    const rows = await Promise.all(ids.map((id) => mensaje(s, id)));
    for (let i = 1; i < rows.length; i++) expect(rows[i]!.enviado_at!).toBeGreaterThanOrEqual(rows[i - 1]!.enviado_at!);
    for (const r of rows) expect(r.enviado_at).toBeGreaterThanOrEqual(at(1, 13));
  });

  it('queue mode: pendiente -> enviado -> entregado -> leido, one message.status per change with the docs/design.md §6 fields', async () => {
    const L = await linkedLine(s);
    const r = await send(s, L, TEXT, { destinatario: '+52 55 9876 5432', mensaje: uniqueText() });
    expectOk(r, { modo: 'cola' });
    const id = r.body.msg_id as string;
    const m = await waitEstado(s, id, 'leido');
    await until(() => of(id).length >= 4, { what: 'four events' });
    const evs = of(id);
    expect(evs.map((e) => [e.estado_anterior, e.estado])).toEqual([
      [null, 'pendiente'],
      ['pendiente', 'enviado'],
      ['enviado', 'entregado'],
      ['entregado', 'leido'],
    ]);
    for (const e of evs) {
      // The bus adds modo (for metrics) to §6's fields; webhooks deliver the journal's copy without it (webhook-delivery.test.ts).
      expect(Object.keys(e).sort()).toEqual([
        'celular_id',
        'cliente_id',
        'destinatario',
        'error',
        'error_clase',
        'estado',
        'estado_anterior',
        'fecha',
        'gateway_msg_id',
        'modo',
        'msg_id',
        'tipo',
      ]);
      expect(e).toMatchObject({
        msg_id: id,
        celular_id: L.celularId,
        cliente_id: L.clienteId,
        destinatario: DEST,
        tipo: 'texto',
        modo: 'cola',
        error: null,
        error_clase: null,
      });
      expect(e.fecha).toMatch(ISO);
    }
    expect(evs[0]!.gateway_msg_id).toBeNull();
    for (const e of evs.slice(1)) expect(e.gateway_msg_id).toBe(m.gateway_msg_id);
    expect(m.entregado_at).not.toBeNull();
    expect(m.leido_at).not.toBeNull();

    const h = await api(s.url, 'GET', '/api/historial_listar.php', { key: L.celularKey });
    expect(h.body.mensajes[0]).toMatchObject({ msg_id: id, estado: 'leido', modo: 'cola', gateway_msg_id: m.gateway_msg_id });
    for (const k of ['created_at', 'enviado_at', 'entregado_at', 'leido_at']) expect(h.body.mensajes[0][k]).toMatch(ISO);
  });

  it('direct mode: the same chain of events; the answer already says enviado', async () => {
    const L = await linkedLine(s);
    const r = await send(s, L, '/api/mensaje_enviar_imagen.php', { destinatario: DEST, url: `${media.base}/img.jpg`, directo: 1 });
    expect(r.status, r.text).toBe(200);
    expect(r.body).toMatchObject({ modo: 'directo', estado: 'enviado' });
    const id = r.body.msg_id as string;
    await waitEstado(s, id, 'leido');
    await until(() => of(id).length >= 4, { what: 'four events' });
    expect(of(id).map((e) => e.estado)).toEqual(['pendiente', 'enviado', 'entregado', 'leido']);
    expect(of(id).map((e) => e.estado_anterior)).toEqual([null, 'pendiente', 'enviado', 'entregado']);
    expect(of(id)[1]!.gateway_msg_id).toBe(r.body.gateway_msg_id);
    expect(of(id)[0]!.tipo).toBe('imagen');
  });

  // A hold on a line's state (hours, caps) is looked at again within a second: widening the window
  // or raising a cap releases the waiting messages then, not when the old window would have opened.
  it('widening the allowed hours releases the messages waiting for them', async () => {
    const L = await linkedLine(s);
    clock().set(at(1, 13, 30));
    await editCelular(s, L, { hora_inicio_permitido: '15:00', hora_fin_permitido: '16:00' });
    const r = await send(s, L, TEXT, { destinatario: DEST, mensaje: uniqueText() });
    expectOk(r, { modo: 'cola' });
    await staysPending(s, [r.body.msg_id]);
    await editCelular(s, L, { hora_inicio_permitido: '00:00', hora_fin_permitido: '23:59' });
    await waitEstado(s, r.body.msg_id, SENT, 2_000);
  });

  it('a direct send refused by the gateway: pendiente then error, with the reason, in the events', async () => {
    const L = await linkedLine(s);
    const dead = '525500005555';
    await admin(s, 'POST', '/admin/sim/fail', { numero: dead, motivo: 'numero inexistente' });
    const r = await send(s, L, TEXT, { destinatario: dead, mensaje: uniqueText(), directo: 1 });
    expectError(r, 502, 704);
    const id = /msg_id ([0-9a-f-]{36})/.exec(r.body.error)![1]!;
    expect(of(id).map((e) => [e.estado_anterior, e.estado, e.error, e.error_clase])).toEqual([
      [null, 'pendiente', null, null],
      ['pendiente', 'error', 'refused for good: numero inexistente', 'rechazado'],
    ]);
  });

  it('a permanent gateway failure ends a queued message as error at once, with the reason, refunded; one error event', async () => {
    const L = await linkedLine(s, { saldo: 2 });
    const dead = '525500004444';
    expect((await admin(s, 'POST', '/admin/sim/fail', { numero: dead, motivo: 'el destinatario no usa la red' })).status).toBe(200);
    const r = await send(s, L, TEXT, { destinatario: dead, mensaje: uniqueText() });
    expectOk(r, { modo: 'cola' });
    const m = await waitEstado(s, r.body.msg_id, 'error');
    expect(m.error).toMatch(/el destinatario no usa la red/);
    expect(m.error_clase).toBe('rechazado');
    expect(m.cobrado).toBe(0);
    expect(await saldos(s, L)).toMatchObject({ global: 2, consumo: 0 });
    await until(() => of(r.body.msg_id).length >= 2, { what: 'error event' });
    expect(of(r.body.msg_id).map((e) => [e.estado_anterior, e.estado])).toEqual([
      [null, 'pendiente'],
      ['pendiente', 'error'],
    ]);
    expect(of(r.body.msg_id)[1]!.error).toMatch(/no usa la red/);
    const h = await api(s.url, 'GET', '/api/historial_listar.php?estado=error', { key: L.celularKey });
    expect(h.body.mensajes).toEqual([expect.objectContaining({ msg_id: r.body.msg_id, estado: 'error', error: expect.stringMatching(/no usa la red/) })]);
  });

  it('a transient gateway failure (gateway down) is retried after a backoff of about 5 s, then sent; nothing refunded twice', async () => {
    const L = await linkedLine(s, { saldo: 1 });
    const gw = s.core.gateway;
    const real = gw.send.bind(gw);
    let failures = 1;
    gw.send = async (instancia, msg) => {
      if (msg.destinatario === '525522223333' && failures-- > 0) throw new GatewayFailure('gateway timeout', 'transient');
      return real(instancia, msg);
    };
    try {
      const r = await send(s, L, TEXT, { destinatario: '525522223333', mensaje: uniqueText() });
      expectOk(r, { modo: 'cola' });
      await until(async () => (await mensaje(s, r.body.msg_id)).intentos === 1, { what: 'the first attempt' });
      const m1 = await mensaje(s, r.body.msg_id);
      expect(m1).toMatchObject({ estado: 'pendiente', error: 'gateway timeout' });
      expect(m1.proximo_intento_at! - s.clock.now()).toBeGreaterThanOrEqual(4_000);
      expect(m1.proximo_intento_at! - s.clock.now()).toBeLessThanOrEqual(6_000);
      // Not before its retry time (at least 4 s away).
      clock().advance(3_999);
      await staysPending(s, [r.body.msg_id]);
      clock().advance(2_001);
      await s.stepQueue();
      const m = await waitEstado(s, r.body.msg_id, SENT);
      expect(m).toMatchObject({ intentos: 2, error: null, cobrado: 1 });
      expect((await saldos(s, L)).global).toBe(0);
    } finally {
      gw.send = real;
    }
  });

  it("a queued message whose line is deleted ends as error; the celular's charge goes back to the global balance; its file is removed", async () => {
    const L = await linkedLine(s, { saldo: 0 });
    expect((await admin(s, 'POST', '/admin/saldo', { cliente_id: L.clienteId, celular_id: L.celularId, monto: 2 })).status).toBe(200);
    await editCelular(s, L, { max_envios_por_minuto: 1 });
    expect((await send(s, L, TEXT, { destinatario: DEST, mensaje: uniqueText(), directo: 1 })).status).toBe(200);
    const r = await send(s, L, '/api/mensaje_enviar_imagen_base64.php', { destinatario: DEST, imageBase64: b64(PNG) });
    expectOk(r, { modo: 'cola' });
    expect((await mensaje(s, r.body.msg_id)).cargo).toBe('celular');
    const file = join(s.dataDir, 'tmp', `${r.body.msg_id}.bin`);
    expect(existsSync(file)).toBe(true);
    const del = await api(s.url, 'POST', `/api/celular_eliminar.php?id=${L.celularId}`, { key: L.clientKey });
    expect(del.status, del.text).toBe(200);
    clock().advance(61_000);
    await s.stepQueue();
    const m = await waitEstado(s, r.body.msg_id, 'error');
    expect(m.error).toMatch(/deleted/);
    await until(() => !existsSync(file), { what: 'the file removed', timeoutMs: 2000 });
    const saldo = await api(s.url, 'GET', '/api/saldo.php', { key: L.clientKey });
    expect(saldo.body.saldo_global).toBe(1);
  });
});

describe('the gap between two sends of a line', () => {
  let s: TestServer;
  const clock = () => s.clock as ManualClock;
  beforeAll(async () => {
    s = await startTestServer({ ...opts, clock: new ManualClock(at(2, 9)), random: () => 0.5, queue: { gapMinMs: 10_000, gapMaxMs: 10_000 } });
  });
  afterAll(async () => {
    await s?.stop();
  });

  it('after each send the line waits the gap (10 s here) before the next one', async () => {
    const L = await linkedLine(s);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const r = await send(s, L, TEXT, { destinatario: DEST, mensaje: uniqueText() });
      expectOk(r, { modo: 'cola' });
      ids.push(r.body.msg_id);
    }
    const first = await waitEstado(s, ids[0]!, SENT);
    // The looks in the pause leave the line's head unread (D-143); the one at its end reads it.
    const store = s.core.store;
    const look = store.queueLook.bind(store);
    const unread: number[][] = [];
    store.queueLook = async (now, lines) => {
      unread.push([...(lines ?? [])]);
      return look(now, lines);
    };
    clock().advance(9_999);
    await staysPending(s, ids.slice(1));
    expect(unread.at(-1)).toContain(L.celularId);
    clock().advance(1);
    // The look this step makes (the send it starts pokes another after it, in the next pause).
    const made = unread.length;
    await s.stepQueue();
    const second = await waitEstado(s, ids[1]!, SENT);
    expect(unread[made]).not.toContain(L.celularId);
    store.queueLook = look;
    expect(second.enviado_at! - first.enviado_at!).toBe(10_000);
    expect((await mensaje(s, ids[2]!)).estado).toBe('pendiente');
    clock().advance(10_000);
    await s.stepQueue();
    await waitEstado(s, ids[2]!, SENT);
  });
});

describe('TTL and pending cap (ttlMs 1000, maxPending 2)', () => {
  let s: TestServer;
  const events: MessageStatusEvent[] = [];
  let unsub: () => void = () => {};
  const clock = () => s.clock as ManualClock;
  beforeAll(async () => {
    s = await startTestServer({ ...opts, clock: new ManualClock(at(3, 12)), queue: { gapMinMs: 0, gapMaxMs: 0, ttlMs: 1000, maxPending: 2 } });
    unsub = s.core.bus.subscribe('message.status', (e) => events.push(e));
  });
  afterAll(async () => {
    unsub();
    await s?.stop();
  });

  it('more than maxPending (2) waiting on a line: 429 api_codigo 305 with retry_after; not charged; other lines unaffected', async () => {
    const L = await linkedLine(s, { saldo: 5 });
    await editCelular(s, L, { hora_inicio_permitido: '13:00', hora_fin_permitido: '14:00' });
    const text = uniqueText('lleno');
    for (let i = 0; i < 2; i++) expectOk(await send(s, L, TEXT, { destinatario: DEST, mensaje: i === 0 ? text : uniqueText() }), { modo: 'cola' });
    const r = await send(s, L, TEXT, { destinatario: DEST, mensaje: text });
    expectError(r, 429, 305);
    expect(r.body.retry_after).toBeGreaterThan(0);
    expect(r.headers.get('retry-after')).toBe(String(r.body.retry_after));
    expect((await saldos(s, L)).global).toBe(3);
    // The refused one gave its duplicate count back.
    expect(r.body).not.toHaveProperty('codigo');
    // Direct sends do not wait in the queue; they are refused by the hours instead.
    expectError(await send(s, L, TEXT, { destinatario: DEST, mensaje: uniqueText(), directo: 1 }), 403, 303);
    const O = await linkedLine(s);
    expectOk(await send(s, O, TEXT, { destinatario: DEST, mensaje: uniqueText() }), { modo: 'cola' });
  });

  it('a message that cannot be sent within the TTL (line suspended after acceptance) ends as error with a reason and is refunded', async () => {
    const L = await linkedLine(s, { saldo: 3 });
    // Cap 1 a minute, used up by a direct send: the queued one has to wait.
    await editCelular(s, L, { max_envios_por_minuto: 1 });
    expect((await send(s, L, TEXT, { destinatario: DEST, mensaje: uniqueText(), directo: 1 })).status).toBe(200);
    const r = await send(s, L, TEXT, { destinatario: DEST, mensaje: uniqueText() });
    expectOk(r, { modo: 'cola' });
    expect((await saldos(s, L)).global).toBe(1);
    await staysPending(s, [r.body.msg_id]);
    await editCelular(s, L, { estado: 'suspendido' });
    clock().advance(61_000);
    await s.stepQueue();
    const m = await waitEstado(s, r.body.msg_id, 'error');
    expect(m.error).toMatch(/expired|TTL/i);
    expect(m.error_clase).toBe('no_enviado');
    expect(m.cobrado).toBe(0);
    expect((await saldos(s, L)).global).toBe(2);
    expect(events.filter((e) => e.msg_id === r.body.msg_id).map((e) => e.estado)).toEqual(['pendiente', 'error']);
  });

  // A line is never held past its head message's TTL: a message waiting for closed hours ends as
  // error when its TTL passes, instead of staying pendiente (counted and holding its credit) until
  // the window opens.
  it('a message held by closed hours ends as error once its TTL has passed, not when the window opens', async () => {
    const L = await linkedLine(s, { saldo: 1 });
    clock().set(at(4, 12));
    await editCelular(s, L, { hora_inicio_permitido: '13:00', hora_fin_permitido: '14:00' });
    const r = await send(s, L, TEXT, { destinatario: DEST, mensaje: uniqueText() });
    expectOk(r, { modo: 'cola' });
    await staysPending(s, [r.body.msg_id]);
    clock().advance(2_000);
    const m = await waitEstado(s, r.body.msg_id, 'error', 2_000);
    expect(m.error).toMatch(/expired/);
    expect((await saldos(s, L)).global).toBe(1);
  });
});

describe('durability across a restart', () => {
  it('a queued base64 message survives a restart of serve with its file; orphan temp files are swept; it is sent after', async () => {
    const dataDir = tempDir();
    try {
      const start = (time: number) => startTestServer({ ...opts, dataDir, clock: new ManualClock(time), queue: { gapMinMs: 0, gapMaxMs: 0 } });
      let s = await start(at(5, 12));
      const L = await linkedLine(s, { saldo: 1 });
      await editCelular(s, L, { hora_inicio_permitido: '13:00', hora_fin_permitido: '14:00' });
      const r = await send(s, L, '/api/mensaje_enviar_documento_base64.php', {
        destinatario: DEST,
        documentBase64: b64(Buffer.from('%PDF-1.4 restart')),
        filename: 'r.pdf',
      });
      expectOk(r, { modo: 'cola' });
      const tmp = join(dataDir, 'tmp');
      writeFileSync(join(tmp, 'huerfano.bin'), 'x');
      await s.stop();

      s = await start(at(5, 12, 30));
      try {
        expect(readdirSync(tmp)).toEqual([`${r.body.msg_id}.bin`]);
        expect((await mensaje(s, r.body.msg_id)).estado).toBe('pendiente');
        (s.clock as ManualClock).set(at(5, 13));
        const m = await waitEstado(s, r.body.msg_id, SENT);
        expect(m.intentos).toBe(1);
        await until(() => readdirSync(tmp).length === 0, { what: 'an empty tmp folder', timeoutMs: 2000 });
      } finally {
        await s.stop();
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
