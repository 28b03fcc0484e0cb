import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, startTestServer, type ApiResponse, type TestServer } from '../helpers/server.js';
import { expectError, expectOk } from '../helpers/expect.js';
import { admin, b64, dataUri, editCelular, linkedLine, mensaje, PDF, PNG, saldos, uniqueText, waitEstado, type Line } from './send-helpers.js';
import { until } from '../helpers/poll.js';

/**
 * The legacy endpoint (docs/design.md §3): POST
 * /panel/api_wa.php and its alias /api/api-legacy.php, the credential in the
 * body `token` (gateway or legacy token), text or text with one base64 file
 * in `mime` typed by `tipomime`, `modo` DIRECTO for an immediate send.
 */

const PATHS = ['/panel/api_wa.php', '/api/api-legacy.php'];
const DEST = '525598765432';
const SENT = ['enviado', 'entregado', 'leido'];

let s: TestServer;
const legacy = (path: string, body: Record<string, unknown>, form = false): Promise<ApiResponse> =>
  form
    ? api(s.url, 'POST', path, { form: Object.fromEntries(Object.entries(body).map(([k, v]) => [k, String(v)])) })
    : api(s.url, 'POST', path, { json: body });

beforeAll(async () => {
  s = await startTestServer({ allowPrivateUrls: true, queue: { gapMinMs: 0, gapMaxMs: 0 }, simDeliveryMs: 20, simReadMs: 40 }, { inject: true });
});
afterAll(async () => {
  await s?.stop();
});

