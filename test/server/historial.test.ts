import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ManualClock } from '../../src/core/time/clock.js';
import { startOfDay } from '../../src/core/history/historial.js';
import type { MensajeEstado, Tipo } from '../../src/core/ports/model.js';
import { api, seedClient, startTestServer, type Seeded, type TestServer } from '../helpers/server.js';
import { expectError, expectOk, numeroNuevo } from '../helpers/expect.js';

/**
 * GET /api/historial_listar.php over real HTTP. Messages are seeded straight
 * into the store (accept, then sent / receipts / failure for every estado)
 * with the clock set per message; an in-test model of the seeds is the oracle
 * for every filter, alone and combined.
 */

const H = 3_600_000;
const PATH = '/api/historial_listar.php';
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const RECORD_KEYS = [
  'celular_id',
  'created_at',
  'destinatario',
  'entregado_at',
  'enviado_at',
  // Added by scheduling (issue 40): a scheduled send's due time; null otherwise.
  'enviar_en',
  'error',
  'error_clase',
  'estado',
  'gateway_msg_id',
  'leido_at',
  'media',
  'modo',
  'msg_id',
  // Added by mensaje_reintentar (issue 36): the failed message a retry names; null otherwise.
  'reintento_de',
  'texto',
  'tipo',
  // Added by the validity (issue 40): a queued send's vigencia end; null otherwise.
  'vigencia_hasta',
];
const ESTADOS: MensajeEstado[] = ['enviado', 'entregado', 'leido', 'error', 'pendiente'];
// Valid numbers of three countries; D1 is Mexican, as the seeded lines are.
const D1 = '525512345678';
const D2 = '14155552671';
const D3 = '34612345678';

interface Seed {
  msg_id: string;
  seq: number;
  cliente_id: number;
  celular_id: number;
  destinatario: string;
  estado: MensajeEstado;
  created_at: number;
}

interface SeedInput {
  cliente_id: number;
  celular_id: number;
  destinatario: string;
  estado: MensajeEstado;
  at: number;
  tipo?: Tipo;
  texto?: string | null;
  media?: Record<string, unknown> | null;
}

let seq = 0;
/** One message in the given estado, created at `at` (the clock is set there), with its later timestamps a second apart. */
async function seedMensaje(s: TestServer, o: SeedInput): Promise<Seed> {
  const clock = s.clock as ManualClock;
  const store = s.core.store;
  seq += 1;
  const msg_id = `hist-${String(seq).padStart(5, '0')}-${Math.random().toString(36).slice(2, 8)}`;
  clock.set(o.at);
  const texto = o.texto === undefined ? `mensaje ${seq}` : o.texto;
  // Queue-mode messages are moved out of `pendiente` at once so no queue worker can pick them up.
  const modo = o.estado === 'pendiente' || seq % 3 === 0 ? 'directo' : 'cola';
  const r = await store.acceptMensaje(
    {
      msg_id,
      cliente_id: o.cliente_id,
      celular_id: o.celular_id,
      destinatario: o.destinatario,
      tipo: o.tipo ?? 'texto',
      modo,
      texto,
      media: o.media ?? null,
      payload: { texto: texto ?? undefined, file: '/tmp/payload-secret-path.bin' },
      expira_at: null,
    },
    { charge: false, maxPending: null },
    clock.now(),
  );
  expect(r.ok).toBe(true);
  const gid = `gw-${msg_id}`;
  if (o.estado === 'error') {
    clock.advance(1000);
    expect(await store.failMensaje(msg_id, 'el número no existe', 'rechazado', clock.now())).not.toBeNull();
  } else if (o.estado !== 'pendiente') {
    clock.advance(1000);
    expect(await store.markSent(msg_id, gid, clock.now())).not.toBeNull();
    if (o.estado === 'entregado' || o.estado === 'leido') {
      clock.advance(1000);
      expect(await store.receipt(o.celular_id, gid, 'entregado', clock.now())).not.toBeNull();
    }
    if (o.estado === 'leido') {
      clock.advance(1000);
      expect(await store.receipt(o.celular_id, gid, 'leido', clock.now())).not.toBeNull();
    }
  }
  return { msg_id, seq, cliente_id: o.cliente_id, celular_id: o.celular_id, destinatario: o.destinatario, estado: o.estado, created_at: o.at };
}

