import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, type TestServer, startTestServer } from '../helpers/server.js';
import { expectError, expectOk } from '../helpers/expect.js';
import { admin, editCelular, link, linkedLine, mensaje, send, TEXT, uniqueText, waitEstado, type Line } from './send-helpers.js';
import { until } from '../helpers/poll.js';

/**
 * The text send endpoint over HTTP (docs/design.md §3, §4,
 * §5): both modes, both encodings, credentials, field errors, recipient
 * normalisation, and the states of line and client that forbid a send.
 */

const DEST = '525598765432';

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer({ allowPrivateUrls: true, queue: { gapMinMs: 0, gapMaxMs: 0 }, simDeliveryMs: 20, simReadMs: 40 }, { inject: true });
});
afterAll(async () => {
  await s?.stop();
});

describe('text: happy paths', () => {
  it('queue mode, JSON: 200 cola with msg_id, anti_dupe, saldo; the worker then sends it', async () => {
    const L = await linkedLine(s, { saldo: 5 });
    const r = await send(s, L, TEXT, { destinatario: DEST, mensaje: uniqueText() });
    expectOk(r, { modo: 'cola', count: 1 });
    expect(r.body.saldo).toBe(0); // the celular's own balance; the charge came from the global one
    const m = await waitEstado(s, r.body.msg_id, ['enviado', 'entregado', 'leido']);
    expect(m).toMatchObject({ modo: 'cola', tipo: 'texto', destinatario: DEST, celular_id: L.celularId, cliente_id: L.clienteId });
    expect(m.gateway_msg_id).toMatch(/\S/);
  });

  it('queue mode, form-encoded: 200 cola', async () => {
    const L = await linkedLine(s);
    const r = await send(s, L, TEXT, { destinatario: DEST, mensaje: uniqueText('form') }, { form: true });
    expectOk(r, { modo: 'cola', count: 1 });
    expect((await mensaje(s, r.body.msg_id)).texto).toMatch(/^form /);
  });

  it('directo=1, JSON and form: 200 directo with gateway_msg_id, recorded as enviado', async () => {
    const L = await linkedLine(s);
    for (const form of [false, true]) {
      const r = await send(s, L, TEXT, { destinatario: DEST, mensaje: uniqueText(), directo: 1 }, { form });
      expectOk(r, { modo: 'directo', count: 1 });
      const m = await mensaje(s, r.body.msg_id);
      expect(['enviado', 'entregado', 'leido']).toContain(m.estado);
      expect(m).toMatchObject({ modo: 'directo', gateway_msg_id: r.body.gateway_msg_id });
    }
  });

  it('directo accepts true / "true" / "1"; 0, "0" and false queue', async () => {
    const L = await linkedLine(s);
    for (const directo of [true, 'true', '1'])
      expectOk(await send(s, L, TEXT, { destinatario: DEST, mensaje: uniqueText(), directo }), { modo: 'directo', count: 1 });
    for (const directo of [0, '0', false]) expectOk(await send(s, L, TEXT, { destinatario: DEST, mensaje: uniqueText(), directo }), { modo: 'cola', count: 1 });
  });

  it('the key in the body (JSON and form) instead of Bearer', async () => {
    const L = await linkedLine(s);
    expectOk(await send(s, L, TEXT, { key: L.celularKey, destinatario: DEST, mensaje: uniqueText() }, { key: null }), { modo: 'cola', count: 1 });
    expectOk(await send(s, L, TEXT, { key: L.celularKey, destinatario: DEST, mensaje: uniqueText(), directo: 1 }, { key: null, form: true }), {
      modo: 'directo',
      count: 1,
    });
  });

  it('the gateway token works as the key', async () => {
    const L = await linkedLine(s);
    expectOk(await send(s, L, TEXT, { destinatario: DEST, mensaje: uniqueText() }, { key: L.gatewayToken }), { modo: 'cola', count: 1 });
  });

  it('a client key sends with celular_id (JSON and form); without celular_id it is 400', async () => {
    const L = await linkedLine(s);
    const r = await send(s, L, TEXT, { destinatario: DEST, mensaje: uniqueText(), celular_id: L.celularId }, { key: L.clientKey });
    expectOk(r, { modo: 'cola', count: 1 });
    expect((await mensaje(s, r.body.msg_id)).celular_id).toBe(L.celularId);
    expectOk(await send(s, L, TEXT, { destinatario: DEST, mensaje: uniqueText(), celular_id: L.celularId, directo: 1 }, { key: L.clientKey, form: true }), {
      modo: 'directo',
      count: 1,
    });
    const no = await send(s, L, TEXT, { destinatario: DEST, mensaje: uniqueText() }, { key: L.clientKey });
    expectError(no, 400, 100);
    expect(no.body.error).toMatch(/celular_id/);
  });

  it('a mensaje of exactly 4096 characters is accepted', async () => {
    const L = await linkedLine(s);
    const text = 'x'.repeat(4090) + uniqueText('').slice(-6).padStart(6, 'y');
    expect(text.length).toBe(4096);
    const r = await send(s, L, TEXT, { destinatario: DEST, mensaje: text });
    expectOk(r, { modo: 'cola', count: 1 });
    expect((await mensaje(s, r.body.msg_id)).texto).toBe(text);
  });
});

