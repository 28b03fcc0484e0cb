import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/core/time/clock.js';
import { api, startTestServer, type ApiResponse, type TestServer } from '../helpers/server.js';
import { expectError, expectOk } from '../helpers/expect.js';
import { b64, dataUri, editCelular, linkedLine, mensaje, PNG, send, startMediaServer, TEXT, uniqueText, waitEstado, type MediaServer } from './send-helpers.js';

/**
 * Limits of sends (docs/design.md §5): duplicate protection (3 within
 * 120 s, then a 300 s block of the whole line), the per-line caps in direct
 * and queue mode, and the allowed sending hours in the server's zone.
 */

function expect429(r: ApiResponse, apiCodigo: number): void {
  expectError(r, 429, apiCodigo);
  expect(Number.isInteger(r.body.retry_after)).toBe(true);
  expect(r.body.retry_after).toBeGreaterThan(0);
  expect(r.headers.get('retry-after')).toBe(String(r.body.retry_after));
}

function expectDupBlock(r: ApiResponse, secondsLeft?: number): void {
  expect429(r, 306);
  expect(r.body).toMatchObject({ codigo: 306, detalle: expect.any(String) });
  expect(r.body.detalle).toMatch(/3 times within 120 s/);
  expect(r.body.detalle).toMatch(/300 s/);
  if (secondsLeft !== undefined) {
    expect(r.body.retry_after).toBe(secondsLeft);
    expect(r.body.detalle).toContain(`${secondsLeft} s remaining`);
  }
}

const DEST = '525598765432';
const OTHER = '14155552671';
const SENT = ['enviado', 'entregado', 'leido'];

let s: TestServer;
let media: MediaServer;
const clock = () => s.clock as ManualClock;
beforeAll(async () => {
  [s, media] = await Promise.all([
    startTestServer({ allowPrivateUrls: true, queue: { gapMinMs: 0, gapMaxMs: 0 }, simDeliveryMs: 20, simReadMs: 40 }),
    startMediaServer(),
  ]);
});
afterAll(async () => {
  await Promise.all([s?.stop(), media?.close()]);
});