const qs = (q: Record<string, string | number | undefined>) => {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(q)) if (v !== undefined) p.set(k, String(v));
  const t = p.toString();
  return t === '' ? '' : `?${t}`;
};

let s: TestServer;
let A: Seeded;
let B: Seeded;
let a2: number;
const seeds: Seed[] = [];
const day = (d: number, ms = 0) => Date.UTC(2026, 1, d) + ms;

const get = (key: string | undefined, q: Record<string, string | number | undefined> = {}) => api(s.url, 'GET', `${PATH}${qs(q)}`, { key });

interface Model {
  cliente_id: number;
  celular_id?: number;
  estado?: MensajeEstado;
  destinatario?: string;
  desde?: number;
  hasta?: number;
}
/** The oracle: matching seeds, newest first (ties: the later insert first). */
function expected(m: Model): string[] {
  return seeds
    .filter(
      (x) =>
        x.cliente_id === m.cliente_id &&
        (m.celular_id === undefined || x.celular_id === m.celular_id) &&
        (m.estado === undefined || x.estado === m.estado) &&
        (m.destinatario === undefined || x.destinatario === m.destinatario) &&
        (m.desde === undefined || x.created_at >= m.desde) &&
        (m.hasta === undefined || x.created_at < m.hasta),
    )
    .sort((x, y) => y.created_at - x.created_at || y.seq - x.seq)
    .map((x) => x.msg_id);
}

beforeAll(async () => {
  s = await startTestServer({ tz: 'UTC' }, { inject: true });
  A = await seedClient(s, { numero: numeroNuevo() });
  B = await seedClient(s, { numero: numeroNuevo() });
  const r = await api(s.url, 'POST', '/api/celular_crear.php', { key: A.clientKey, json: { numero: numeroNuevo() } });
  expect(r.status, r.text).toBe(201);
  a2 = r.body.celular_id;

  // Client A: 30 messages over 2026-02-01..06, five a day at 00:00:00.000, 06:00, 12:00, 18:00 and 23:59:59.999.
  const slots = [0, 6 * H, 12 * H, 18 * H, 24 * H - 1];
  for (let i = 0; i < 30; i += 1) {
    const media =
      i === 3
        ? { url: 'https://example.com/a.jpg' }
        : i === 4
          ? { filename: 'factura.pdf', mime: 'application/pdf', bytes: 12345, data: 'JVBERi0xLjQK' }
          : null;
    seeds.push(
      await seedMensaje(s, {
        cliente_id: A.clienteId,
        celular_id: i % 2 === 0 ? A.celularId : a2,
        destinatario: [D1, D2, D3][i % 3]!,
        estado: ESTADOS[Math.floor(i / 2) % 5]!,
        at: day(1 + Math.floor(i / 5), slots[i % 5]),
        tipo: i === 3 ? 'imagen' : i === 4 ? 'documento' : 'texto',
        texto: i === 4 ? null : undefined,
        media,
      }),
    );
  }
  // Two at the same instant: the later insert comes first.
  for (let i = 0; i < 2; i += 1) {
    seeds.push(await seedMensaje(s, { cliente_id: A.clienteId, celular_id: A.celularId, destinatario: D1, estado: 'enviado', at: day(7, 10 * H) }));
  }
  // Client B: 10 messages on the same days, to the same numbers.
  for (let i = 0; i < 10; i += 1) {
    seeds.push(
      await seedMensaje(s, {
        cliente_id: B.clienteId,
        celular_id: B.celularId,
        destinatario: [D1, D2, D3][i % 3]!,
        estado: ESTADOS[i % 5]!,
        at: day(1 + Math.floor(i / 2), 3 * H + i),
      }),
    );
  }
});
afterAll(async () => {
  await s?.stop();
});