describe('text: field errors', () => {
  let L: Line;
  beforeAll(async () => {
    L = await linkedLine(s);
  });

  it('missing destinatario or mensaje: 400 naming the field; nothing charged', async () => {
    const before = (await api(s.url, 'GET', '/api/saldo.php', { key: L.celularKey })).body.saldo_global;
    const a = await send(s, L, TEXT, { mensaje: 'hola' });
    expectError(a, 400, 100);
    expect(a.body.error).toMatch(/destinatario/);
    const b = await send(s, L, TEXT, { destinatario: DEST });
    expectError(b, 400, 100);
    expect(b.body.error).toMatch(/mensaje/);
    const c = await send(s, L, TEXT, { destinatario: DEST, mensaje: '' });
    expectError(c, 400, 100);
    expectError(await send(s, L, TEXT, { destinatario: DEST }, { form: true }), 400, 100);
    expect((await api(s.url, 'GET', '/api/saldo.php', { key: L.celularKey })).body.saldo_global).toBe(before);
  });

  it('a mensaje of 4097 characters: 400', async () => {
    const r = await send(s, L, TEXT, { destinatario: DEST, mensaje: 'x'.repeat(4097) });
    expectError(r, 400, 100);
    expect(r.body.error).toMatch(/mensaje/);
  });

  it('invalid destinatario: 400 with a reason', async () => {
    for (const bad of ['12', 'abc', '+52 55 12', '0000000000000000', '99999999999']) {
      const r = await send(s, L, TEXT, { destinatario: bad, mensaje: uniqueText() });
      expectError(r, 400, 100);
      expect(r.body.error).toMatch(/destinatario: .{10,}/);
    }
  });

  it('destinatario forms +52 55 9876 5432, 5215598765432 and the bare national 55 9876 5432 all become 525598765432', async () => {
    for (const form of ['+52 55 9876 5432', '5215598765432', '55 9876 5432', '(55) 9876-5432', '+52 1 55 9876 5432']) {
      const r = await send(s, L, TEXT, { destinatario: form, mensaje: uniqueText() });
      expectOk(r, { modo: 'cola', count: 1 });
      expect((await mensaje(s, r.body.msg_id)).destinatario, form).toBe('525598765432');
    }
    const h = await api(s.url, 'GET', '/api/historial_listar.php?destinatario=525598765432&por_pagina=500', { key: L.celularKey });
    expect(h.status, h.text).toBe(200);
    expect(h.body.mensajes.length).toBeGreaterThanOrEqual(5);
    for (const m of h.body.mensajes) expect(m.destinatario).toBe('525598765432');
  });

  it('a bare national number is read in the country of the line (a US line: (415) 555-2672 -> 14155552672)', async () => {
    const U = await linkedLine(s, { numero: '14155550100' });
    const r = await send(s, U, TEXT, { destinatario: '(415) 555-2672', mensaje: uniqueText() });
    expectOk(r, { modo: 'cola', count: 1 });
    expect((await mensaje(s, r.body.msg_id)).destinatario).toBe('14155552672');
    // With its country code it is read as given, whatever the line.
    const e = await send(s, U, TEXT, { destinatario: '34612345678', mensaje: uniqueText() });
    expectOk(e, { modo: 'cola', count: 1 });
    expect((await mensaje(s, e.body.msg_id)).destinatario).toBe('34612345678');
  });

  // A bare national number is read in the country of the sending line first: many Mexican (or US)
  // national numbers are also valid international numbers of another country (477 Norway, 461
  // Sweden, 662 Thailand; (646) New Zealand), and reading them as such would send to, and charge
  // for, the wrong country.
  it("bare national numbers that also parse as international are still read in the line's country", async () => {
    const r = await send(s, L, TEXT, { destinatario: '477 234 5678', mensaje: uniqueText() });
    expectOk(r, { modo: 'cola', count: 1 });
    expect((await mensaje(s, r.body.msg_id)).destinatario).toBe('524772345678');
    const U = await linkedLine(s, { numero: '14155550101' });
    const u = await send(s, U, TEXT, { destinatario: '(646) 222-3333', mensaje: uniqueText() });
    expectOk(u, { modo: 'cola', count: 1 });
    expect((await mensaje(s, u.body.msg_id)).destinatario).toBe('16462223333');
  });

  it("directo='maybe': 400", async () => {
    const r = await send(s, L, TEXT, { destinatario: DEST, mensaje: uniqueText(), directo: 'maybe' });
    expectError(r, 400, 100);
    expect(r.body.error).toMatch(/directo/);
  });

  it('a body over the route limit (1 MB): 413 with ok:false, JSON and form', async () => {
    const big = 'x'.repeat(1024 * 1024 + 10);
    expectError(await send(s, L, TEXT, { destinatario: DEST, mensaje: big }), 413, 102);
    expectError(await send(s, L, TEXT, { destinatario: DEST, mensaje: big }, { form: true }), 413, 102);
  });
});