describe('duplicate protection', () => {
  it('3 identical sends get count 1,2,3; the 4th is 429 codigo 306; then every send of the line is blocked for 300 s', async () => {
    const L = await linkedLine(s);
    const M = await linkedLine(s); // another line of another client: unaffected
    const text = uniqueText('dup');
    for (const n of [1, 2, 3]) expectOk(await send(s, L, TEXT, { destinatario: DEST, mensaje: text, directo: n === 2 ? 1 : 0 }), { count: n });
    expectDupBlock(await send(s, L, TEXT, { destinatario: DEST, mensaje: text }), 300);

    // Anything from that line: other text, other recipient, other type, direct mode.
    expectDupBlock(await send(s, L, TEXT, { destinatario: OTHER, mensaje: uniqueText() }), 300);
    expectDupBlock(await send(s, L, TEXT, { destinatario: DEST, mensaje: uniqueText(), directo: 1 }), 300);
    expectDupBlock(await send(s, L, '/api/mensaje_enviar_imagen_base64.php', { destinatario: OTHER, imageBase64: b64(PNG) }), 300);
    expectOk(await send(s, M, TEXT, { destinatario: DEST, mensaje: text }), { count: 1 });

    clock().advance(100_000);
    expectDupBlock(await send(s, L, TEXT, { destinatario: OTHER, mensaje: uniqueText() }), 200);
    clock().advance(199_000);
    expectDupBlock(await send(s, L, TEXT, { destinatario: OTHER, mensaje: uniqueText() }), 1);
    clock().advance(2_000); // 301 s after the block began
    expectOk(await send(s, L, TEXT, { destinatario: OTHER, mensaje: uniqueText() }), { count: 1 });
    expectOk(await send(s, L, TEXT, { destinatario: DEST, mensaje: text }), { count: 1 });
    // Only the 3 accepted + 2 after the block were stored.
    expect((await api(s.url, 'GET', '/api/historial_listar.php', { key: L.celularKey })).body.total).toBe(5);
  });

  it('identity per type: recipient, url+caption, url+filename, url; base64 is the bytes whatever the filename or encoding', async () => {
    const L = await linkedLine(s);
    const text = uniqueText('identidad');
    expectOk(await send(s, L, TEXT, { destinatario: DEST, mensaje: text }), { count: 1 });
    expectOk(await send(s, L, TEXT, { destinatario: OTHER, mensaje: text }), { count: 1 }); // other recipient
    expectOk(await send(s, L, TEXT, { destinatario: '+52 55 9876 5432', mensaje: text }), { count: 2 }); // same recipient, other form

    const img = `${media.base}/img.png`;
    expectOk(await send(s, L, '/api/mensaje_enviar_imagen.php', { destinatario: DEST, url: img, caption: 'uno' }), { count: 1 });
    expectOk(await send(s, L, '/api/mensaje_enviar_imagen.php', { destinatario: DEST, url: img, caption: 'dos' }), { count: 1 });
    expectOk(await send(s, L, '/api/mensaje_enviar_imagen.php', { destinatario: DEST, url: img, caption: 'uno' }), { count: 2 });

    const doc = `${media.base}/doc.pdf`;
    expectOk(await send(s, L, '/api/mensaje_enviar_documento.php', { destinatario: DEST, url: doc, filename: 'a.pdf' }), { count: 1 });
    expectOk(await send(s, L, '/api/mensaje_enviar_documento.php', { destinatario: DEST, url: doc, filename: 'b.pdf' }), { count: 1 });

    const mp3 = `${media.base}/audio.mp3`;
    expectOk(await send(s, L, '/api/mensaje_enviar_audio.php', { destinatario: DEST, url: mp3 }), { count: 1 });
    expectOk(await send(s, L, '/api/mensaje_enviar_audio.php', { destinatario: DEST, url: mp3, ptt: 1, caption: 'otra' }), { count: 2 });

    const path = '/api/mensaje_enviar_imagen_base64.php';
    expectOk(await send(s, L, path, { destinatario: DEST, imageBase64: b64(PNG), filename: 'uno.png', caption: 'a' }), { count: 1 });
    expectOk(await send(s, L, path, { destinatario: DEST, imageBase64: dataUri('image/png', PNG), filename: 'dos.png', caption: 'b' }), { count: 2 });
    expectOk(await send(s, L, path, { destinatario: DEST, data_base64: b64(PNG), mime: 'image/png', filename: 'tres.png' }), { count: 3 });
    expectDupBlock(await send(s, L, path, { destinatario: DEST, imageBase64: b64(PNG), filename: 'cuatro.png' }), 300);
  });
});

