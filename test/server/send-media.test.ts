import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ManualClock } from '../../src/core/time/clock.js';
import type { MensajePayload } from '../../src/core/ports/model.js';
import { api, startTestServer, type TestServer } from '../helpers/server.js';
import { expectError, expectOk } from '../helpers/expect.js';
import {
  admin,
  b64,
  dataUri,
  editCelular,
  JPEG,
  linkedLine,
  MP3,
  MP4,
  mensaje,
  PDF,
  PNG,
  send,
  startMediaServer,
  TEXT,
  uniqueText,
  waitEstado,
  WEBP,
  type MediaServer,
} from './send-helpers.js';
import { until } from '../helpers/poll.js';

/**
 * The ten media send endpoints over HTTP (docs/design.md §5): by URL against a loopback media server, by base64 with the
 * per-type and the generic field names, data URI and raw; URL and base64
 * refusals; the temp files of base64 sends.
 */

// Distinct valid recipients, so that repeated content never trips the duplicate counter.
const DESTS = ['525598765432', '525512345678', '14155552671', '34612345678', '525587654321', '525511223344'];

interface UrlCase {
  tipo: string;
  path: string;
  file: string;
  extra: Record<string, unknown>;
}
const URL_CASES: UrlCase[] = [
  { tipo: 'imagen', path: '/api/mensaje_enviar_imagen.php', file: '/img.jpg', extra: { caption: 'una foto' } },
  { tipo: 'documento', path: '/api/mensaje_enviar_documento.php', file: '/doc.pdf', extra: { filename: 'factura.pdf', caption: 'la factura' } },
  { tipo: 'audio', path: '/api/mensaje_enviar_audio.php', file: '/audio.mp3', extra: { ptt: 1 } },
  { tipo: 'video', path: '/api/mensaje_enviar_video.php', file: '/video.mp4', extra: { caption: 'un video' } },
  { tipo: 'sticker', path: '/api/mensaje_enviar_sticker.php', file: '/sticker.webp', extra: {} },
];

interface B64Case {
  tipo: string;
  path: string;
  field: string;
  mime: string;
  bytes: Buffer;
  extra: Record<string, unknown>;
}
const B64_CASES: B64Case[] = [
  {
    tipo: 'imagen',
    path: '/api/mensaje_enviar_imagen_base64.php',
    field: 'imageBase64',
    mime: 'image/png',
    bytes: PNG,
    extra: { caption: 'png', filename: 'a.png' },
  },
  {
    tipo: 'documento',
    path: '/api/mensaje_enviar_documento_base64.php',
    field: 'documentBase64',
    mime: 'application/pdf',
    bytes: PDF,
    extra: { filename: 'contrato.pdf' },
  },
  { tipo: 'audio', path: '/api/mensaje_enviar_audio_base64.php', field: 'audioBase64', mime: 'audio/mpeg', bytes: MP3, extra: { ptt: 'true' } },
  { tipo: 'video', path: '/api/mensaje_enviar_video_base64.php', field: 'videoBase64', mime: 'video/mp4', bytes: MP4, extra: { caption: 'mp4' } },
  { tipo: 'sticker', path: '/api/mensaje_enviar_sticker_base64.php', field: 'stickerBase64', mime: 'image/webp', bytes: WEBP, extra: {} },
];

let s: TestServer;
let media: MediaServer;
const clock = () => s.clock as ManualClock;
const tmpDir = () => join(s.dataDir, 'tmp');
const tmpFiles = () => readdirSync(tmpDir());

beforeAll(async () => {
  [s, media] = await Promise.all([
    startTestServer({ allowPrivateUrls: true, queue: { gapMinMs: 0, gapMaxMs: 0 }, simDeliveryMs: 20, simReadMs: 40 }),
    startMediaServer(),
  ]);
});
afterAll(async () => {
  await Promise.all([s?.stop(), media?.close()]);
});

