import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ManualClock } from '../../src/core/time/clock.js';
import type { GatewayEvent } from '../../src/core/ports/gateway.js';
import { inboxRetention, PURGE_BATCH } from '../../src/core/history/recibidos.js';
import { api, startTestServer, type ApiResponse, type TestServer } from '../helpers/server.js';
import { expectError, expectOk } from '../helpers/expect.js';
import { admin, link, linkedLine, numeroNuevo, type Line } from './send-helpers.js';

/**
 * GET /api/recibidos_listar.php over real HTTP (docs/design.md §10). Incoming
 * messages arrive the way a phone's would: POST /admin/sim/receive with the
 * clock set per message, from three senders to two lines of one client and
 * one line of another; an in-test model of them is the oracle for every
 * filter. Then: a gateway delivering the same message twice, media metadata,
 * a deleted line, and the retention's purge on the manual clock.
 */

const H = 3_600_000;
const D = 86_400_000;
const PATH = '/api/recibidos_listar.php';
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const RECORD_KEYS = ['celular_id', 'created_at', 'de', 'fecha', 'gateway_msg_id', 'id', 'media', 'texto', 'tipo'];
// Senders of three countries, as stored; S1 is Mexican, as the lines are.
const S1 = '525512345678';
const S2 = '14155552671';
const S3 = '34612345678';

interface Seed {
  gid: string;
  seq: number;
  cliente_id: number;
  celular_id: number;
  de: string;
  texto: string;
  at: number;
}

let s: TestServer;
let A: Line;
let a2: Line;
let B: Line;
const seeds: Seed[] = [];
let seq = 0;
const clock = () => s.clock as ManualClock;
const day = (d: number, ms = 0) => Date.UTC(2026, 1, d) + ms;

/** Someone writes to the line at `at`: the simulator's receive, as `pasarela sim receive` does it. */
async function receive(line: Line, de: string, at: number, texto = `mensaje ${seq + 1}`): Promise<Seed> {
  clock().set(at);
  const r = await api(s.url, 'POST', '/admin/sim/receive', { key: s.adminToken, json: { celular_id: line.celularId, de, texto } });
  expect(r.status, r.text).toBe(200);
  seq += 1;
  const seed = { gid: r.body.gateway_msg_id as string, seq, cliente_id: line.clienteId, celular_id: line.celularId, de: r.body.de as string, texto, at };
  seeds.push(seed);
  return seed;
}

interface Model {
  cliente_id: number;
  celular_id?: number;
  de?: string;
  desde?: number;
  hasta?: number;
}
/** The oracle: matching seeds, newest first (ties: the later arrival first), as gateway ids. */
function expected(m: Model): string[] {
  return seeds
    .filter(
      (x) =>
        x.cliente_id === m.cliente_id &&
        (m.celular_id === undefined || x.celular_id === m.celular_id) &&
        (m.de === undefined || x.de === m.de) &&
        (m.desde === undefined || x.at >= m.desde) &&
        (m.hasta === undefined || x.at < m.hasta),
    )
    .sort((x, y) => y.at - x.at || y.seq - x.seq)
    .map((x) => x.gid);
}

const qs = (q: Record<string, string | number | undefined>) => {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(q)) if (v !== undefined) p.set(k, String(v));
  const t = p.toString();
  return t === '' ? '' : `?${t}`;
};
const get = (key: string | undefined, q: Record<string, string | number | undefined> = {}) => api(s.url, 'GET', `${PATH}${qs(q)}`, { key });
const gids = (r: ApiResponse) => r.body.recibidos.map((x: { gateway_msg_id: string }) => x.gateway_msg_id);

function expectPage(r: ApiResponse): void {
  expectOk(r);
  expect(r.body).toMatchObject({ page: expect.any(Number), por_pagina: expect.any(Number), total: expect.any(Number), total_paginas: expect.any(Number) });
  expect(Array.isArray(r.body.recibidos)).toBe(true);
}

/** A second line of `line`'s client, linked. */
async function secondLine(line: Line): Promise<Line> {
  const r = await api(s.url, 'POST', '/api/celular_crear.php', { key: line.clientKey, json: { numero: numeroNuevo() } });
  expect(r.status, r.text).toBe(201);
  const l: Line = { ...line, celularId: r.body.celular_id, celularKey: r.body.api_key, gatewayToken: r.body.gateway_token, numero: r.body.celular.numero };
  await link(s, l);
  return l;
}