describe('caps', () => {
  it('direct mode: max_envios_por_minuto 2 -> the 3rd is 429 api_codigo 304 with retry_after <= 60; after 61 s it goes', async () => {
    const L = await linkedLine(s, { saldo: 10 });
    await editCelular(s, L, { max_envios_por_minuto: 2 });
    expectOk(await send(s, L, TEXT, { destinatario: DEST, mensaje: uniqueText(), directo: 1 }), { send: true });
    clock().advance(10_000);
    expectOk(await send(s, L, TEXT, { destinatario: DEST, mensaje: uniqueText(), directo: 1 }), { send: true });
    const r = await send(s, L, TEXT, { destinatario: DEST, mensaje: uniqueText(), directo: 1 });
    expect429(r, 304);
    expect(r.body.retry_after).toBeLessThanOrEqual(60);
    expect(r.body.retry_after).toBe(50); // the first send leaves the minute 50 s from now
    expect(r.body.error).toMatch(/per minute/);
    // Refused before any charge or record.
    expect((await api(s.url, 'GET', '/api/saldo.php', { key: L.celularKey })).body.saldo_global).toBe(8);
    clock().advance(51_000);
    expectOk(await send(s, L, TEXT, { destinatario: DEST, mensaje: uniqueText(), directo: 1 }), { send: true });
    clock().advance(61_000);
    expectOk(await send(s, L, TEXT, { destinatario: DEST, mensaje: uniqueText(), directo: 1 }), { send: true });
  });

  it('direct mode: max_envios_por_hora 3 -> the 4th is 429 304 with retry_after up to an hour', async () => {
    const L = await linkedLine(s);
    await editCelular(s, L, { max_envios_por_hora: 3, max_envios_por_minuto: 1000 });
    for (let i = 0; i < 3; i++) expectOk(await send(s, L, TEXT, { destinatario: DEST, mensaje: uniqueText(), directo: 1 }), { send: true });
    const r = await send(s, L, TEXT, { destinatario: DEST, mensaje: uniqueText(), directo: 1 });
    expect429(r, 304);
    expect(r.body.retry_after).toBe(3600);
    expect(r.body.error).toMatch(/per hour/);
  });

  it('direct mode: 6 parallel text sends with a cap of 2 per minute send exactly 2', async () => {
    const L = await linkedLine(s);
    await editCelular(s, L, { max_envios_por_minuto: 2 });
    const rs = await Promise.all(Array.from({ length: 6 }, () => send(s, L, TEXT, { destinatario: DEST, mensaje: uniqueText(), directo: 1 })));
    expect(rs.filter((r) => r.status === 200).length).toBe(2);
    for (const r of rs.filter((x) => x.status !== 200)) expect429(r, 304);
  });

  // Base64 sends await a temp-file write between the check and the record: the caps must still hold.
  it('direct mode: 6 parallel base64 sends with a cap of 2 per minute send exactly 2', async () => {
    const L = await linkedLine(s);
    await editCelular(s, L, { max_envios_por_minuto: 2 });
    const rs = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        send(s, L, '/api/mensaje_enviar_imagen_base64.php', { destinatario: DEST, imageBase64: b64(Buffer.concat([PNG, Buffer.from([i])])), directo: 1 }),
      ),
    );
    expect(rs.filter((r) => r.status === 200).length).toBe(2);
    expect(rs.filter((r) => r.status === 429).length).toBe(4);
  });

  it('queue mode: the 3rd is accepted and waits (pendiente) until the minute has passed, then it is sent', async () => {
    const L = await linkedLine(s);
    await editCelular(s, L, { max_envios_por_minuto: 2 });
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const r = await send(s, L, TEXT, { destinatario: DEST, mensaje: uniqueText() });
      expectOk(r, { count: 1 });
      expect(r.body.modo).toBe('cola');
      ids.push(r.body.msg_id);
    }
    const first = await waitEstado(s, ids[0]!, SENT);
    await waitEstado(s, ids[1]!, SENT);
    // Within the minute the worker holds the 3rd.
    clock().advance(59_000);
    await s.stepQueue();
    expect((await mensaje(s, ids[2]!)).estado).toBe('pendiente');
    clock().advance(2_000);
    // Poke the worker with another line's message instead of waiting for its poll.
    const P = await linkedLine(s);
    expectOk(await send(s, P, TEXT, { destinatario: DEST, mensaje: uniqueText() }), { send: true });
    const third = await waitEstado(s, ids[2]!, SENT);
    expect(third.enviado_at! - first.enviado_at!).toBeGreaterThanOrEqual(60_000);
  });
});