describe('GET /api/historial_listar.php: filters', () => {
  const all = () => ({ por_pagina: 500 });

  it('no filter: every message of the client, newest first, with the total', async () => {
    const r = await get(A.clientKey, all());
    expectOk(r, { paged: true });
    const ids = r.body.mensajes.map((m: { msg_id: string }) => m.msg_id);
    expect(ids).toEqual(expected({ cliente_id: A.clienteId }));
    expect(ids).toHaveLength(32);
    expect(r.body).toMatchObject({ page: 1, por_pagina: 500, total: 32, total_paginas: 1, saldo: null });
    const created = r.body.mensajes.map((m: { created_at: string }) => m.created_at);
    expect([...created].sort().reverse()).toEqual(created);
    // The tie at the same instant: the later insert first.
    expect(ids.slice(0, 2)).toEqual([seeds[31]!.msg_id, seeds[30]!.msg_id]);
  });

  it('each filter alone', async () => {
    const cases: Array<[Record<string, string | number>, Omit<Model, 'cliente_id'>]> = [
      ...ESTADOS.map((e): [Record<string, string | number>, Omit<Model, 'cliente_id'>] => [{ estado: e }, { estado: e }]),
      [{ celular_id: A.celularId }, { celular_id: A.celularId }],
      [{ celular_id: a2 }, { celular_id: a2 }],
      [{ desde: '2026-02-03' }, { desde: day(3) }],
      [{ hasta: '2026-02-03' }, { hasta: day(4) }],
      [
        { desde: '2026-02-04', hasta: '2026-02-04' },
        { desde: day(4), hasta: day(5) },
      ],
      [{ desde: '2026-02-08' }, { desde: day(8) }],
      [{ hasta: '2026-01-31' }, { hasta: day(1) }],
      [{ destinatario: D1 }, { destinatario: D1 }],
      [{ destinatario: D2 }, { destinatario: D2 }],
      [{ destinatario: D3 }, { destinatario: D3 }],
    ];
    for (const [q, m] of cases) {
      const r = await get(A.clientKey, { ...all(), ...q });
      expectOk(r, { paged: true });
      const want = expected({ cliente_id: A.clienteId, ...m });
      expect(
        r.body.mensajes.map((x: { msg_id: string }) => x.msg_id),
        JSON.stringify(q),
      ).toEqual(want);
      expect(r.body.total, JSON.stringify(q)).toBe(want.length);
    }
  });

  it('hasta includes its whole last day, to 23:59:59.999; desde starts at 00:00:00.000', async () => {
    const r = await get(A.clientKey, { desde: '2026-02-02', hasta: '2026-02-02' });
    expectOk(r, { paged: true });
    const times = r.body.mensajes.map((m: { created_at: string }) => m.created_at);
    expect(times).toEqual([
      '2026-02-02T23:59:59.999Z',
      '2026-02-02T18:00:00.000Z',
      '2026-02-02T12:00:00.000Z',
      '2026-02-02T06:00:00.000Z',
      '2026-02-02T00:00:00.000Z',
    ]);
  });

  it('RFC 3339 instants: desde included, hasta excluded, to the millisecond; offsets read; windows in a row neither overlap nor miss', async () => {
    const ids = async (q: Record<string, string>) => {
      const r = await get(A.clientKey, { ...q, por_pagina: 500 });
      expectOk(r, { paged: true });
      expect(r.body.zona_horaria).toBe('UTC');
      return r.body.mensajes.map((m: { msg_id: string }) => m.msg_id) as string[];
    };
    const all = (desde: number, hasta: number) => expected({ cliente_id: A.clienteId, desde, hasta });
    // 06:00:00.000 and 12:00:00.000 on the 2nd are seeds: the first is in, the second out.
    const six = await ids({ desde: '2026-02-02T06:00:00Z', hasta: '2026-02-02T12:00:00Z' });
    expect(six).toEqual(all(day(2, 6 * H), day(2, 12 * H)));
    expect(six).toHaveLength(1);
    // The same instants with an offset; a fraction below the millisecond rounds up, so 12:00:00.000 is now in.
    expect(await ids({ desde: '2026-02-02T00:00:00-06:00', hasta: '2026-02-02T06:00:00.0001-06:00' })).toEqual(all(day(2, 6 * H), day(2, 12 * H) + 1));
    expect(await ids({ desde: '2026-02-02T07:00:00.000+01:00', hasta: '2026-02-02T12:00:00.001Z' })).toHaveLength(2);
    // A day and an instant together: the day starts at its midnight in the server's zone.
    expect(await ids({ desde: '2026-02-03', hasta: '2026-02-03T18:00:00Z' })).toEqual(all(day(3), day(3, 18 * H)));
    // A cron job pulling [last run, now) again and again sees every message once.
    const cuts = ['2026-02-01T00:00:00Z', '2026-02-02T06:00:00Z', '2026-02-03T23:59:59.999Z', '2026-02-05T12:00:00+01:00', '2026-02-07T00:00:00Z'];
    const pulled: string[] = [];
    for (let i = 0; i + 1 < cuts.length; i += 1) pulled.push(...(await ids({ desde: cuts[i]!, hasta: cuts[i + 1]! })));
    expect([...pulled].sort()).toEqual(all(day(1), day(7)).sort());
    expect(new Set(pulled).size).toBe(pulled.length);
    // desde after hasta, in any form, is refused.
    expectError(await get(A.clientKey, { desde: '2026-02-02T12:00:00Z', hasta: '2026-02-02T06:00:00Z' }), 400, 100);
    expectError(await get(A.clientKey, { desde: '2026-02-03', hasta: '2026-02-02T23:00:00Z' }), 400, 100);
  });

  it('filters combined', async () => {
    const cases: Array<[Record<string, string | number>, Omit<Model, 'cliente_id'>]> = [
      [
        { celular_id: A.celularId, estado: 'enviado' },
        { celular_id: A.celularId, estado: 'enviado' },
      ],
      [
        { estado: 'leido', desde: '2026-02-02', hasta: '2026-02-05' },
        { estado: 'leido', desde: day(2), hasta: day(6) },
      ],
      [
        { celular_id: a2, destinatario: D2, desde: '2026-02-03' },
        { celular_id: a2, destinatario: D2, desde: day(3) },
      ],
      [
        { destinatario: D3, estado: 'error' },
        { destinatario: D3, estado: 'error' },
      ],
      [
        { celular_id: A.celularId, estado: 'entregado', destinatario: D1, desde: '2026-02-01', hasta: '2026-02-06' },
        { celular_id: A.celularId, estado: 'entregado', destinatario: D1, desde: day(1), hasta: day(7) },
      ],
    ];
    let nonEmpty = 0;
    for (const [q, m] of cases) {
      const r = await get(A.clientKey, { ...all(), ...q });
      expectOk(r, { paged: true });
      const want = expected({ cliente_id: A.clienteId, ...m });
      if (want.length > 0) nonEmpty += 1;
      expect(
        r.body.mensajes.map((x: { msg_id: string }) => x.msg_id),
        JSON.stringify(q),
      ).toEqual(want);
      expect(r.body.total).toBe(want.length);
    }
    expect(nonEmpty).toBeGreaterThanOrEqual(3);
  });

  it('destinatario is normalised: +, spaces, the old Mexican mobile 1, and a national number with a line in context', async () => {
    const want = expected({ cliente_id: A.clienteId, destinatario: D1 });
    for (const d of ['+52 55 1234 5678', '+52 1 55 1234 5678', '52 (55) 1234-5678']) {
      const r = await get(A.clientKey, { ...all(), destinatario: d });
      expectOk(r, { paged: true });
      expect(
        r.body.mensajes.map((x: { msg_id: string }) => x.msg_id),
        d,
      ).toEqual(want);
    }
    // A bare national number needs a line whose country reads it.
    expectError(await get(A.clientKey, { destinatario: '5512345678' }), 400, 100);
    const withLine = await get(A.clientKey, { ...all(), destinatario: '55 1234 5678', celular_id: A.celularId });
    expectOk(withLine, { paged: true });
    expect(withLine.body.mensajes.map((x: { msg_id: string }) => x.msg_id)).toEqual(
      expected({ cliente_id: A.clienteId, destinatario: D1, celular_id: A.celularId }),
    );
    const celKey = await get(A.celularKey, { ...all(), destinatario: '5512345678' });
    expectOk(celKey, { paged: true });
    expect(celKey.body.total).toBe(expected({ cliente_id: A.clienteId, destinatario: D1, celular_id: A.celularId }).length);
    expectError(await get(A.clientKey, { destinatario: 'no-es-numero' }), 400, 100);
    expectError(await get(A.clientKey, { destinatario: '123' }), 400, 100);
  });
});