beforeAll(async () => {
  // The purge runs only when a test calls it.
  s = await startTestServer({ tz: 'UTC', inboxPurgeIntervalMs: 0, healthIntervalMs: 0 }, { inject: true });
  A = await linkedLine(s);
  a2 = await secondLine(A);
  B = await linkedLine(s);
  // Client A: 30 messages over 2026-02-01..06, five a day at 00:00:00.000, 06:00, 12:00, 18:00 and 23:59:59.999,
  // from three senders to both lines.
  const slots = [0, 6 * H, 12 * H, 18 * H, 24 * H - 1];
  for (let i = 0; i < 30; i += 1) {
    await receive(i % 2 === 0 ? A : a2, [S1, S2, S3][i % 3]!, day(1 + Math.floor(i / 5), slots[i % 5]));
  }
  // Two at the same instant: the later arrival comes first.
  for (let i = 0; i < 2; i += 1) await receive(A, S1, day(7, 10 * H));
  // Client B: 6 messages from the same senders on the same days.
  for (let i = 0; i < 6; i += 1) await receive(B, [S1, S2, S3][i % 3]!, day(1 + i, 3 * H));
});
afterAll(async () => {
  await s?.stop();
});

describe('GET /api/recibidos_listar.php: records and filters', () => {
  const all = { por_pagina: 500 };

  it('no filter: every incoming message of the client, newest first, with the total and every documented field', async () => {
    const r = await get(A.clientKey, all);
    expectPage(r);
    expect(gids(r)).toEqual(expected({ cliente_id: A.clienteId }));
    expect(r.body).toMatchObject({ page: 1, por_pagina: 500, total: 32, total_paginas: 1, saldo: null });
    const newest = seeds[31]!;
    expect(gids(r).slice(0, 2)).toEqual([newest.gid, seeds[30]!.gid]);
    const rec = r.body.recibidos[0];
    expect(Object.keys(rec).sort()).toEqual(RECORD_KEYS);
    expect(rec).toEqual({
      id: expect.any(Number),
      celular_id: A.celularId,
      de: S1,
      tipo: 'texto',
      texto: newest.texto,
      media: null,
      gateway_msg_id: newest.gid,
      fecha: new Date(newest.at).toISOString(),
      created_at: new Date(newest.at).toISOString(),
    });
    for (const x of r.body.recibidos) {
      expect(x.created_at).toMatch(ISO);
      expect(x.fecha).toMatch(ISO);
    }
    // Ids grow with arrival.
    expect(r.body.recibidos[0].id).toBeGreaterThan(r.body.recibidos[1].id);
  });

  it('each filter alone: the line, the sender, the days', async () => {
    const cases: Array<[Record<string, string | number>, Omit<Model, 'cliente_id'>]> = [
      [{ celular_id: A.celularId }, { celular_id: A.celularId }],
      [{ celular_id: a2.celularId }, { celular_id: a2.celularId }],
      [{ remitente: S1 }, { de: S1 }],
      [{ remitente: S2 }, { de: S2 }],
      [{ remitente: S3 }, { de: S3 }],
      [{ desde: '2026-02-03' }, { desde: day(3) }],
      [{ hasta: '2026-02-03' }, { hasta: day(4) }],
      [
        { desde: '2026-02-04', hasta: '2026-02-04' },
        { desde: day(4), hasta: day(5) },
      ],
      [{ desde: '2026-02-08' }, { desde: day(8) }],
      [{ hasta: '2026-01-31' }, { hasta: day(1) }],
      // RFC 3339 instants: desde included, hasta excluded, offsets read.
      [
        { desde: '2026-02-02T06:00:00Z', hasta: '2026-02-02T12:00:00Z' },
        { desde: day(2) + 6 * H, hasta: day(2) + 12 * H },
      ],
      [
        { desde: '2026-02-02T00:00:00-06:00', hasta: '2026-02-04' },
        { desde: day(2) + 6 * H, hasta: day(5) },
      ],
    ];
    for (const [q, m] of cases) {
      const r = await get(A.clientKey, { ...all, ...q });
      expectPage(r);
      const want = expected({ cliente_id: A.clienteId, ...m });
      expect(gids(r), JSON.stringify(q)).toEqual(want);
      expect(r.body.total, JSON.stringify(q)).toBe(want.length);
    }
  });

  it('hasta includes its whole last day, to 23:59:59.999; desde starts at 00:00:00.000', async () => {
    const r = await get(A.clientKey, { desde: '2026-02-02', hasta: '2026-02-02' });
    expectPage(r);
    expect(r.body.recibidos.map((m: { created_at: string }) => m.created_at)).toEqual([
      '2026-02-02T23:59:59.999Z',
      '2026-02-02T18:00:00.000Z',
      '2026-02-02T12:00:00.000Z',
      '2026-02-02T06:00:00.000Z',
      '2026-02-02T00:00:00.000Z',
    ]);
  });

  it('filters combined', async () => {
    const cases: Array<[Record<string, string | number>, Omit<Model, 'cliente_id'>]> = [
      [
        { celular_id: A.celularId, remitente: S2 },
        { celular_id: A.celularId, de: S2 },
      ],
      [
        { remitente: S3, desde: '2026-02-02', hasta: '2026-02-05' },
        { de: S3, desde: day(2), hasta: day(6) },
      ],
      [
        { celular_id: a2.celularId, desde: '2026-02-03' },
        { celular_id: a2.celularId, desde: day(3) },
      ],
      [
        { celular_id: a2.celularId, remitente: S1, desde: '2026-02-01', hasta: '2026-02-06' },
        { celular_id: a2.celularId, de: S1, desde: day(1), hasta: day(7) },
      ],
    ];
    for (const [q, m] of cases) {
      const r = await get(A.clientKey, { ...all, ...q });
      expectPage(r);
      const want = expected({ cliente_id: A.clienteId, ...m });
      expect(want.length, JSON.stringify(q)).toBeGreaterThan(0);
      expect(gids(r), JSON.stringify(q)).toEqual(want);
      expect(r.body.total).toBe(want.length);
    }
  });

  it('remitente is normalised like a recipient: +, spaces, the old Mexican mobile 1, a national number with a line in context', async () => {
    const want = expected({ cliente_id: A.clienteId, de: S1 });
    for (const d of ['+52 55 1234 5678', '+52 1 55 1234 5678', '52 (55) 1234-5678']) {
      const r = await get(A.clientKey, { ...all, remitente: d });
      expectPage(r);
      expect(gids(r), d).toEqual(want);
    }
    expect(gids(await get(A.clientKey, { ...all, remitente: '+1 (415) 555-2671' }))).toEqual(expected({ cliente_id: A.clienteId, de: S2 }));
    // A bare national number needs a line whose country reads it: named, or the celular key's own.
    expectError(await get(A.clientKey, { remitente: '5512345678' }), 400, 100);
    const withLine = await get(A.clientKey, { ...all, remitente: '55 1234 5678', celular_id: A.celularId });
    expectPage(withLine);
    expect(gids(withLine)).toEqual(expected({ cliente_id: A.clienteId, de: S1, celular_id: A.celularId }));
    const celKey = await get(A.celularKey, { ...all, remitente: '5512345678' });
    expectPage(celKey);
    expect(gids(celKey)).toEqual(expected({ cliente_id: A.clienteId, de: S1, celular_id: A.celularId }));
  });

  it('another client sees only its own inbox', async () => {
    const r = await get(B.clientKey, all);
    expectPage(r);
    expect(gids(r)).toEqual(expected({ cliente_id: B.clienteId }));
    expect(r.body.total).toBe(6);
  });
});