describe('allowed hours (tz UTC)', () => {
  let h: TestServer;
  const T0 = Date.UTC(2026, 2, 10, 12, 0, 0); // 12:00 UTC
  const hclock = () => h.clock as ManualClock;
  beforeAll(async () => {
    h = await startTestServer({
      tz: 'UTC',
      clock: new ManualClock(T0),
      allowPrivateUrls: true,
      queue: { gapMinMs: 0, gapMaxMs: 0 },
      simDeliveryMs: 20,
      simReadMs: 40,
    });
  });
  afterAll(async () => {
    await h?.stop();
  });

  it('window 13:00-14:00 at 12:00: direct 403 api_codigo 303 retry_after 3600; a queued one waits and goes at 13:00', async () => {
    const L = await linkedLine(h);
    await editCelular(h, L, { hora_inicio_permitido: '13:00', hora_fin_permitido: '14:00' });
    const d = await send(h, L, TEXT, { destinatario: DEST, mensaje: uniqueText(), directo: 1 });
    expectError(d, 403, 303);
    expect(d.body.retry_after).toBe(3600);
    expect(d.headers.get('retry-after')).toBe('3600');
    expect(d.body.error).toMatch(/13:00-14:00/);

    const q = await send(h, L, TEXT, { destinatario: DEST, mensaje: uniqueText() });
    expectOk(q, { count: 1 });
    // Its answer says from when it may go; one accepted inside the window says nothing of the kind.
    expect(q.body.envio_desde).toBe('2026-03-10T13:00:00.000Z');
    // Accepted a fraction of a second later, it still names the opening second, not a fraction past it.
    hclock().set(Date.UTC(2026, 2, 10, 12, 0, 0, 585));
    const q2 = await send(h, L, TEXT, { destinatario: DEST, mensaje: uniqueText() });
    expect(q2.body.envio_desde).toBe('2026-03-10T13:00:00.000Z');
    // A second before the window opens, the worker still holds it.
    hclock().set(Date.UTC(2026, 2, 10, 12, 59, 59));
    await h.stepQueue();
    expect((await mensaje(h, q.body.msg_id)).estado).toBe('pendiente');
    hclock().set(Date.UTC(2026, 2, 10, 13, 0, 0));
    await h.stepQueue();
    const m = await waitEstado(h, q.body.msg_id, SENT);
    expect(m.enviado_at).toBeGreaterThanOrEqual(Date.UTC(2026, 2, 10, 13, 0, 0));

    // An HH:MM end includes its whole minute.
    hclock().set(Date.UTC(2026, 2, 10, 14, 0, 30));
    expectOk(await send(h, L, TEXT, { destinatario: DEST, mensaje: uniqueText(), directo: 1 }), { send: true });
    const inside = await send(h, L, TEXT, { destinatario: DEST, mensaje: uniqueText() });
    expectOk(inside, { count: 1 });
    expect(inside.body).not.toHaveProperty('envio_desde');
    hclock().set(Date.UTC(2026, 2, 10, 14, 1, 0));
    const late = await send(h, L, TEXT, { destinatario: DEST, mensaje: uniqueText(), directo: 1 });
    expectError(late, 403, 303);
    expect(late.body.retry_after).toBe(23 * 3600 - 60);
  });

  it('a window crossing midnight (22:00-06:00) is open at 23:30 and 05:00, closed at 12:00', async () => {
    const L = await linkedLine(h);
    await editCelular(h, L, { hora_inicio_permitido: '22:00', hora_fin_permitido: '06:00' });
    hclock().set(Date.UTC(2026, 2, 11, 23, 30, 0));
    expectOk(await send(h, L, TEXT, { destinatario: DEST, mensaje: uniqueText(), directo: 1 }), { send: true });
    hclock().set(Date.UTC(2026, 2, 12, 5, 0, 0));
    expectOk(await send(h, L, TEXT, { destinatario: DEST, mensaje: uniqueText(), directo: 1 }), { send: true });
    hclock().set(Date.UTC(2026, 2, 12, 12, 0, 0));
    const r = await send(h, L, TEXT, { destinatario: DEST, mensaje: uniqueText(), directo: 1 });
    expectError(r, 403, 303);
    expect(r.body.retry_after).toBe(10 * 3600);
  });
});

describe('allowed hours in another zone (tz America/Mexico_City, UTC-6)', () => {
  let h: TestServer;
  beforeAll(async () => {
    h = await startTestServer({
      tz: 'America/Mexico_City',
      clock: new ManualClock(Date.UTC(2026, 5, 1, 12, 0, 0)),
      queue: { gapMinMs: 0, gapMaxMs: 0 },
      simDeliveryMs: 20,
      simReadMs: 40,
    });
  });
  afterAll(async () => {
    await h?.stop();
  });

  it('12:00 UTC is 06:00 there: a 05:00-07:00 window is open, a 07:00-08:00 one opens in an hour', async () => {
    const L = await linkedLine(h);
    await editCelular(h, L, { hora_inicio_permitido: '05:00', hora_fin_permitido: '07:00' });
    expectOk(await send(h, L, TEXT, { destinatario: DEST, mensaje: uniqueText(), directo: 1 }), { send: true });
    await editCelular(h, L, { hora_inicio_permitido: '07:00:00', hora_fin_permitido: '08:00' });
    const r = await send(h, L, TEXT, { destinatario: DEST, mensaje: uniqueText(), directo: 1 });
    expectError(r, 403, 303);
    expect(r.body.retry_after).toBe(3600);
    expect(r.body.error).toContain('America/Mexico_City');
  });
});