describe('media by URL', () => {
  for (const c of URL_CASES) {
    it(`${c.path}: queue (JSON) and directo=1 (form); the history keeps the URL`, async () => {
      const L = await linkedLine(s);
      const url = media.base + c.file;
      const q = await send(s, L, c.path, { destinatario: DESTS[0], url, ...c.extra });
      expectOk(q, { modo: 'cola', count: 1 });
      const m = await waitEstado(s, q.body.msg_id, ['enviado', 'entregado', 'leido']);
      expect(m.tipo).toBe(c.tipo);
      expect(JSON.parse(m.media!)).toMatchObject({ url });

      const d = await send(s, L, c.path, { destinatario: DESTS[1], url, directo: 1, ...c.extra }, { form: true });
      expectOk(d, { modo: 'directo', count: 1 });
      expect((await mensaje(s, d.body.msg_id)).estado).toMatch(/^(enviado|entregado|leido)$/);

      const h = await api(s.url, 'GET', `/api/historial_listar.php?celular_id=${L.celularId}`, { key: L.clientKey });
      expect(h.body.mensajes.map((x: { tipo: string }) => x.tipo)).toEqual([c.tipo, c.tipo]);
      expect(h.body.mensajes[0].media).toMatchObject({ url });
      if ('caption' in c.extra) expect(h.body.mensajes[0].texto).toBe(c.extra.caption);
    });
  }

  it('a redirect to a file is followed: accepted; the history keeps the URL as given', async () => {
    const L = await linkedLine(s);
    const url = `${media.base}/redirect.png`;
    const r = await send(s, L, '/api/mensaje_enviar_imagen.php', { destinatario: DESTS[0], url, directo: 1 });
    expectOk(r, { modo: 'directo', count: 1 });
    const m = await mensaje(s, r.body.msg_id);
    expect(JSON.parse(m.media!)).toEqual({ url });
    expect((JSON.parse(m.payload!) as MensajePayload).url).toBe(`${media.base}/img.png`);
  });

  it('missing url: 400', async () => {
    const L = await linkedLine(s);
    for (const c of URL_CASES) {
      const r = await send(s, L, c.path, { destinatario: DESTS[0], ...c.extra });
      expectError(r, 400, 100);
      expect(r.body.error).toMatch(/url/);
    }
  });

  it('a URL that is not http(s) (ftp:, javascript:) or not a URL: 400 api_codigo 107, before any charge', async () => {
    const L = await linkedLine(s, { saldo: 3 });
    for (const url of ['ftp://127.0.0.1/img.png', 'javascript:alert(1)', 'no es una url']) {
      const r = await send(s, L, '/api/mensaje_enviar_imagen.php', { destinatario: DESTS[0], url });
      expectError(r, 400, 107);
    }
    const saldo = await api(s.url, 'GET', '/api/saldo.php', { key: L.celularKey });
    expect(saldo.body.saldo_global).toBe(3);
  });

  it('an unreachable URL (404) or a refused port: 400 api_codigo 107 saying why', async () => {
    const L = await linkedLine(s);
    const r = await send(s, L, '/api/mensaje_enviar_documento.php', { destinatario: DESTS[0], url: `${media.base}/missing.pdf`, filename: 'x.pdf' });
    expectError(r, 400, 107);
    expect(r.body.error).toMatch(/404/);
    const refused = await send(s, L, '/api/mensaje_enviar_imagen.php', { destinatario: DESTS[0], url: 'http://127.0.0.1:1/img.png', directo: 1 });
    expectError(refused, 400, 107);
  });

  it('a document filename without extension: 400', async () => {
    const L = await linkedLine(s);
    const r = await send(s, L, '/api/mensaje_enviar_documento.php', { destinatario: DESTS[0], url: `${media.base}/doc.pdf`, filename: 'factura' });
    expectError(r, 400, 100);
    expect(r.body.error).toMatch(/filename/);
  });

  it('without --allow-private-urls a loopback media URL is refused (400 107) before any request is made', async () => {
    const p = await startTestServer({ queue: { gapMinMs: 0, gapMaxMs: 0 } });
    try {
      const L = await linkedLine(p);
      const before = media.hits.length;
      for (const url of [`${media.base}/img.png`, 'http://localhost:9/img.png', 'http://[::1]/img.png', 'http://169.254.169.254/latest/meta-data']) {
        const r = await send(p, L, '/api/mensaje_enviar_imagen.php', { destinatario: DESTS[0], url, directo: 1 });
        expectError(r, 400, 107);
        expect(r.body.error).toMatch(/private/);
      }
      expect(media.hits.length).toBe(before);
    } finally {
      await p.stop();
    }
  });

  it('a declared size over the limit (6 MB image; 5 MB allowed): 413 api_codigo 105 stating the maximum', async () => {
    const L = await linkedLine(s);
    for (const directo of [0, 1]) {
      const r = await send(s, L, '/api/mensaje_enviar_imagen.php', { destinatario: DESTS[0], url: `${media.base}/big.png`, directo });
      expectError(r, 413, 105);
      expect(r.body.error).toMatch(/5 MB/);
    }
    // 6 MB is within the 16 MB of audio by URL.
    expectOk(await send(s, L, '/api/mensaje_enviar_audio.php', { destinatario: DESTS[0], url: `${media.base}/big.png` }), { modo: 'cola', count: 1 });
  });
});