describe('GET /api/recibidos_listar.php: pages', () => {
  const everything = () => expected({ cliente_id: A.clienteId });

  it('50 a page by default; page 2, the last page, a page past the end', async () => {
    const first = await get(A.clientKey);
    expectPage(first);
    expect(first.body).toMatchObject({ page: 1, por_pagina: 50, total: 32, total_paginas: 1 });
    const p2 = await get(A.clientKey, { por_pagina: 7, page: 2 });
    expectPage(p2);
    expect(p2.body).toMatchObject({ page: 2, por_pagina: 7, total: 32, total_paginas: 5 });
    expect(gids(p2)).toEqual(everything().slice(7, 14));
    const last = await get(A.clientKey, { por_pagina: 7, page: 5 });
    expect(gids(last)).toEqual(everything().slice(28));
    const past = await get(A.clientKey, { por_pagina: 7, page: 6 });
    expectPage(past);
    expect(past.body).toMatchObject({ page: 6, total: 32, total_paginas: 5, recibidos: [] });
  });

  it('walking every page gives every record once, in order', async () => {
    const seen: string[] = [];
    for (let page = 1; page <= 4; page += 1) {
      const r = await get(A.clientKey, { por_pagina: 10, page });
      expectPage(r);
      expect(r.body.total_paginas).toBe(4);
      seen.push(...gids(r));
    }
    expect(seen).toEqual(everything());
  });

  it('nothing matching: total 0, total_paginas 0; por_pagina from 1 to 500', async () => {
    const none = await get(A.clientKey, { desde: '2030-01-01' });
    expectPage(none);
    expect(none.body).toMatchObject({ page: 1, total: 0, total_paginas: 0, recibidos: [] });
    const one = await get(A.clientKey, { por_pagina: 1 });
    expect(one.body).toMatchObject({ por_pagina: 1, total: 32, total_paginas: 32 });
    expect(one.body.recibidos).toHaveLength(1);
  });
});