describe('GET /api/historial_listar.php: pages', () => {
  const everything = () => expected({ cliente_id: A.clienteId });

  it('50 a page by default', async () => {
    const r = await get(A.clientKey);
    expectOk(r, { paged: true });
    expect(r.body).toMatchObject({ page: 1, por_pagina: 50, total: 32, total_paginas: 1 });
    expect(r.body.mensajes).toHaveLength(32);
  });

  it('page 2, the last page, and a page past the end (empty, with the right total)', async () => {
    const p2 = await get(A.clientKey, { por_pagina: 7, page: 2 });
    expectOk(p2, { paged: true });
    expect(p2.body).toMatchObject({ page: 2, por_pagina: 7, total: 32, total_paginas: 5 });
    expect(p2.body.mensajes.map((m: { msg_id: string }) => m.msg_id)).toEqual(everything().slice(7, 14));
    const last = await get(A.clientKey, { por_pagina: 7, page: 5 });
    expectOk(last, { paged: true });
    expect(last.body.mensajes.map((m: { msg_id: string }) => m.msg_id)).toEqual(everything().slice(28));
    expect(last.body.mensajes).toHaveLength(4);
    const past = await get(A.clientKey, { por_pagina: 7, page: 6 });
    expectOk(past, { paged: true });
    expect(past.body).toMatchObject({ page: 6, por_pagina: 7, total: 32, total_paginas: 5, mensajes: [] });
    const far = await get(A.clientKey, { page: 1_000_000 });
    expectOk(far, { paged: true });
    expect(far.body).toMatchObject({ total: 32, mensajes: [] });
  });

  it('walking every page gives every record once, in order', async () => {
    const ids: string[] = [];
    for (let page = 1; page <= 4; page += 1) {
      const r = await get(A.clientKey, { por_pagina: 10, page });
      expectOk(r, { paged: true });
      expect(r.body.total_paginas).toBe(4);
      ids.push(...r.body.mensajes.map((m: { msg_id: string }) => m.msg_id));
    }
    expect(ids).toEqual(everything());
  });

  it('nothing matching: total 0, total_paginas 0', async () => {
    const r = await get(A.clientKey, { desde: '2030-01-01' });
    expectOk(r, { paged: true });
    expect(r.body).toMatchObject({ page: 1, total: 0, total_paginas: 0, mensajes: [] });
  });

  it('por_pagina from 1 to 500', async () => {
    const one = await get(A.clientKey, { por_pagina: 1 });
    expectOk(one, { paged: true });
    expect(one.body).toMatchObject({ por_pagina: 1, total: 32, total_paginas: 32 });
    expect(one.body.mensajes).toHaveLength(1);
    expectOk(await get(A.clientKey, { por_pagina: 500 }), { paged: true });
    for (const bad of [0, 501, -1, 2.5, 'x', '']) expectError(await get(A.clientKey, { por_pagina: bad }), 400, 100);
  });
});

