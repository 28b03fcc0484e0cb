import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ERRORS } from '../../src/core/api/errors.js';
import { expectError } from '../helpers/expect.js';
import { api, type ApiResponse, startTestServer, type TestServer } from '../helpers/server.js';
import { admin, b64, linkedLine, mensaje, PNG, TEXT, type Line } from './send-helpers.js';

/**
 * Text is stored and sent exactly as the client meant it, or refused: a form
 * read in its declared charset (UTF-8, or windows-1252 under its latin1 and
 * iso-8859-1 labels), any other charset 415; bytes that are not text, broken
 * percent escapes and unpaired surrogates 400 naming the field; over every
 * body reader (the plain routes', the streamed base64 and legacy bodies') and
 * the query string.
 */

const DEST = '525598765432';
const FORM = 'application/x-www-form-urlencoded';
const BAD = ERRORS.INVALID_PARAMS.codigo;
const UNSUPPORTED = ERRORS.UNSUPPORTED_BODY.codigo;

let s: TestServer;
let L: Line;
beforeAll(async () => {
  s = await startTestServer({ allowPrivateUrls: true, queue: { gapMinMs: 0, gapMaxMs: 0 }, simDeliveryMs: 20, simReadMs: 40 }, { inject: true });
  L = await linkedLine(s, { saldo: 1000 });
});
afterAll(async () => {
  await s?.stop();
});

let n = 0;
/** A distinct ASCII prefix, so no send is a duplicate of another. */
const tag = () => `t${++n}-`;

function raw(path: string, body: string | Buffer, contentType: string, key: string | undefined = L.celularKey): Promise<ApiResponse> {
  return api(s.url, 'POST', path, { key, raw: body, contentType });
}

/** The text as stored and as the client reads it back from the history. */
async function storedText(msgId: string): Promise<string | null> {
  const m = await mensaje(s, msgId);
  const h = await api(s.url, 'GET', `/api/historial_listar.php?celular_id=${L.celularId}&por_pagina=100`, { key: L.clientKey });
  expect(h.status, h.text).toBe(200);
  const listed = (h.body.mensajes as Array<{ msg_id: string; texto: string | null }>).find((x) => x.msg_id === msgId);
  expect(listed?.texto).toBe(m.texto);
  return m.texto;
}

function expectRefused(r: ApiResponse, status: number, codigo: number, message: RegExp): void {
  expectError(r, status, codigo);
  expect(r.body.error).toMatch(message);
}

describe('form bodies in their charset', () => {
  it('latin1 / iso-8859-1: caf%E9 is stored and listed as café', async () => {
    for (const cs of ['iso-8859-1', 'latin1', 'ISO-8859-1', '"iso-8859-1"']) {
      const t = tag();
      const r = await raw(TEXT, `destinatario=${DEST}&mensaje=${t}caf%E9`, `${FORM}; charset=${cs}`);
      expect(r.status, `${cs}: ${r.text}`).toBe(200);
      expect(await storedText(r.body.msg_id)).toBe(`${t}café`);
    }
  });

  it('windows-1252: %80 is the euro sign; raw bytes of the charset too', async () => {
    const t = tag();
    const r = await raw(TEXT, `destinatario=${DEST}&mensaje=${t}%80+100`, `${FORM}; charset=windows-1252`);
    expect(r.status, r.text).toBe(200);
    expect(await storedText(r.body.msg_id)).toBe(`${t}€ 100`);
    const body = Buffer.concat([Buffer.from(`destinatario=${DEST}&mensaje=${t}ni`), Buffer.from([0xf1]), Buffer.from('o')]);
    const b = await raw(TEXT, body, `${FORM}; charset=windows-1252`);
    expect(b.status, b.text).toBe(200);
    expect(await storedText(b.body.msg_id)).toBe(`${t}niño`);
  });

  it('another charset: 415 naming it, nothing stored', async () => {
    const before = (await api(s.url, 'GET', '/api/historial_listar.php', { key: L.clientKey })).body.total;
    for (const cs of ['shift_jis', 'utf-16', 'klingon']) {
      const r = await raw(TEXT, `destinatario=${DEST}&mensaje=${tag()}x`, `${FORM}; charset=${cs}`);
      expectRefused(r, 415, UNSUPPORTED, new RegExp(`charset "${cs}"`));
    }
    expect((await api(s.url, 'GET', '/api/historial_listar.php', { key: L.clientKey })).body.total).toBe(before);
  });

  it('UTF-8 (declared or by default): a lone %E9 is 400 naming mensaje', async () => {
    for (const ct of [FORM, `${FORM}; charset=utf-8`, `${FORM}; charset=UTF8`]) {
      const r = await raw(TEXT, `destinatario=${DEST}&mensaje=${tag()}caf%E9`, ct);
      expectRefused(r, 400, BAD, /^mensaje: not valid UTF-8 text$/);
    }
  });

  it('broken percent escapes: 400 naming the field', async () => {
    for (const bad of ['%ZZ', '%E', '%', 'a%4g']) {
      const r = await raw(TEXT, `destinatario=${DEST}&mensaje=${tag()}${bad}`, FORM);
      expectRefused(r, 400, BAD, /^mensaje: invalid percent escape/);
    }
    expectRefused(await raw(TEXT, `destinatario=${DEST}&men%ZZsaje=x`, FORM), 400, BAD, /^a field name: invalid percent escape "%ZZ"/);
  });

  it('UTF-8 escaped or raw, emoji included, arrives exact', async () => {
    const text = `${tag()}café ñ € 😀 👩🏽‍💻`;
    const r = await raw(TEXT, `destinatario=${DEST}&mensaje=${encodeURIComponent(text)}`, FORM);
    expect(r.status, r.text).toBe(200);
    expect(await storedText(r.body.msg_id)).toBe(text);
    const t2 = `${tag()}añejo 😀`;
    const b = await raw(TEXT, Buffer.from(`destinatario=${DEST}&mensaje=${t2}`), FORM);
    expect(b.status, b.text).toBe(200);
    expect(await storedText(b.body.msg_id)).toBe(t2);
  });
});