describe('media by base64', () => {
  for (const c of B64_CASES) {
    it(`${c.path}: ${c.field} raw (queue, JSON), data URI (directo), data_base64 + mime (form)`, async () => {
      const L = await linkedLine(s);
      const raw = await send(s, L, c.path, { destinatario: DESTS[0], [c.field]: b64(c.bytes), ...c.extra });
      expectOk(raw, { modo: 'cola', count: 1 });
      if (c.tipo === 'imagen') expect(raw.body.origen).toBe('base64_inline');
      else expect(raw.body).not.toHaveProperty('origen');
      const m = await waitEstado(s, raw.body.msg_id, ['enviado', 'entregado', 'leido']);
      expect(m.tipo).toBe(c.tipo);
      expect(JSON.parse(m.media!)).toMatchObject({ mime: c.mime, bytes: c.bytes.length });

      const uri = await send(s, L, c.path, { destinatario: DESTS[1], [c.field]: dataUri(c.mime, c.bytes), directo: 1, ...c.extra });
      expectOk(uri, { modo: 'directo', count: 1 });
      if (c.tipo === 'imagen') expect(uri.body.origen).toBe('base64_directo');

      const generic = await send(
        s,
        L,
        c.path,
        { destinatario: DESTS[2], data_base64: b64(c.bytes), mime: c.mime, filename: `archivo.${c.mime.split('/')[1]}`, directo: 1 },
        { form: true },
      );
      expectOk(generic, { modo: 'directo', count: 1 });
      expect(JSON.parse((await mensaje(s, generic.body.msg_id)).media!)).toMatchObject({ mime: c.mime, bytes: c.bytes.length });
    });
  }

  // A base64 endpoint sends the bytes it was given: a `url` field in the same body is not read
  // there.
  it('a base64 endpoint sends the given bytes even if the body also carries a url', async () => {
    const L = await linkedLine(s);
    const r = await send(s, L, '/api/mensaje_enviar_imagen_base64.php', {
      destinatario: DESTS[0],
      imageBase64: b64(PNG),
      url: `${media.base}/img.jpg`,
      directo: 1,
    });
    expectOk(r, { modo: 'directo', count: 1 });
    expect(JSON.parse((await mensaje(s, r.body.msg_id)).media!)).toMatchObject({ mime: 'image/png', bytes: PNG.length });
  });

  it('a JPEG through the image endpoint with a declared mime', async () => {
    const L = await linkedLine(s);
    const r = await send(s, L, '/api/mensaje_enviar_imagen_base64.php', { destinatario: DESTS[0], imageBase64: b64(JPEG), mime: 'image/jpeg', directo: 1 });
    expectOk(r, { modo: 'directo', count: 1 });
    expect(r.body.origen).toBe('base64_directo');
  });

  it('base64 wrapped in lines (MIME style, CRLF every 76 characters) and an upper-case data URI are accepted', async () => {
    const L = await linkedLine(s);
    const big = Buffer.concat([PDF, Buffer.alloc(300, 0x0a)]);
    const wrapped = b64(big).replace(/.{76}/g, '$&\r\n');
    expect(wrapped).toContain('\r\n');
    const r = await send(s, L, '/api/mensaje_enviar_documento_base64.php', { destinatario: DESTS[0], documentBase64: wrapped, filename: 'w.pdf', directo: 1 });
    expectOk(r, { modo: 'directo', count: 1 });
    expect(JSON.parse((await mensaje(s, r.body.msg_id)).media!)).toMatchObject({ mime: 'application/pdf', bytes: big.length });
    const u = await send(s, L, '/api/mensaje_enviar_imagen_base64.php', {
      destinatario: DESTS[0],
      imageBase64: `DATA:IMAGE/PNG;BASE64,${b64(PNG)}`,
      directo: 1,
    });
    expectOk(u, { modo: 'directo', count: 1 });
  });

  it('no base64 field at all: 400 naming the field; a document without filename: 400', async () => {
    const L = await linkedLine(s);
    for (const c of B64_CASES) {
      const r = await send(s, L, c.path, { destinatario: DESTS[0], ...c.extra });
      expectError(r, 400, 100);
      expect(r.body.error).toContain(c.field);
    }
    const doc = await send(s, L, '/api/mensaje_enviar_documento_base64.php', { destinatario: DESTS[0], documentBase64: b64(PDF) });
    expectError(doc, 400, 100);
    expect(doc.body.error).toMatch(/filename/);
  });

  it('invalid base64 (bad alphabet, bad padding, empty): 400 api_codigo 108', async () => {
    const L = await linkedLine(s, { saldo: 2 });
    for (const bad of ['@@@@', 'abc', 'QQ=a', 'iVBORw0KGgo-_', '   ']) {
      const r = await send(s, L, '/api/mensaje_enviar_imagen_base64.php', { destinatario: DESTS[0], imageBase64: bad });
      expectError(r, 400, 108);
    }
    expect((await api(s.url, 'GET', '/api/saldo.php', { key: L.celularKey })).body.saldo_global).toBe(2);
  });

  it("a form body with an unencoded '+' in the base64: 400 api_codigo 108 with a hint", async () => {
    const L = await linkedLine(s);
    const raw64 = b64(PNG);
    expect(raw64).toContain('+');
    const body = `destinatario=${DESTS[0]}&imageBase64=${raw64.replace(/=/g, '%3D')}`;
    const r = await api(s.url, 'POST', '/api/mensaje_enviar_imagen_base64.php', {
      key: L.celularKey,
      raw: body,
      contentType: 'application/x-www-form-urlencoded',
    });
    expectError(r, 400, 108);
    expect(r.body.error).toMatch(/'\+'/);
  });

  it('a body over the route limit of a base64 route (sticker: about 4.5 MB): 413 api_codigo 102', async () => {
    const L = await linkedLine(s);
    const r = await send(s, L, '/api/mensaje_enviar_sticker_base64.php', { destinatario: DESTS[0], stickerBase64: 'A'.repeat(5 * 1024 * 1024) });
    expectError(r, 413, 102);
  });

  it('a sticker over 1 MB: 413 api_codigo 105 stating the maximum', async () => {
    const L = await linkedLine(s);
    const big = Buffer.concat([WEBP, Buffer.alloc(1024 * 1024, 0x20)]);
    const r = await send(s, L, '/api/mensaje_enviar_sticker_base64.php', { destinatario: DESTS[0], stickerBase64: b64(big) });
    expectError(r, 413, 105);
    expect(r.body.error).toMatch(/1 MB/);
  });

  it('an image whose bytes are a PDF: 415 api_codigo 106 (whatever the declared mime)', async () => {
    const L = await linkedLine(s);
    for (const body of [{ imageBase64: b64(PDF) }, { imageBase64: b64(PDF), mime: 'image/png' }, { imageBase64: dataUri('image/jpeg', PDF) }]) {
      const r = await send(s, L, '/api/mensaje_enviar_imagen_base64.php', { destinatario: DESTS[0], ...body });
      expectError(r, 415, 106);
      expect(r.body.error).toMatch(/application\/pdf/);
    }
    // A declared type outside the list is refused too.
    expectError(await send(s, L, '/api/mensaje_enviar_imagen_base64.php', { destinatario: DESTS[0], imageBase64: b64(PNG), mime: 'image/svg+xml' }), 415, 106);
  });
});