describe('GET /api/historial_listar.php: refusals', () => {
  it('400 for a bad page, estado or date, and for desde after hasta', async () => {
    const bad: Array<Record<string, string | number>> = [
      { page: 0 },
      { page: -2 },
      { page: 'dos' },
      { page: 1.5 },
      { estado: 'enviada' },
      { estado: 'ENVIADO' },
      { estado: '' },
      { desde: '2026-02-30' },
      { hasta: '2025-02-29' },
      { desde: '2026-13-01' },
      { desde: '2026-00-10' },
      { desde: '2026-2-1' },
      { desde: '20260201' },
      { hasta: '2026-02-01T00:00:00' },
      { desde: '2026-02-01T24:00:00Z' },
      { desde: '2026-02-30T10:00:00Z' },
      { hasta: '2026-02-01T10:00:00+25:00' },
      { hasta: 'ayer' },
      { desde: '2026-02-05', hasta: '2026-02-04' },
      { celular_id: 0 },
      { celular_id: 'uno' },
    ];
    for (const q of bad) expectError(await get(A.clientKey, q), 400, 100);
    // A leap day is a date.
    expectOk(await get(A.clientKey, { desde: '2024-02-29', hasta: '2024-02-29' }), { paged: true });
  });

  it('401 without a credential or with a wrong one', async () => {
    expectError(await get(undefined), 401, 200);
    expectError(await get('WAC_1_not-a-real-key'), 401, 200);
  });

  it('the key may come in the query string', async () => {
    const r = await get(undefined, { key: B.clientKey });
    expectOk(r, { paged: true });
    expect(r.body.total).toBe(10);
  });
});