describe('JSON bodies', () => {
  it('raw bytes that are not UTF-8: 400 naming the field', async () => {
    const body = Buffer.concat([Buffer.from(`{"destinatario":"${DEST}","mensaje":"caf`), Buffer.from([0xe9]), Buffer.from('"}')]);
    expectRefused(await raw(TEXT, body, 'application/json'), 400, BAD, /^mensaje: not valid UTF-8 text$/);
    // An encoded surrogate (ED A0 80) and an overlong form (C0 AF) are not UTF-8 either.
    for (const bytes of [
      [0xed, 0xa0, 0x80],
      [0xc0, 0xaf],
    ]) {
      const b = Buffer.concat([Buffer.from(`{"destinatario":"${DEST}","mensaje":"x`), Buffer.from(bytes), Buffer.from('"}')]);
      expectRefused(await raw(TEXT, b, 'application/json'), 400, BAD, /^mensaje: not valid UTF-8 text$/);
    }
  });

  it('an unpaired surrogate escape: 400 naming the field', async () => {
    for (const esc of ['\\ud800', '\\udc00', 'a\\ud83dz', '\\ude00\\ud83d']) {
      const r = await raw(TEXT, `{"destinatario":"${DEST}","mensaje":"${esc}"}`, 'application/json');
      expectRefused(r, 400, BAD, /^mensaje: not valid Unicode text/);
    }
  });

  it('a surrogate pair, escaped or raw, arrives exact', async () => {
    const t = tag();
    const r = await raw(TEXT, `{"destinatario":"${DEST}","mensaje":"${t}\\ud83d\\ude00 ok"}`, 'application/json');
    expect(r.status, r.text).toBe(200);
    expect(await storedText(r.body.msg_id)).toBe(`${t}😀 ok`);
    const text = `${tag()}👍🏿 ¡sí!`;
    const b = await api(s.url, 'POST', TEXT, { key: L.celularKey, json: { destinatario: DEST, mensaje: text } });
    expect(b.status, b.text).toBe(200);
    expect(await storedText(b.body.msg_id)).toBe(text);
  });

  it('JSON declared in another charset: 415; UTF-8 declared is fine', async () => {
    const body = `{"destinatario":"${DEST}","mensaje":"${tag()}x"}`;
    expectRefused(await raw(TEXT, body, 'application/json; charset=iso-8859-1'), 415, UNSUPPORTED, /JSON bodies must be UTF-8; charset "iso-8859-1"/);
    expect((await raw(TEXT, body, 'application/json; charset=utf-8')).status).toBe(200);
  });
});