describe('temp files of base64 sends', () => {
  // Files of the queued sends of earlier tests go right after their send is recorded.
  beforeAll(async () => {
    await until(() => tmpFiles().length === 0, { what: 'an empty tmp folder' });
  });
  const tmpEmpty = () => until(() => tmpFiles().length === 0, { what: 'an empty tmp folder', timeoutMs: 2000 });

  it('a direct base64 send leaves <dataDir>/tmp empty', async () => {
    const L = await linkedLine(s);
    const r = await send(s, L, '/api/mensaje_enviar_documento_base64.php', { destinatario: DESTS[0], documentBase64: b64(PDF), filename: 'x.pdf', directo: 1 });
    expectOk(r, { modo: 'directo', count: 1 });
    expect(tmpFiles()).toEqual([]);
  });

  it('a queued base64 send keeps its file (0600, named by msg_id) while pending, and removes it once sent', async () => {
    const L = await linkedLine(s);
    // One send per minute: the queued one waits for the next minute.
    await editCelular(s, L, { max_envios_por_minuto: 1 });
    expectOk(await send(s, L, TEXT, { destinatario: DESTS[0], mensaje: uniqueText(), directo: 1 }), { modo: 'directo', count: 1 });
    const r = await send(s, L, '/api/mensaje_enviar_imagen_base64.php', { destinatario: DESTS[1], imageBase64: b64(PNG), filename: '../../etc/passwd.png' });
    expectOk(r, { modo: 'cola', count: 1 });
    const file = join(tmpDir(), `${r.body.msg_id}.bin`);
    expect(existsSync(file)).toBe(true);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(tmpFiles()).toEqual([`${r.body.msg_id}.bin`]);
    expect((await mensaje(s, r.body.msg_id)).estado).toBe('pendiente');
    clock().advance(61_000);
    await waitEstado(s, r.body.msg_id, ['enviado', 'entregado', 'leido']);
    await tmpEmpty();
  });

  it('failing sends leave nothing: a direct one refused by the gateway, a queued one that fails, a refused MIME', async () => {
    const L = await linkedLine(s);
    const dead = '525500001111';
    expect((await admin(s, 'POST', '/admin/sim/fail', { numero: dead })).status).toBe(200);
    const d = await send(s, L, '/api/mensaje_enviar_audio_base64.php', { destinatario: dead, audioBase64: b64(MP3), directo: 1 });
    expectError(d, 502, 704);
    expect(tmpFiles()).toEqual([]);
    const q = await send(s, L, '/api/mensaje_enviar_video_base64.php', { destinatario: dead, videoBase64: b64(MP4) });
    expectOk(q, { modo: 'cola', count: 1 });
    const m = await waitEstado(s, q.body.msg_id, 'error');
    expect(m.error).toMatch(/\S/);
    await tmpEmpty();
    expectError(await send(s, L, '/api/mensaje_enviar_sticker_base64.php', { destinatario: DESTS[0], stickerBase64: b64(JPEG) }), 415, 106);
    expect(tmpFiles()).toEqual([]);
  });
});