describe('GET /api/historial_listar.php: who sees what', () => {
  it('a celular key sees its own line only; another line of its client is 403, any other id 404', async () => {
    const own = expected({ cliente_id: A.clienteId, celular_id: A.celularId });
    const r = await get(A.celularKey, { por_pagina: 500 });
    expectOk(r, { paged: true });
    expect(r.body.mensajes.map((m: { msg_id: string }) => m.msg_id)).toEqual(own);
    expect(new Set(r.body.mensajes.map((m: { celular_id: number }) => m.celular_id))).toEqual(new Set([A.celularId]));
    expect(r.body.saldo).toBe(0);
    const named = await get(A.celularKey, { por_pagina: 500, celular_id: A.celularId });
    expectOk(named, { paged: true });
    expect(named.body.total).toBe(own.length);
    // Filters still apply within the line.
    const f = await get(A.celularKey, { por_pagina: 500, estado: 'leido' });
    expect(f.body.mensajes.map((m: { msg_id: string }) => m.msg_id)).toEqual(expected({ cliente_id: A.clienteId, celular_id: A.celularId, estado: 'leido' }));
    expectError(await get(A.celularKey, { celular_id: a2 }), 403, 201);
    expectError(await get(A.celularKey, { celular_id: B.celularId }), 404, 600);
    expectError(await get(A.celularKey, { celular_id: 999999 }), 404, 600);
    // The gateway token is a celular credential too.
    const gw = await get(A.gatewayToken, { por_pagina: 500 });
    expectOk(gw, { paged: true });
    expect(gw.body.total).toBe(own.length);
  });

  it("a client key sees all its lines and never another client's rows", async () => {
    const r = await get(A.clientKey, { por_pagina: 500 });
    expectOk(r, { paged: true });
    expect(new Set(r.body.mensajes.map((m: { celular_id: number }) => m.celular_id))).toEqual(new Set([A.celularId, a2]));
    const bIds = new Set(seeds.filter((x) => x.cliente_id === B.clienteId).map((x) => x.msg_id));
    expect(r.body.mensajes.some((m: { msg_id: string }) => bIds.has(m.msg_id))).toBe(false);
    const b = await get(B.clientKey, { por_pagina: 500 });
    expectOk(b, { paged: true });
    expect(b.body.mensajes.map((m: { msg_id: string }) => m.msg_id)).toEqual(expected({ cliente_id: B.clienteId }));
    // Another client's line: 404, as if it did not exist; so is a line that does not.
    expectError(await get(B.clientKey, { celular_id: A.celularId }), 404, 600);
    expectError(await get(A.clientKey, { celular_id: B.celularId }), 404, 600);
    expectError(await get(A.clientKey, { celular_id: 999999 }), 404, 600);
    // Same recipient and day filters as A's rows: still only B's.
    const bd = await get(B.clientKey, { por_pagina: 500, destinatario: D1, desde: '2026-02-01' });
    expect(bd.body.mensajes.every((m: { msg_id: string }) => bIds.has(m.msg_id))).toBe(true);
    expect(bd.body.total).toBe(expected({ cliente_id: B.clienteId, destinatario: D1 }).length);
  });
});