describe('the streamed bodies (base64 and legacy routes)', () => {
  const IMG = '/api/mensaje_enviar_imagen_base64.php';

  it('a base64 route: caption read in the form charset; bad bytes and surrogates refused naming caption', async () => {
    const t = tag();
    const form = (caption: string) => `destinatario=${DEST}&imageBase64=${encodeURIComponent(b64(PNG))}&caption=${caption}`;
    const ok = await raw(IMG, form(`${t}caf%E9`), `${FORM}; charset=latin1`);
    expect(ok.status, ok.text).toBe(200);
    expect((await mensaje(s, ok.body.msg_id)).texto).toBe(`${t}café`);
    expectRefused(await raw(IMG, form(`${tag()}caf%E9`), FORM), 400, BAD, /^caption: not valid UTF-8 text$/);
    expectRefused(await raw(IMG, form('%ZZ'), FORM), 400, BAD, /^caption: invalid percent escape/);
    expectRefused(await raw(IMG, form('x'), `${FORM}; charset=shift_jis`), 415, UNSUPPORTED, /charset "shift_jis"/);
    const json = (caption: string | Buffer) =>
      Buffer.concat([Buffer.from(`{"destinatario":"${DEST}","imageBase64":"${b64(PNG)}","caption":"`), Buffer.from(caption), Buffer.from('"}')]);
    expectRefused(await raw(IMG, json('\\ud800'), 'application/json'), 400, BAD, /^caption: not valid Unicode text/);
    expectRefused(await raw(IMG, json(Buffer.from([0x63, 0xe9])), 'application/json'), 400, BAD, /^caption: not valid UTF-8 text$/);
    expectRefused(await raw(IMG, json('x'), 'application/json; charset=windows-1252'), 415, UNSUPPORTED, /charset "windows-1252"/);
    // A broken escape inside the file itself is named too.
    expectRefused(await raw(IMG, `destinatario=${DEST}&imageBase64=QUJD%Z`, FORM), 400, BAD, /^imageBase64: invalid percent escape/);
  });

  it('the legacy endpoint: latin1 form stored exact; invalid UTF-8 and surrogates refused', async () => {
    const t = tag();
    const ok = await raw('/panel/api_wa.php', `token=${L.gatewayToken}&destinatario=${DEST}&mensaje=${t}caf%E9`, `${FORM}; charset=iso-8859-1`, undefined);
    expect(ok.status, ok.text).toBe(200);
    expect(await storedText(ok.body.msg_id)).toBe(`${t}café`);
    expectRefused(
      await raw('/panel/api_wa.php', `token=${L.gatewayToken}&destinatario=${DEST}&mensaje=caf%E9`, FORM, undefined),
      400,
      BAD,
      /^mensaje: not valid UTF-8 text$/,
    );
    const r = await raw('/api/api-legacy.php', `{"token":"${L.gatewayToken}","destinatario":"${DEST}","mensaje":"\\udfff"}`, 'application/json', undefined);
    expectRefused(r, 400, BAD, /^mensaje: not valid Unicode text/);
  });
});

describe('other routes and the query string', () => {
  it('admin and webhook bodies: surrogates, bad bytes and nested values refused naming the field', async () => {
    const c = await raw('/admin/clientes', `{"nombre":"x\\ud800","email":"a@example.com"}`, 'application/json', s.adminToken);
    expectRefused(c, 400, BAD, /^nombre: not valid Unicode text/);
    const w = await raw('/api/webhook_configurar.php', `{"url":"http://127.0.0.1:9/h","eventos":["messages.sent","\\udc00"]}`, 'application/json', L.clientKey);
    expectRefused(w, 400, BAD, /^eventos: not valid Unicode text/);
    const f = await raw('/api/webhook_configurar.php', 'url=http%3A%2F%2F127.0.0.1%3A9%2F%E9', FORM, L.clientKey);
    expectRefused(f, 400, BAD, /^url: not valid UTF-8 text$/);
    // A latin1 form on a plain route decodes as it should (here the name of a new client).
    const ok = await raw('/admin/clientes', `nombre=Jos%E9&email=jose${Date.now()}%40example.com`, `${FORM}; charset=latin1`, s.adminToken);
    expect(ok.status, ok.text).toBe(201);
    expect(ok.body.cliente.nombre).toBe('José');
    expect((await admin(s, 'GET', `/admin/clientes/${ok.body.cliente.id}`)).body.cliente.nombre).toBe('José');
  });

  it('query string: UTF-8 only; a bad escape or bytes are 400 naming the parameter; good text exact', async () => {
    const h = (q: string) => api(s.url, 'GET', `/api/historial_listar.php?${q}`, { key: L.clientKey });
    expectRefused(await h('destinatario=%E9'), 400, BAD, /^query parameter destinatario: not valid UTF-8 text$/);
    expectRefused(await h('destinatario=%ZZ'), 400, BAD, /^query parameter destinatario: invalid percent escape "%ZZ"/);
    expectRefused(await api(s.url, 'GET', '/api/saldo.php?key=%C3'), 400, BAD, /^query parameter key: not valid UTF-8 text$/);
    // Valid escapes, '+' and repeated names behave as before.
    const ok = await h(`celular_id=${L.celularId}&por_pagina=%31%30&estado=pendiente+`);
    expectRefused(ok, 400, BAD, /estado/); // "pendiente " (with the space '+' means) is not a state
    expect((await h(`celular_id=${L.celularId}&por_pagina=%31%30`)).status).toBe(200);
    expect((await api(s.url, 'GET', `/api/saldo.php?key=${encodeURIComponent(L.celularKey)}`)).status).toBe(200);
  });
});

describe('U+0000', () => {
  it('a NUL character is refused naming the field, in JSON, in a form and in the base64 route, on every store alike', async () => {
    const json = await raw(TEXT, JSON.stringify({ destinatario: DEST, mensaje: `${tag()}a\u0000b` }), 'application/json');
    expectRefused(json, 400, BAD, /^mensaje: contains a NUL character \(U\+0000\)$/);
    const form = await raw(TEXT, `destinatario=${DEST}&mensaje=${tag()}a%00b`, FORM);
    expectRefused(form, 400, BAD, /^mensaje: contains a NUL character \(U\+0000\)$/);
    const img = await raw(
      '/api/mensaje_enviar_imagen_base64.php',
      JSON.stringify({ destinatario: DEST, imageBase64: b64(PNG), caption: 'x\u0000' }),
      'application/json',
    );
    expectRefused(img, 400, BAD, /^caption: contains a NUL character \(U\+0000\)$/);
  });
});