describe('text: authority and states', () => {
  it('a bad key: 401; no key at all: 401', async () => {
    const L = await linkedLine(s);
    expectError(await send(s, L, TEXT, { destinatario: DEST, mensaje: 'x' }, { key: `WA_${L.celularId}_${'A'.repeat(43)}` }), 401, 200);
    expectError(await send(s, L, TEXT, { destinatario: DEST, mensaje: 'x' }, { key: null }), 401, 200);
  });

  it("celular 'suspendido' or 'desconectado': 403 api_codigo 301 naming the estado", async () => {
    const L = await linkedLine(s);
    for (const estado of ['suspendido', 'desconectado']) {
      await editCelular(s, L, { estado });
      for (const directo of [0, 1]) {
        const r = await send(s, L, TEXT, { destinatario: DEST, mensaje: uniqueText(), directo });
        expectError(r, 403, 301);
        expect(r.body.error).toContain(estado);
      }
    }
    // Never linked: desconectado from creation.
    const N = await linkedLine(s, { link: false });
    expectError(await send(s, N, TEXT, { destinatario: DEST, mensaje: uniqueText() }), 403, 301);
  });

  it('a line logged out from the phone becomes desconectado and cannot send (403 301) until scanned again', async () => {
    const L = await linkedLine(s);
    expect((await admin(s, 'POST', '/admin/sim/logout', { celular_id: L.celularId })).status).toBe(200);
    await until(async () => (await s.core.store.getCelular(L.celularId))?.estado === 'desconectado', { what: 'desconectado' });
    expectError(await send(s, L, TEXT, { destinatario: DEST, mensaje: uniqueText(), directo: 1 }), 403, 301);
    await link(s, L);
    expectOk(await send(s, L, TEXT, { destinatario: DEST, mensaje: uniqueText(), directo: 1 }), { modo: 'directo', count: 1 });
  });

  it('a suspended (or baja) client: 403 api_codigo 302', async () => {
    const L = await linkedLine(s);
    const r0 = await admin(s, 'POST', `/admin/clientes/${L.clienteId}`, { estado: 'suspendido' });
    expect(r0.status, r0.text).toBe(200);
    for (const directo of [0, 1]) {
      const r = await send(s, L, TEXT, { destinatario: DEST, mensaje: uniqueText(), directo });
      expectError(r, 403, 302);
      expect(r.body.error).toContain('suspendido');
    }
    // With the client key and celular_id too; and a client in `baja`.
    expectError(await send(s, L, TEXT, { destinatario: DEST, mensaje: uniqueText(), celular_id: L.celularId }, { key: L.clientKey }), 403, 302);
    expect((await admin(s, 'POST', `/admin/clientes/${L.clienteId}`, { estado: 'baja' })).status).toBe(200);
    expectError(await send(s, L, TEXT, { destinatario: DEST, mensaje: uniqueText() }), 403, 302);
  });

  it('a celular key naming a sibling line of its client with celular_id: 403', async () => {
    const A = await linkedLine(s);
    const sib = await api(s.url, 'POST', '/api/celular_crear.php', { key: A.clientKey, json: { numero: '525511112222' } });
    expect(sib.status, sib.text).toBe(201);
    expectError(await send(s, A, TEXT, { destinatario: DEST, mensaje: uniqueText(), celular_id: sib.body.celular_id }), 403, 201);
    // Its own id is fine.
    expectOk(await send(s, A, TEXT, { destinatario: DEST, mensaje: uniqueText(), celular_id: A.celularId }), { modo: 'cola', count: 1 });
  });

  it("another client's line with celular_id: 404 (client key and celular key)", async () => {
    const A = await linkedLine(s);
    const B = await linkedLine(s);
    expectError(await send(s, A, TEXT, { destinatario: DEST, mensaje: uniqueText(), celular_id: B.celularId }, { key: A.clientKey }), 404, 600);
    expectError(await send(s, A, TEXT, { destinatario: DEST, mensaje: uniqueText(), celular_id: B.celularId }), 404, 600);
    expect((await api(s.url, 'GET', '/api/historial_listar.php', { key: B.celularKey })).body.total).toBe(0);
  });
});