describe('GET /api/recibidos_listar.php: refusals and scope', () => {
  it('400 JSON for a bad page, por_pagina, date, range, line id or sender; never a 500', async () => {
    const bad: Array<Record<string, string | number>> = [
      { page: 0 },
      { page: 'dos' },
      { page: 1.5 },
      { page: '9007199254740991', por_pagina: 500 },
      { por_pagina: 0 },
      { por_pagina: 501 },
      { por_pagina: 'x' },
      { desde: '2026-02-30' },
      { hasta: '2025-02-29' },
      { desde: '2026-2-1' },
      { hasta: 'ayer' },
      { desde: '2026-02-05', hasta: '2026-02-04' },
      { celular_id: 0 },
      { celular_id: 'uno' },
      { remitente: '' },
      { remitente: 'no-es-numero' },
      { remitente: '123' },
      { remitente: '9'.repeat(40) },
    ];
    for (const q of bad) {
      const r = await get(A.clientKey, q);
      expect(r.headers.get('content-type'), JSON.stringify(q)).toMatch(/^application\/json/);
      expectError(r, 400, 100);
    }
  });

  it('401 without a credential or with a wrong one; the key may come in the query string', async () => {
    expectError(await get(undefined), 401, 200);
    expectError(await get('WAC_1_not-a-real-key'), 401, 200);
    const r = await get(undefined, { key: B.clientKey });
    expectPage(r);
    expect(r.body.total).toBe(6);
  });

  it('a celular key sees its own line only; another line of its client is 403, any other id 404', async () => {
    const own = expected({ cliente_id: A.clienteId, celular_id: A.celularId });
    const r = await get(A.celularKey, { por_pagina: 500 });
    expectPage(r);
    expect(gids(r)).toEqual(own);
    expect(r.body.saldo).toEqual(expect.any(Number));
    expect(new Set(r.body.recibidos.map((m: { celular_id: number }) => m.celular_id))).toEqual(new Set([A.celularId]));
    expect((await get(A.celularKey, { celular_id: A.celularId })).body.total).toBe(own.length);
    expectError(await get(A.celularKey, { celular_id: a2.celularId }), 403, 201);
    expectError(await get(A.celularKey, { celular_id: B.celularId }), 404, 600);
    expectError(await get(A.celularKey, { celular_id: 999999 }), 404, 600);
    // The gateway token is a celular credential too; a client key with another client's line is 404.
    expect(gids(await get(A.gatewayToken, { por_pagina: 500 }))).toEqual(own);
    expectError(await get(A.clientKey, { celular_id: B.celularId }), 404, 600);
  });
});