describe('legacy endpoint', () => {
  let L: Line;
  beforeAll(async () => {
    L = await linkedLine(s, { saldo: 100 });
  });

  for (const path of PATHS) {
    it(`${path}: text with the gateway token, JSON and form-encoded, queued; a Mexican number with the old 1 is normalised`, async () => {
      const a = await legacy(path, { token: L.gatewayToken, destinatario: '5215598765432', mensaje: uniqueText('legacy') });
      expectOk(a, { modo: 'cola', count: 1 });
      const m = await waitEstado(s, a.body.msg_id, SENT);
      expect(m).toMatchObject({ tipo: 'texto', modo: 'cola', destinatario: DEST, celular_id: L.celularId });
      expect(m.texto).toMatch(/^legacy /);
      const b = await legacy(path, { token: L.gatewayToken, destinatario: DEST, mensaje: uniqueText('form') }, true);
      expectOk(b, { modo: 'cola', count: 1 });
      expect((await mensaje(s, b.body.msg_id)).texto).toMatch(/^form /);
    });
  }

  it('a legacy token set by the operator works; modo DIRECTO (and directo) sends now', async () => {
    const t = await admin(s, 'POST', `/admin/celulares/${L.celularId}/token-legacy`, {});
    expect(t.status, t.text).toBe(200);
    const token = t.body.token_legacy as string;
    for (const modo of ['DIRECTO', 'directo']) {
      const r = await legacy(PATHS[0]!, { token, destinatario: DEST, mensaje: uniqueText(), modo });
      expectOk(r, { modo: 'directo', count: 1 });
      expect((await mensaje(s, r.body.msg_id)).modo).toBe('directo');
    }
    const f = await legacy(PATHS[1]!, { token, destinatario: DEST, mensaje: uniqueText(), modo: 'DIRECTO' }, true);
    expectOk(f, { modo: 'directo', count: 1 });
    // A token of the operator's choosing, too.
    const own = await admin(s, 'POST', `/admin/celulares/${L.celularId}/token-legacy`, { token: 'mi-token-legacy-1234' });
    expect(own.status, own.text).toBe(200);
    expectOk(await legacy(PATHS[0]!, { token: 'mi-token-legacy-1234', destinatario: DEST, mensaje: uniqueText() }), { modo: 'cola', count: 1 });
  });

  it('text + a base64 PNG in `mime` with tipomime image/png: an image message with the text as caption', async () => {
    const text = uniqueText('mira esta foto');
    const r = await legacy(PATHS[0]!, { token: L.gatewayToken, destinatario: DEST, mensaje: text, mime: b64(PNG), tipomime: 'image/png' });
    expectOk(r, { modo: 'cola', count: 1 });
    expect(r.body.origen).toBe('base64_inline');
    const m = await waitEstado(s, r.body.msg_id, SENT);
    expect(m).toMatchObject({ tipo: 'imagen', texto: text });
    expect(JSON.parse(m.media!)).toMatchObject({ mime: 'image/png', bytes: PNG.length });

    const d = await legacy(
      PATHS[1]!,
      { token: L.gatewayToken, destinatario: DEST, mensaje: uniqueText(), mime: b64(PNG), tipomime: 'image/png', modo: 'DIRECTO' },
      true,
    );
    // Same bytes to the same recipient with another caption: the identity of base64 is the content.
    expectOk(d, { modo: 'directo', count: 2 });
    expect(d.body.origen).toBe('base64_directo');
    const tmp = join(s.dataDir, 'tmp');
    expect(existsSync(join(tmp, `${d.body.msg_id}.bin`))).toBe(false);
    await until(() => readdirSync(tmp).length === 0, { what: 'an empty tmp folder', timeoutMs: 2000 });
  });

  it('a PDF with tipomime application/pdf is a document; a data URI works too', async () => {
    const r = await legacy(PATHS[0]!, {
      token: L.gatewayToken,
      destinatario: DEST,
      mensaje: 'su factura',
      mime: dataUri('application/pdf', PDF),
      tipomime: 'application/pdf',
      modo: 'DIRECTO',
    });
    expectOk(r, { modo: 'directo', count: 1 });
    const m = await mensaje(s, r.body.msg_id);
    expect(m).toMatchObject({ tipo: 'documento', texto: 'su factura' });
    expect(JSON.parse(m.media!)).toMatchObject({ mime: 'application/pdf', filename: expect.stringMatching(/\.pdf$/) });
  });

  it('errors: mime without tipomime 400; bytes not of tipomime 415; mensaje over 4096 400; bad modo 400; missing fields 400', async () => {
    const t = L.gatewayToken;
    const a = await legacy(PATHS[0]!, { token: t, destinatario: DEST, mensaje: 'x', mime: b64(PNG) });
    expectError(a, 400, 100);
    expect(a.body.error).toMatch(/tipomime/);
    expectError(await legacy(PATHS[0]!, { token: t, destinatario: DEST, mensaje: 'x', mime: b64(PDF), tipomime: 'image/png' }), 415, 106);
    expectError(await legacy(PATHS[0]!, { token: t, destinatario: DEST, mensaje: 'x', mime: '%%%', tipomime: 'image/png' }), 400, 108);
    const long = await legacy(PATHS[1]!, { token: t, destinatario: DEST, mensaje: 'x'.repeat(4097) });
    expectError(long, 400, 100);
    expect(long.body.error).toMatch(/mensaje/);
    expectOk(await legacy(PATHS[1]!, { token: t, destinatario: DEST, mensaje: 'y'.repeat(4090) + uniqueText('').slice(-6).padStart(6, 'z') }), {
      modo: 'cola',
      count: 1,
    });
    expectError(await legacy(PATHS[0]!, { token: t, destinatario: DEST, mensaje: uniqueText(), modo: 'rapido' }), 400, 100);
    expectError(await legacy(PATHS[0]!, { token: t, mensaje: 'x' }), 400, 100);
    expectError(await legacy(PATHS[0]!, { token: t, destinatario: DEST }), 400, 100);
    expectError(await legacy(PATHS[0]!, { token: t, destinatario: '12', mensaje: 'x' }), 400, 100);
  });

  it('credentials: a client key as token 403; a bad or missing token 401', async () => {
    for (const path of PATHS) {
      const c = await legacy(path, { token: L.clientKey, destinatario: DEST, mensaje: uniqueText() });
      expectError(c, 403, 201);
      expectError(await legacy(path, { token: 'f'.repeat(64), destinatario: DEST, mensaje: uniqueText() }), 401, 200);
      expectError(await legacy(path, { destinatario: DEST, mensaje: uniqueText() }), 401, 200);
    }
  });

  it('the line rules apply: suspended line 403 301, no balance 402 300', async () => {
    const P = await linkedLine(s, { saldo: 0 });
    expectError(await legacy(PATHS[0]!, { token: P.gatewayToken, destinatario: DEST, mensaje: uniqueText() }), 402, 300);
    expect(await saldos(s, P)).toMatchObject({ global: 0, celular: 0 });
    await editCelular(s, P, { estado: 'suspendido' });
    expectError(await legacy(PATHS[1]!, { token: P.gatewayToken, destinatario: DEST, mensaje: uniqueText() }), 403, 301);
  });
});
