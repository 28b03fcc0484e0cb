import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, startTestServer, type TestServer } from '../helpers/server.js';
import { expectError, expectOk } from '../helpers/expect.js';
import { admin, linkedLine, mensaje, saldos, send, TEXT, uniqueText, waitEstado, type Line } from './send-helpers.js';

/**
 * Billing of sends (docs/design.md §5): a metered send costs 1 from
 * the celular's balance, else from the client's global one; both empty is
 * 402; unlimited plans are never charged; a direct send the gateway refuses
 * is refunded; consumption counts; and all of it under concurrent requests.
 */

const DEST = '525598765432';

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer({ allowPrivateUrls: true, queue: { gapMinMs: 0, gapMaxMs: 0 }, simDeliveryMs: 20, simReadMs: 40 }, { inject: true });
});
afterAll(async () => {
  await s?.stop();
});

async function celularCredit(L: Line, monto: number): Promise<void> {
  const r = await admin(s, 'POST', '/admin/saldo', { cliente_id: L.clienteId, celular_id: L.celularId, monto });
  expect(r.status, r.text).toBe(200);
}

const info = async (L: Line) => (await api(s.url, 'GET', '/api/info.php', { key: L.clientKey })).body;

describe('metered plan', () => {
  it("charges the celular's saldo_actual first, then the global balance; both 0: 402 api_codigo 300", async () => {
    const L = await linkedLine(s, { saldo: 1 });
    await celularCredit(L, 2);
    expect(await saldos(s, L)).toMatchObject({ global: 1, celular: 2 });

    const a = await send(s, L, TEXT, { destinatario: DEST, mensaje: uniqueText() });
    expectOk(a, { modo: 'cola' });
    expect(a.body.saldo).toBe(1);
    expect(await saldos(s, L)).toMatchObject({ global: 1, celular: 1 });

    const b = await send(s, L, TEXT, { destinatario: DEST, mensaje: uniqueText(), directo: 1 });
    expectOk(b, { modo: 'directo' });
    expect(b.body.saldo).toBe(0);
    expect(await saldos(s, L)).toMatchObject({ global: 1, celular: 0 });

    const c = await send(s, L, TEXT, { destinatario: DEST, mensaje: uniqueText() });
    expectOk(c, { modo: 'cola' });
    expect(c.body.saldo).toBe(0);
    expect(await saldos(s, L)).toMatchObject({ global: 0, celular: 0 });
    expect((await mensaje(s, a.body.msg_id)).cargo).toBe('celular');
    expect((await mensaje(s, c.body.msg_id)).cargo).toBe('global');

    for (const directo of [0, 1]) {
      const r = await send(s, L, TEXT, { destinatario: DEST, mensaje: uniqueText(), directo });
      expectError(r, 402, 300);
      expect(r.body.saldo).toBe(0);
      expect(r.body.error).toMatch(/balance|saldo/i);
    }
    expect(await saldos(s, L)).toMatchObject({ global: 0, celular: 0 });
    const h = await api(s.url, 'GET', '/api/historial_listar.php', { key: L.celularKey });
    expect(h.body.total).toBe(3);
  });

  it('a 402 does not count towards duplicate protection', async () => {
    const L = await linkedLine(s, { saldo: 0 });
    const text = uniqueText('repetido');
    for (let i = 0; i < 4; i++) expectError(await send(s, L, TEXT, { destinatario: DEST, mensaje: text }), 402, 300);
    await celularCredit(L, 1);
    const r = await send(s, L, TEXT, { destinatario: DEST, mensaje: text });
    expectOk(r, { modo: 'cola' });
    expect(r.body.anti_dupe.count).toBe(1);
  });

  it('a direct send the gateway refuses for good: 502 api_codigo 704, recorded as error, the charge refunded (celular and global)', async () => {
    const L = await linkedLine(s, { saldo: 1 });
    await celularCredit(L, 1);
    const dead = '525500002222';
    expect((await admin(s, 'POST', '/admin/sim/fail', { numero: dead, motivo: 'no existe en la red' })).status).toBe(200);

    const r = await send(s, L, TEXT, { destinatario: dead, mensaje: uniqueText(), directo: 1 });
    expectError(r, 502, 704);
    expect(r.body.api_texto).toBe('DESTINATARIO_RECHAZADO');
    expect(r.body.error).toMatch(/no existe en la red/);
    expect(r.body.saldo).toBe(1);
    expect(await saldos(s, L)).toMatchObject({ global: 1, celular: 1 });
    const id = /msg_id ([0-9a-f-]{36})/.exec(r.body.error)?.[1];
    expect(id).toBeDefined();
    const m = await mensaje(s, id!);
    expect(m).toMatchObject({ estado: 'error', cobrado: 0, modo: 'directo', destinatario: dead });
    expect(m.error).toMatch(/no existe en la red/);

    // Now paid from the global balance (celular emptied by a good send first).
    expectOk(await send(s, L, TEXT, { destinatario: DEST, mensaje: uniqueText(), directo: 1 }), { modo: 'directo' });
    expect(await saldos(s, L)).toMatchObject({ global: 1, celular: 0 });
    expectError(await send(s, L, TEXT, { destinatario: dead, mensaje: uniqueText(), directo: 1 }), 502, 704);
    expect(await saldos(s, L)).toMatchObject({ global: 1, celular: 0 });

    const h = await api(s.url, 'GET', '/api/historial_listar.php?estado=error', { key: L.celularKey });
    expect(h.body.total).toBe(2);
    for (const x of h.body.mensajes) expect(x).toMatchObject({ estado: 'error', error: expect.stringMatching(/no existe/) });
  });

  it('info.php: consumo_mes_actual and mensajes_30d count the sends; a failed one is not consumption', async () => {
    const L = await linkedLine(s, { saldo: 10 });
    const before = await info(L);
    expect(before.cliente.consumo_mes_actual).toBe(0);
    expect(before.mensajes_30d).toBe(0);
    const dead = '525500003333';
    await admin(s, 'POST', '/admin/sim/fail', { numero: dead });
    expectOk(await send(s, L, TEXT, { destinatario: DEST, mensaje: uniqueText(), directo: 1 }), { modo: 'directo' });
    const q = await send(s, L, TEXT, { destinatario: DEST, mensaje: uniqueText() });
    expectOk(q, { modo: 'cola' });
    await waitEstado(s, q.body.msg_id, ['enviado', 'entregado', 'leido']);
    expectError(await send(s, L, TEXT, { destinatario: dead, mensaje: uniqueText(), directo: 1 }), 502, 704);
    const after = await info(L);
    expect(after.cliente.consumo_mes_actual).toBe(2);
    expect(after.mensajes_30d).toBeGreaterThanOrEqual(2);
    expect((await saldos(s, L)).consumo).toBe(2);
    expect(after.saldo_global).toBe(8);
  });
});