describe('what the inbox keeps', () => {
  const sim = () => s.core.gateway as unknown as { emit(e: GatewayEvent): Promise<void> };
  const instancia = async (l: Line) => (await s.core.store.getCelular(l.celularId))!.gateway_instancia!;

  it('a gateway delivering the same message twice (the same dedupe key) keeps it once; another key is another message', async () => {
    const inst = await instancia(B);
    const at = day(20);
    clock().set(at);
    const ev = (id: string, texto: string): GatewayEvent => ({
      type: 'inbound',
      instancia: inst,
      de: S2,
      tipo: 'texto',
      texto,
      media: null,
      gatewayMsgId: id,
      at,
      dedupeKey: `sim:${inst}:${id}`,
    });
    await sim().emit(ev('DUP-1', 'una vez'));
    await sim().emit(ev('DUP-1', 'una vez'));
    await sim().emit(ev('DUP-2', 'una vez'));
    const r = await get(B.clientKey, { desde: '2026-02-20', hasta: '2026-02-20' });
    expectPage(r);
    expect(gids(r)).toEqual(['DUP-2', 'DUP-1']);
    // Also twice over HTTP, through the simulator's route: each receive is a new network message.
    await receive(B, S3, day(21), 'dos veces');
    await receive(B, S3, day(21), 'dos veces');
    expect((await get(B.clientKey, { desde: '2026-02-21', hasta: '2026-02-21' })).body.total).toBe(2);
  });

  it('media: its metadata only (a field the gateway adds stays on the server); a hidden-number sender, a NUL in the text', async () => {
    const inst = await instancia(B);
    const at = day(22);
    clock().set(at);
    await sim().emit({
      type: 'inbound',
      instancia: inst,
      de: S1,
      tipo: 'audio',
      texto: null,
      media: { mime: 'audio/ogg; codecs=opus', bytes: 4242, url: 'https://gw.example/files/a.ogg', ptt: true, base64: 'T2dnUw==' },
      gatewayMsgId: 'MEDIA-1',
      at: at - 5000,
      dedupeKey: `sim:${inst}:MEDIA-1`,
    });
    await sim().emit({
      type: 'inbound',
      instancia: inst,
      de: '123456789012345@lid',
      tipo: 'texto',
      texto: 'a\u0000b',
      media: null,
      gatewayMsgId: 'LID-1',
      at,
      dedupeKey: `sim:${inst}:LID-1`,
    });
    const r = await get(B.clientKey, { desde: '2026-02-22', hasta: '2026-02-22' });
    expectPage(r);
    const [lid, audio] = r.body.recibidos;
    expect(audio).toMatchObject({
      de: S1,
      tipo: 'audio',
      texto: null,
      media: { mime: 'audio/ogg; codecs=opus', bytes: 4242, url: 'https://gw.example/files/a.ogg', ptt: true },
      // fecha is the gateway's; created_at pasarela's.
      fecha: new Date(at - 5000).toISOString(),
      created_at: new Date(at).toISOString(),
    });
    expect(Object.keys(audio.media).sort()).toEqual(['bytes', 'mime', 'ptt', 'url']);
    expect(lid).toMatchObject({ de: '123456789012345@lid', texto: 'a\uFFFDb' });
    // A hidden-number sender is found by its contact id, exactly.
    expect(gids(await get(B.clientKey, { remitente: '123456789012345@lid' }))).toEqual(['LID-1']);
    expect((await get(B.clientKey, { remitente: '123456789012345@LID' })).body.total).toBe(0);
  });

  it('a Mexican mobile as WhatsApp ids carry it (521…) is kept as 52…, like the history, and found by remitente either way', async () => {
    const inst = await instancia(B);
    const at = day(24);
    clock().set(at);
    await sim().emit({
      type: 'inbound',
      instancia: inst,
      de: '5215599990000',
      tipo: 'texto',
      texto: 'hola',
      media: null,
      gatewayMsgId: 'MX-1',
      at,
      dedupeKey: `sim:${inst}:MX-1`,
    });
    const r = await get(B.clientKey, { desde: '2026-02-24', hasta: '2026-02-24' });
    expectPage(r);
    expect(r.body.recibidos).toEqual([expect.objectContaining({ gateway_msg_id: 'MX-1', de: '525599990000' })]);
    for (const remitente of ['5215599990000', '525599990000', '+52 1 55 9999 0000', '+52 55 9999 0000']) {
      expect(gids(await get(B.clientKey, { remitente })), remitente).toEqual(['MX-1']);
    }
    expect(gids(await get(B.celularKey, { remitente: '55 9999 0000' }))).toEqual(['MX-1']);
  });

  it("a deleted line's messages stay in the client's inbox (like its history); naming the line is then 404", async () => {
    const gone = await secondLine(B);
    const msg = await receive(gone, S2, day(23), 'antes de borrar');
    const del = await api(s.url, 'POST', `/api/celular_eliminar.php?id=${gone.celularId}`, { key: B.clientKey });
    expect(del.status, del.text).toBe(200);
    const r = await get(B.clientKey, { desde: '2026-02-23', hasta: '2026-02-23' });
    expect(gids(r)).toEqual([msg.gid]);
    expect(r.body.recibidos[0].celular_id).toBe(gone.celularId);
    expectError(await get(B.clientKey, { celular_id: gone.celularId }), 404, 600);
    expectError(await get(gone.celularKey), 401, 200);
  });
});