describe('GET /api/historial_listar.php: the record', () => {
  let byId: Map<string, Record<string, unknown>>;
  beforeAll(async () => {
    const r = await get(A.clientKey, { por_pagina: 500 });
    expectOk(r, { paged: true });
    byId = new Map(r.body.mensajes.map((m: Record<string, unknown>) => [m.msg_id as string, m]));
  });

  it('has exactly the fields of docs/design.md §8: no payload, charge, lease or client columns', async () => {
    for (const m of byId.values()) expect(Object.keys(m).sort()).toEqual(RECORD_KEYS);
    const raw = (await get(A.clientKey, { por_pagina: 500 })).text;
    for (const leak of [
      'payload',
      'cargo',
      'cobrado',
      'lease_until',
      'intentos',
      'proximo_intento_at',
      'expira_at',
      'cliente_id',
      'payload-secret-path',
      'JVBERi0xLjQK',
    ]) {
      expect(raw.includes(leak), leak).toBe(false);
    }
  });

  it('estado, timestamps and gateway id follow the message through its states', async () => {
    for (const seed of seeds.filter((x) => x.cliente_id === A.clienteId)) {
      const m = byId.get(seed.msg_id)!;
      expect(m).toMatchObject({ celular_id: seed.celular_id, destinatario: seed.destinatario, estado: seed.estado });
      expect(['cola', 'directo']).toContain(m.modo);
      expect(m.created_at).toBe(new Date(seed.created_at).toISOString());
      const sent = ['enviado', 'entregado', 'leido'].includes(seed.estado);
      expect(m.enviado_at === null, seed.estado).toBe(!sent);
      if (sent) {
        expect(m.enviado_at).toMatch(ISO);
        expect(m.gateway_msg_id).toBe(`gw-${seed.msg_id}`);
      } else {
        expect(m.gateway_msg_id).toBeNull();
      }
      expect(m.entregado_at === null).toBe(!['entregado', 'leido'].includes(seed.estado));
      expect(m.leido_at === null).toBe(seed.estado !== 'leido');
      expect(m.error).toBe(seed.estado === 'error' ? 'el número no existe' : null);
    }
  });

  it('texto is the text; media is an object with where it came from, never the bytes', async () => {
    const texto = byId.get(seeds[0]!.msg_id)!;
    expect(texto).toMatchObject({ tipo: 'texto', texto: 'mensaje 1', media: null });
    expect(byId.get(seeds[3]!.msg_id)).toMatchObject({ tipo: 'imagen', media: { url: 'https://example.com/a.jpg' } });
    const doc = byId.get(seeds[4]!.msg_id)!;
    expect(doc).toMatchObject({ tipo: 'documento', texto: null });
    expect(doc.media).toEqual({ filename: 'factura.pdf', mime: 'application/pdf', bytes: 12345 });
  });

  it('is documented in /openapi.json with its query parameters and record schema', async () => {
    const r = await api(s.url, 'GET', '/openapi.json');
    const op = r.body.paths[PATH]?.get;
    expect(op).toBeDefined();
    const params = (op.parameters as Array<{ name: string; in: string }>)
      .filter((p) => p.in === 'query')
      .map((p) => p.name)
      .sort();
    expect(params).toEqual(['celular_id', 'desde', 'destinatario', 'estado', 'hasta', 'key', 'page', 'por_pagina']);
    const body = op.responses['200'].content['application/json'].schema;
    expect(Object.keys(body.properties)).toEqual(expect.arrayContaining(['ok', 'page', 'por_pagina', 'total', 'total_paginas', 'mensajes']));
    expect(Object.keys(body.properties.mensajes.items.properties).sort()).toEqual(RECORD_KEYS);
  });
});

