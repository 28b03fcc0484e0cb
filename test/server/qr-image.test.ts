import jsqr from 'jsqr';
import { PNG } from 'pngjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, seedClient, startTestServer, type Seeded, type TestServer } from '../helpers/server.js';
import { expectError, expectOk } from '../helpers/expect.js';

/** celular_qr.php with imagen=1: the QR as a PNG data URI that decodes to the same content as `qr`. */

let s: TestServer;
let A: Seeded;

beforeAll(async () => {
  s = await startTestServer();
  A = await seedClient(s);
});
afterAll(async () => {
  await s?.stop();
});

const PREFIX = 'data:image/png;base64,';
/** jsqr is CommonJS typed as an ES default export: its function is module.exports and also its `default`. */
const jsQR = jsqr.default;

/** Decodes a PNG data URI with a real QR decoder. */
function decode(uri: string): string | undefined {
  expect(uri.startsWith(PREFIX)).toBe(true);
  const png = PNG.sync.read(Buffer.from(uri.slice(PREFIX.length), 'base64'));
  const found = jsQR(new Uint8ClampedArray(png.data.buffer, png.data.byteOffset, png.data.length), png.width, png.height);
  return found?.data;
}

const qr = (query: string, opts: Parameters<typeof api>[3] = { key: A.clientKey }) => api(s.url, 'POST', `/api/celular_qr.php?id=${A.celularId}${query}`, opts);

describe('POST /api/celular_qr.php?imagen=1', () => {
  it('without imagen the default answer has no qr_imagen', async () => {
    const r = await qr('');
    expectOk(r);
    expect(r.body.status).toBe('need_scan');
    expect(r.body.qr).toMatch(/\S/);
    expect(r.body).not.toHaveProperty('qr_imagen');
    const zero = await qr('&imagen=0');
    expectOk(zero);
    expect(zero.body).not.toHaveProperty('qr_imagen');
  });

  it('imagen=1 (query, JSON body or form) adds a PNG data URI that decodes to qr', async () => {
    const r = await qr('&imagen=1');
    expectOk(r);
    expect(r.body).toMatchObject({ celular_id: A.celularId, status: 'need_scan' });
    expect(r.body.qr).toMatch(/^2@\S+,\S+,\S+,1$/);
    expect(r.body.qr_imagen).toMatch(/^data:image\/png;base64,[A-Za-z0-9+/]+=*$/);
    expect(decode(r.body.qr_imagen)).toBe(r.body.qr);

    const json = await qr('', { key: A.clientKey, json: { imagen: true } });
    expectOk(json);
    expect(decode(json.body.qr_imagen)).toBe(json.body.qr);
    const form = await qr('', { form: { key: A.celularKey, imagen: '1' } });
    expectOk(form);
    expect(decode(form.body.qr_imagen)).toBe(form.body.qr);
  });

  it('a value that is not a flag is a 400; once linked (nothing to scan) qr_imagen is ""', async () => {
    expectError(await qr('&imagen=maybe'), 400, 100);
    const r = await qr('&imagen=1');
    expectOk(r);
    // The decoded image is what the phone scans.
    expectOk(await api(s.url, 'POST', '/admin/sim/scan', { key: s.adminToken, json: { celular_id: A.celularId, qr: decode(r.body.qr_imagen) } }));
    const linked = await qr('&imagen=1');
    expectOk(linked);
    expect(linked.body).toMatchObject({ status: 'connected', qr: '', qr_imagen: '' });
  });
});