describe('unlimited plan', () => {
  it('is never charged, even with balance 0, and still counts consumption', async () => {
    const L = await linkedLine(s, { plan: 'ilimitado', saldo: 0 });
    for (const directo of [0, 1, 0]) {
      const r = await send(s, L, TEXT, { destinatario: DEST, mensaje: uniqueText(), directo });
      expectOk(r, { modo: directo ? 'directo' : 'cola' });
      expect(r.body.saldo).toBe(0);
      expect((await mensaje(s, r.body.msg_id)).cobrado).toBe(0);
    }
    expect(await saldos(s, L)).toMatchObject({ global: 0, celular: 0, consumo: 3 });
    expect((await info(L)).cliente).toMatchObject({ plan: 'ilimitado', consumo_mes_actual: 3 });
  });
});

describe('concurrency', () => {
  it('30 parallel sends (distinct texts) with saldo 10: exactly 10 accepted, 20 x 402, balance 0 and never negative', async () => {
    const L = await linkedLine(s, { saldo: 10 });
    const rs = await Promise.all(Array.from({ length: 30 }, (_, i) => send(s, L, TEXT, { destinatario: DEST, mensaje: `paralelo ${i} ${uniqueText()}` })));
    const ok = rs.filter((r) => r.status === 200);
    const poor = rs.filter((r) => r.status === 402);
    expect(ok.length).toBe(10);
    expect(poor.length).toBe(20);
    for (const r of poor) expectError(r, 402, 300);
    expect(new Set(ok.map((r) => r.body.msg_id)).size).toBe(10);
    expect(await saldos(s, L)).toMatchObject({ global: 0, celular: 0 });
    const cli = await s.core.store.getCliente(L.clienteId);
    expect(cli!.saldo_global).toBe(0);
    const h = await api(s.url, 'GET', '/api/historial_listar.php', { key: L.celularKey });
    expect(h.body.total).toBe(10);
  });

  it('20 parallel direct sends with celular 3 + global 2: exactly 5 sent, the rest 402', async () => {
    const L = await linkedLine(s, { saldo: 2 });
    await celularCredit(L, 3);
    const rs = await Promise.all(
      Array.from({ length: 20 }, (_, i) => send(s, L, TEXT, { destinatario: DEST, mensaje: `directo ${i} ${uniqueText()}`, directo: 1 })),
    );
    expect(rs.filter((r) => r.status === 200).length).toBe(5);
    expect(rs.filter((r) => r.status === 402).length).toBe(15);
    expect(await saldos(s, L)).toMatchObject({ global: 0, celular: 0 });
  });

  it('10 parallel identical sends: exactly 3 accepted, the rest 429 codigo 306; only 3 charged', async () => {
    const L = await linkedLine(s, { saldo: 20 });
    const text = uniqueText('igual');
    const rs = await Promise.all(Array.from({ length: 10 }, () => send(s, L, TEXT, { destinatario: DEST, mensaje: text })));
    const ok = rs.filter((r) => r.status === 200);
    expect(ok.length).toBe(3);
    expect(ok.map((r) => r.body.anti_dupe.count).sort()).toEqual([1, 2, 3]);
    const dup = rs.filter((r) => r.status === 429);
    expect(dup.length).toBe(7);
    for (const r of dup) {
      expectError(r, 429, 306);
      expect(r.body).toMatchObject({ codigo: 306, detalle: expect.any(String), retry_after: expect.any(Number) });
      expect(r.headers.get('retry-after')).toBe(String(r.body.retry_after));
    }
    expect((await saldos(s, L)).global).toBe(17);
  });
});