describe("days are days in the server's zone (serve --tz)", () => {
  it('America/Mexico_City: 2026-03-01T05:30Z is on 2026-02-28 there, 06:00Z on 2026-03-01', async () => {
    const mx = await startTestServer({ tz: 'America/Mexico_City' }, { inject: true });
    try {
      const c = await seedClient(mx, { numero: numeroNuevo() });
      const late = await seedMensaje(mx, {
        cliente_id: c.clienteId,
        celular_id: c.celularId,
        destinatario: D1,
        estado: 'enviado',
        at: Date.parse('2026-03-01T05:30:00Z'),
      });
      const edge = await seedMensaje(mx, {
        cliente_id: c.clienteId,
        celular_id: c.celularId,
        destinatario: D1,
        estado: 'enviado',
        at: Date.parse('2026-03-01T05:59:59.999Z'),
      });
      const next = await seedMensaje(mx, {
        cliente_id: c.clienteId,
        celular_id: c.celularId,
        destinatario: D1,
        estado: 'enviado',
        at: Date.parse('2026-03-01T06:00:00Z'),
      });
      const early = await seedMensaje(mx, {
        cliente_id: c.clienteId,
        celular_id: c.celularId,
        destinatario: D1,
        estado: 'enviado',
        at: Date.parse('2026-02-28T05:59:59.999Z'),
      });
      const on = async (d: string) => {
        const r = await api(mx.url, 'GET', `${PATH}?desde=${d}&hasta=${d}`, { key: c.clientKey });
        expectOk(r, { paged: true });
        return r.body.mensajes.map((m: { msg_id: string }) => m.msg_id);
      };
      expect(await on('2026-02-28')).toEqual([edge.msg_id, late.msg_id]);
      // An instant is the same instant whatever the zone; the answer names the zone its days were read in.
      const inst = await api(mx.url, 'GET', `${PATH}?desde=2026-03-01T05:30:00Z&hasta=2026-03-01T06:00:00Z`, { key: c.clientKey });
      expect(inst.body.mensajes.map((m: { msg_id: string }) => m.msg_id)).toEqual([edge.msg_id, late.msg_id]);
      expect(inst.body.zona_horaria).toBe('America/Mexico_City');
      expect(await on('2026-03-01')).toEqual([next.msg_id]);
      expect(await on('2026-02-27')).toEqual([early.msg_id]);
      const range = await api(mx.url, 'GET', `${PATH}?desde=2026-02-28`, { key: c.clientKey });
      expect(range.body.total).toBe(3);
    } finally {
      await mx.stop();
    }
  });

  it('the first instant of a day, across clock changes (Intl offsets, no library)', () => {
    const at = (date: string, tz: string) => {
      const [y, m, d] = date.split('-').map(Number) as [number, number, number];
      return new Date(startOfDay({ y, m, d }, tz)).toISOString();
    };
    expect(at('2026-03-01', 'America/Mexico_City')).toBe('2026-03-01T06:00:00.000Z');
    expect(at('2026-03-01', 'UTC')).toBe('2026-03-01T00:00:00.000Z');
    expect(at('2026-01-01', 'Asia/Kolkata')).toBe('2025-12-31T18:30:00.000Z');
    expect(at('2026-01-01', 'Pacific/Kiritimati')).toBe('2025-12-31T10:00:00.000Z');
    expect(at('2026-01-01', 'Pacific/Pago_Pago')).toBe('2026-01-01T11:00:00.000Z');
    // Summer time begins at 02:00: the day starts at midnight with the old offset, the next with the new one.
    expect(at('2026-03-29', 'Europe/Madrid')).toBe('2026-03-28T23:00:00.000Z');
    expect(at('2026-03-30', 'Europe/Madrid')).toBe('2026-03-29T22:00:00.000Z');
    // Chile skips midnight (00:00 -> 01:00): the day starts at 01:00 local.
    expect(at('2025-09-07', 'America/Santiago')).toBe('2025-09-07T04:00:00.000Z');
    expect(at('2025-09-08', 'America/Santiago')).toBe('2025-09-08T03:00:00.000Z');
    // Cuba repeats the hour after midnight (01:00 -> 00:00): the first midnight counts.
    expect(at('2025-11-02', 'America/Havana')).toBe('2025-11-02T04:00:00.000Z');
  });
});