describe('retention', () => {
  let r: TestServer;
  let line: Line;
  const t0 = Date.UTC(2026, 5, 1);
  const listAll = async () => (await api(r.url, 'GET', `${PATH}?por_pagina=500`, { key: line.clientKey })).body;

  beforeAll(async () => {
    r = await startTestServer({ tz: 'UTC', inboxRetentionMs: 2 * D, inboxPurgeIntervalMs: 0, healthIntervalMs: 0 }, { inject: true });
    line = await linkedLine(r);
  });
  afterAll(async () => {
    await r?.stop();
  });

  it('a pass removes what was recorded more than the retention before the clock; 0 keeps everything', async () => {
    const c = r.clock as ManualClock;
    for (let i = 0; i < 5; i += 1) {
      c.set(t0 + i * D);
      const x = await admin(r, 'POST', '/admin/sim/receive', { celular_id: line.celularId, de: S2, texto: `dia ${i}` });
      expect(x.status, x.text).toBe(200);
    }
    expect((await listAll()).total).toBe(5);
    const keepAll = inboxRetention(r.core, { retentionMs: 0, intervalMs: 0, onError: () => {} });
    expect(await keepAll.run()).toBe(0);
    expect((await listAll()).total).toBe(5);
    // At day 4: days 0 and 1 are more than two days old; day 2 is exactly two days old and stays.
    expect(await r.inbox.run()).toBe(2);
    expect((await listAll()).recibidos.map((m: { texto: string }) => m.texto)).toEqual(['dia 4', 'dia 3', 'dia 2']);
    // An hour later day 2 goes too.
    c.set(t0 + 4 * D + H);
    expect(await r.inbox.run()).toBe(1);
    const left = await listAll();
    expect(left.recibidos.map((m: { texto: string }) => m.texto)).toEqual(['dia 4', 'dia 3']);
    expect(await r.inbox.run()).toBe(0);
  });

  it('one pass removes more than a batch; a pass asked for while one runs waits for it (and finds nothing left)', async () => {
    const c = r.clock as ManualClock;
    const cel = (await r.core.store.getCelular(line.celularId))!;
    const old = t0 + 10 * D;
    const n = 2 * PURGE_BATCH + 17;
    // Straight into the store: enough rows for three batches.
    await Promise.all(
      Array.from({ length: n }, (_, i) =>
        r.core.store.journalInbound(
          { evento: 'messages.received', cliente_id: cel.cliente_id, celular_id: cel.id, data: {}, fecha: old },
          `bulk:${i}`,
          old + i,
          {
            cliente_id: cel.cliente_id,
            celular_id: cel.id,
            de: S3,
            tipo: 'texto',
            texto: `viejo ${i}`,
            media: null,
            gateway_msg_id: `BULK${i}`,
            fecha: old + i,
          },
        ),
      ),
    );
    c.set(old + n + 1 + 2 * D);
    const keep = await admin(r, 'POST', '/admin/sim/receive', { celular_id: line.celularId, de: S1, texto: 'reciente' });
    expect(keep.status).toBe(200);
    const before = (await listAll()).total;
    expect(before).toBe(n + 3);
    const [a, b] = await Promise.all([r.inbox.run(), r.inbox.run()]);
    expect(a).toBe(n + 2);
    expect(b).toBe(0);
    const left = await listAll();
    expect(left.recibidos.map((m: { texto: string }) => m.texto)).toEqual(['reciente']);
  });
});
