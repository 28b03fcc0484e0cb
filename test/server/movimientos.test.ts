import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pgSchema } from '../contract/adapters.js';
import { api, startTestServer, type TestServer } from '../helpers/server.js';
import { describeWith, postgres, schemaUrl } from '../helpers/services.js';
import { expectError, expectOk } from '../helpers/expect.js';
import { admin, linkedLine, send, TEXT, uniqueText, waitEstado, type Line } from './send-helpers.js';

/**
 * GET /api/movimientos.php, /api/consumo.php and /admin/movimientos over
 * real HTTP, on SQLite and on PostgreSQL: real sends charged, a refused one
 * refunded, additions by the operator and by the client's key, then each
 * credential's view, each filter and its refusals in words, the exports.
 */

const PATH = '/api/movimientos.php';
const FAILS = '525598770001';

function suite(start: () => Promise<TestServer>) {
  let s: TestServer;
  let L: Line;
  let sibling: number;
  let sent: string[];
  let failed: string;

  beforeAll(async () => {
    s = await start();
    L = await linkedLine(s, { saldo: 5 });
    // A second line of the same client, and a credit on the first line's own balance.
    const cel = await api(s.url, 'POST', '/api/celular_crear.php', { key: L.clientKey, json: { numero: '525598779999' } });
    expect(cel.status, cel.text).toBe(201);
    sibling = cel.body.celular_id;
    expectOk(await admin(s, 'POST', '/admin/saldo', { cliente_id: L.clienteId, celular_id: L.celularId, monto: 2, motivo: 'regalo' }));
    sent = [];
    for (let i = 0; i < 4; i++) {
      const r = await send(s, L, TEXT, { destinatario: '525598765432', mensaje: uniqueText(), directo: 1 });
      expectOk(r);
      sent.push(r.body.msg_id);
    }
    expectOk(await admin(s, 'POST', '/admin/sim/fail', { numero: FAILS, motivo: 'not on the network' }));
    const f = await send(s, L, TEXT, { destinatario: FAILS, mensaje: uniqueText(), directo: 1 });
    expectError(f, 502, 704);
    failed = /msg_id ([0-9a-f-]{36})/.exec(f.body.error)![1]!;
    await waitEstado(s, failed, 'error');
    expectOk(await admin(s, 'POST', '/admin/saldo', { cliente_id: L.clienteId, monto: -1, motivo: '=SUM(A1) ajuste' }));
  });
  afterAll(async () => {
    await s?.stop();
  });

  const list = (q: string, key = L.clientKey) => api(s.url, 'GET', `${PATH}${q}`, { key });

  it('lists every movement newest first, with its tipo, msg_id and actor; the ledger sums to the balances', async () => {
    const r = await list('');
    expectOk(r);
    const m = r.body.movimientos as Array<Record<string, unknown>>;
    // Opening credit, the line's credit, 5 charges (2 from the line, 3 global), 1 refund, 1 removal.
    expect(r.body).toMatchObject({ page: 1, por_pagina: 50, total: 9, total_paginas: 1, cliente_id: L.clienteId });
    expect(m.map((x) => x.tipo)).toEqual(['manual', 'reembolso', 'cobro', 'cobro', 'cobro', 'cobro', 'cobro', 'manual', 'manual']);
    expect(Object.keys(m[0]!).sort()).toEqual(['actor', 'celular_id', 'fecha', 'id', 'monto', 'motivo', 'msg_id', 'saldo_despues', 'tipo']);
    expect(m[0]).toMatchObject({ monto: -1, celular_id: null, msg_id: null, motivo: '=SUM(A1) ajuste', actor: 'operator' });
    expect(m[1]).toMatchObject({ monto: 1, msg_id: failed, actor: 'sistema' });
    expect(m.slice(2, 7).map((x) => x.msg_id)).toEqual([...sent, failed].reverse());
    expect(m[7]).toMatchObject({ monto: 2, celular_id: L.celularId, saldo_despues: 2, motivo: 'regalo', actor: 'operator' });
    expect(m[8]).toMatchObject({ monto: 5, celular_id: null, motivo: 'saldo inicial' });
    const saldo = (await api(s.url, 'GET', `/api/saldo.php?celular_id=${L.celularId}`, { key: L.clientKey })).body;
    const sum = m.reduce((n, x) => n + (x.monto as number), 0);
    expect(sum).toBe(saldo.saldo_global + saldo.saldo_celular);
    // 5 + 2 credited, 5 charged, 1 refunded, 1 removed.
    expect(sum).toBe(2);
  });

  it('filters by tipo, line and days; pages to the end', async () => {
    const tipos = async (q: string) => ((await list(q)).body.movimientos as Array<{ tipo: string }>).map((x) => x.tipo);
    expect(await tipos('?tipo=manual')).toEqual(['manual', 'manual', 'manual']);
    expect(await tipos('?tipo=reembolso')).toEqual(['reembolso']);
    expect(await tipos('?tipo=cobro')).toHaveLength(5);
    expect(await tipos(`?celular_id=${L.celularId}`)).toEqual(['cobro', 'cobro', 'manual']);
    expect(await tipos(`?celular_id=${sibling}`)).toEqual([]);
    expect(await tipos('?desde=2000-01-01&hasta=2000-12-31')).toEqual([]);
    expect((await list('?desde=2000-01-01')).body.total).toBe(9);
    const ids: number[] = [];
    for (let page = 1; page <= 5; page++) {
      const r = await list(`?por_pagina=2&page=${page}`);
      expect(r.body.total_paginas).toBe(5);
      ids.push(...(r.body.movimientos as Array<{ id: number }>).map((x) => x.id));
    }
    expect(new Set(ids).size).toBe(9);
    expect((await list('?por_pagina=2&page=6')).body.movimientos).toEqual([]);
  });

  it("a celular key sees its own line's balance only; a sibling line 403, an unknown one 404", async () => {
    const r = await list('', L.celularKey);
    expectOk(r);
    expect((r.body.movimientos as Array<{ celular_id: number }>).every((x) => x.celular_id === L.celularId)).toBe(true);
    expect(r.body.total).toBe(3);
    expectError(await list(`?celular_id=${sibling}`, L.celularKey), 403);
    expectError(await list('?celular_id=999999'), 404);
  });

  it('refuses bad filters with a 400 in words', async () => {
    for (const [q, words] of [
      ['?tipo=regalo', /tipo/],
      ['?desde=ayer', /desde/],
      ['?desde=2026-05-02&hasta=2026-05-01', /desde .* after hasta/],
      ['?page=0', /page/],
      ['?por_pagina=501', /por_pagina/],
      ['?format=xml', /format/],
      ['?celular_id=abc', /celular_id/],
    ] as const) {
      const r = await list(q);
      expectError(r, 400);
      expect(r.body.api_descripcion ?? r.body.error, q).toMatch(words);
    }
    expectError(await list('', 'WAC_1_nope'), 401);
  });

  it('the operator reads any client by cliente_id; no client 404; a client key is refused', async () => {
    const r = await api(s.url, 'GET', `/admin/movimientos?cliente_id=${L.clienteId}&tipo=manual`, { key: s.adminToken });
    expectOk(r);
    expect(r.body.total).toBe(3);
    expectError(await api(s.url, 'GET', '/admin/movimientos?cliente_id=999999', { key: s.adminToken }), 404);
    expectError(await api(s.url, 'GET', '/admin/movimientos', { key: s.adminToken }), 400);
    const denied = await api(s.url, 'GET', `/admin/movimientos?cliente_id=${L.clienteId}`, { key: L.clientKey });
    expect([401, 403]).toContain(denied.status);
  });

  it('exports every movement of the filter as CSV (formula-guarded) and NDJSON', async () => {
    const csv = await list('?format=csv&por_pagina=1');
    expect(csv.status).toBe(200);
    expect(csv.headers.get('content-type')).toMatch(/^text\/csv/);
    const rows = csv.text.trimEnd().split('\r\n');
    expect(rows[0]).toBe('id,fecha,tipo,monto,saldo_despues,celular_id,msg_id,motivo,actor');
    expect(rows).toHaveLength(10);
    // A number stays a number; a text a spreadsheet would run as a formula is guarded.
    expect(rows[1]).toMatch(/,manual,-1,2,,,'=SUM\(A1\) ajuste,operator$/);
    const nd = await list('?format=ndjson&tipo=cobro');
    expect(nd.headers.get('content-type')).toMatch(/^application\/x-ndjson/);
    const lines = nd.text
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l) as { tipo: string });
    expect(lines.map((l) => l.tipo)).toEqual(['cobro', 'cobro', 'cobro', 'cobro', 'cobro']);
    expectError(await list('?format=csv&tipo=nada'), 400);
  });

  it("answers this month's consumption per line, a celular key its own; a bad month 400", async () => {
    const r = await api(s.url, 'GET', '/api/consumo.php', { key: L.clientKey });
    expectOk(r);
    expect(r.body).toMatchObject({ cliente_id: L.clienteId, plan: 'medido', mensajes: 4, monto: 4 });
    expect(r.body.mes).toMatch(/^\d{4}-\d{2}$/);
    expect(r.body.lineas).toEqual([
      { celular_id: L.celularId, numero: L.numero, mensajes: 4, monto: 4 },
      { celular_id: sibling, numero: '525598779999', mensajes: 0, monto: 0 },
    ]);
    const own = await api(s.url, 'GET', '/api/consumo.php', { key: L.celularKey });
    expect(own.body.lineas).toHaveLength(1);
    const past = await api(s.url, 'GET', '/api/consumo.php?mes=2001-02', { key: L.clientKey });
    expect(past.body).toMatchObject({ mes: '2001-02', mensajes: 0, monto: 0 });
    for (const mes of ['2026-13', '26-01', 'mayo']) expectError(await api(s.url, 'GET', `/api/consumo.php?mes=${mes}`, { key: L.clientKey }), 400);
  });
}

describe('movements and consumption on SQLite', () => {
  suite(() => startTestServer({ allowPrivateUrls: true, queue: { gapMinMs: 0, gapMaxMs: 0 } }, { inject: true }));
});

const drops: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const d of drops) await d();
});
describeWith(postgres, 'movements and consumption on PostgreSQL', () => {
  suite(async () => {
    const schema = await pgSchema();
    drops.push(schema.drop);
    return startTestServer({ store: schemaUrl(schema.schema), allowPrivateUrls: true, queue: { gapMinMs: 0, gapMaxMs: 0 } }, { inject: true });
  });
});
