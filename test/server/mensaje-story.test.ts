import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/core/time/clock.js';
import { chargeMotivo, refundMotivo } from '../../src/core/billing/recipes.js';
import type { StoryStep } from '../../src/core/history/message-story.js';
import { ph } from '../../src/store/postgres/db.js';
import { ENTREGAS_DE_MENSAJE, FALLIDOS_DE_ENTREGAS } from '../../src/store/postgres/webhooks.js';
import { movimientosDeMensajeSelect } from '../../src/store/recipe-sql.js';
import { pgSchema } from '../contract/adapters.js';
import { api, startTestServer, type TestServer } from '../helpers/server.js';
import { describeWith, postgres, schemaUrl } from '../helpers/services.js';
import { expectError, expectOk } from '../helpers/expect.js';
import { until } from '../helpers/poll.js';
import { admin, link, linkedLine, numeroNuevo, send, TEXT, uniqueText, waitEstado, type Line } from './send-helpers.js';
import { pgServersWithReceiver, setWebhook, startReceiver, type Hit, type Receiver } from './webhook-helpers.js';

/**
 * GET /api/mensaje.php?msg_id=&timeline=1 over real HTTP, on SQLite and on
 * PostgreSQL: a message's story (core/history/message-story.ts) from acceptance to
 * its read receipt, its webhook attempts with their answers and nodes, a
 * failed message's refund, and the lookup's authority rules.
 */

const PATH = '/api/mensaje.php';
const NODE = /^[0-9a-f-]{36}$/;
const SERVE = { queue: { gapMinMs: 0, gapMaxMs: 0 }, simDeliveryMs: 5, simReadMs: 10, webhookRetryMs: 20, clock: systemClock, allowPrivateUrls: true } as const;

/** The receiver's answer: each client's first request fails (500), every later one is taken (200). */
function failOnce(): (h: Hit) => number {
  const seen = new Set<string>();
  return (h) => {
    if (seen.has(h.path)) return 200;
    seen.add(h.path);
    return 500;
  };
}

function storySuite(dialect: string, start: () => Promise<{ s: TestServer; R: Receiver }>) {
  let s: TestServer;
  let R: Receiver;
  let a: Line;
  let other: Line;
  let sibling: Line;

  beforeAll(async () => {
    ({ s, R } = await start());
    R.answer = failOnce();
    a = await linkedLine(s, { saldo: 20 });
    other = await linkedLine(s);
    const sib = await api(s.url, 'POST', '/api/celular_crear.php', { key: a.clientKey, json: { numero: numeroNuevo() } });
    expect(sib.status, sib.text).toBe(201);
    sibling = { ...a, celularId: sib.body.celular_id, celularKey: sib.body.api_key, gatewayToken: sib.body.gateway_token, numero: sib.body.celular.numero };
    await link(s, sibling);
  }, 60_000);

  const story = (key: string, msgId: string, extra = '&timeline=1') => api(s.url, 'GET', `${PATH}?msg_id=${encodeURIComponent(msgId)}${extra}`, { key });
  const steps = (body: { timeline: StoryStep[] }, paso: string) => body.timeline.filter((t) => t.paso === paso);

  it(`a queued message to leido, its webhook failing once: accepted, charged, queued, claimed with its node, sent, delivered, read, each attempt with its status (${dialect})`, async () => {
    expectOk(await setWebhook(s, a.clientKey, { url: `${R.url}/c${a.clienteId}`, eventos: ['message.status'] }));
    const r = await send(s, a, TEXT, { destinatario: numeroNuevo(), mensaje: uniqueText('historia') });
    expect(r.status, r.text).toBe(200);
    const id = r.body.msg_id as string;
    await waitEstado(s, id, 'leido');
    // Every event of the message delivered: the read receipt's too.
    const body = await until(
      async () => {
        const t = await story(a.clientKey, id);
        expectOk(t);
        const hooks = (t.body.timeline as StoryStep[]).filter((x) => x.paso === 'webhook');
        const taken = new Set(hooks.filter((x) => x.detalle.status === 200).map((x) => x.detalle.entrega));
        const all = new Set(hooks.map((x) => x.detalle.entrega));
        return hooks.some((x) => x.detalle.estado === 'leido') && taken.size === all.size && t.body;
      },
      { what: 'every event of the message delivered to the webhook, the read receipt too', timeoutMs: 20_000 },
    );
    expect(body.mensaje).toMatchObject({ msg_id: id, estado: 'leido' });
    expect(body.timeline_omitidos).toBe(0);
    const order = body.timeline.filter((t: StoryStep) => t.paso !== 'webhook').map((t: StoryStep) => t.paso);
    expect(order).toEqual(['aceptado', 'cobro', 'encolado', 'reclamado', 'enviado', 'entregado', 'leido']);
    const times = body.timeline.map((t: StoryStep) => Date.parse(t.at!));
    expect(times).toEqual([...times].sort((x, y) => x - y));
    const [claimed] = steps(body, 'reclamado');
    expect(claimed!.nodo).toMatch(NODE);
    const [sent] = steps(body, 'enviado');
    expect(sent).toMatchObject({ nodo: claimed!.nodo, detalle: { gateway_msg_id: body.mensaje.gateway_msg_id, intentos: 1 } });
    expect(steps(body, 'cobro')[0]!.detalle).toEqual({ monto: -1, saldo: expect.any(Number), balance: expect.stringMatching(/^(celular|global)$/) });
    // The first delivery failed once (500) then was taken (200): two attempts of one delivery, in order, each with its node.
    const hooks = steps(body, 'webhook');
    const first = hooks.filter((h) => h.detalle.entrega === hooks[0]!.detalle.entrega);
    expect(first.map((h) => [h.detalle.intento, h.detalle.status])).toEqual([
      [1, 500],
      [2, 200],
    ]);
    for (const h of hooks) {
      expect(h.nodo).toMatch(NODE);
      expect(h.detalle).toMatchObject({ evento: 'message.status', duracion_ms: expect.any(Number) });
    }
    // One delivery per change of estado, each taken once (the failed one's retry may come after the next ones).
    expect(
      hooks
        .filter((h) => h.detalle.status === 200)
        .map((h) => String(h.detalle.estado))
        .sort(),
    ).toEqual(['entregado', 'enviado', 'leido', 'pendiente']);
    // The line's own key reads the same story.
    const own = await story(a.celularKey, id);
    expectOk(own);
    expect(own.body.timeline).toEqual(body.timeline);
  });

  it(`a queued message the network refuses: claimed, error with its class, and the refund with the balance after it (${dialect})`, async () => {
    const dead = numeroNuevo();
    expectOk(await admin(s, 'POST', '/admin/sim/fail', { numero: dead, motivo: 'not on the network' }));
    const r = await send(s, a, TEXT, { destinatario: dead, mensaje: uniqueText('nunca') });
    expect(r.status, r.text).toBe(200);
    const id = r.body.msg_id as string;
    await waitEstado(s, id, 'error');
    const t = await story(a.clientKey, id);
    expectOk(t);
    const order = t.body.timeline.filter((x: StoryStep) => x.paso !== 'webhook').map((x: StoryStep) => x.paso);
    expect(order).toEqual(['aceptado', 'cobro', 'encolado', 'reclamado', 'error', 'reembolso']);
    const [err] = steps(t.body, 'error');
    expect(err!.at).not.toBeNull();
    expect(err!.detalle).toMatchObject({ error_clase: 'rechazado', error: expect.stringContaining('not on the network') });
    const cobro = steps(t.body, 'cobro')[0]!.detalle;
    const back = steps(t.body, 'reembolso')[0]!.detalle;
    expect(back).toMatchObject({ monto: 1, balance: cobro.balance });
    expect(Number(back.saldo)).toBeGreaterThan(Number(cobro.saldo));
  });

  it(`authority as the lookup's: a sibling line 403, another client and an unknown id 404, a bad timeline 400; without timeline=1 the answer is the plain lookup (${dialect})`, async () => {
    const r = await send(s, a, TEXT, { destinatario: numeroNuevo(), mensaje: uniqueText('alcance') });
    const id = r.body.msg_id as string;
    expectError(await story(sibling.celularKey, id), 403, 201);
    const foreign = await story(other.clientKey, id);
    expectError(foreign, 404, 611);
    expectError(await story(a.clientKey, '01a21b3d-2a89-7ea1-83be-22d9f67523ae'), 404, 611);
    const bad = await story(a.clientKey, id, '&timeline=yes');
    expectError(bad, 400);
    // Said in words, naming the parameter; never a stack.
    expect(bad.body.error).toContain('timeline');
    expect(bad.text).not.toMatch(/\bat \w+ \(/);
    expectError(await story(a.clientKey, id, '&timeline=2'), 400);
    expectError(await story('WA_999_nope', id), 401);
    for (const extra of ['', '&timeline=0']) {
      const plain = await story(a.clientKey, id, extra);
      expectOk(plain);
      expect(Object.keys(plain.body)).toEqual(['ok', 'api_codigo', 'api_texto', 'api_descripcion', 'texto', 'desc', 'saldo', 'mensaje']);
    }
  });
}

describe('GET /api/mensaje.php?timeline=1 (SQLite)', () => {
  const closing: Array<() => Promise<void>> = [];
  afterAll(async () => {
    for (const c of closing.reverse()) await c();
  });
  storySuite('SQLite', async () => {
    const R = await startReceiver(200);
    closing.push(() => R.close());
    const s = await startTestServer(SERVE);
    closing.push(() => s.stop());
    return { s, R };
  });
});

describeWith(postgres, 'GET /api/mensaje.php?timeline=1 (PostgreSQL)', () => {
  const start = pgServersWithReceiver();
  storySuite('PostgreSQL', () => start(SERVE));
});

/**
 * The story's reads on PostgreSQL among 200,000 ledger rows, 200,000
 * delivered events and 200,000 failed attempts of other messages of the same
 * client: each statement's plan is an index scan by the message's id (never
 * the client's index, never a sequential scan), and the story is as on an
 * empty store.
 */
describeWith(postgres, "a message's story among 200,000 ledger rows and deliveries (PostgreSQL)", () => {
  let s: TestServer;
  let R: Receiver;
  let url: string;
  let drop: () => Promise<void>;
  let a: Line;

  beforeAll(async () => {
    const schema = await pgSchema();
    drop = schema.drop;
    url = schemaUrl(schema.schema);
    R = await startReceiver(200);
    s = await startTestServer({ ...SERVE, store: url });
    a = await linkedLine(s, { saldo: 20 });
    expectOk(await setWebhook(s, a.clientKey, { url: `${R.url}/plan`, eventos: ['message.status'] }));
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    try {
      await c.query(
        `INSERT INTO movimientos_saldo (fecha, cliente_id, celular_id, monto, saldo_resultante, motivo, actor)
         SELECT 1700000000000 + g, $1, NULL, -1, 0, 'envio ' || md5(g::text)::uuid::text, 'sistema' FROM generate_series(1, 200000) g`,
        [a.clienteId],
      );
      await c.query(
        `INSERT INTO eventos (cliente_id, celular_id, evento, data, fecha, entrega, intentos, proximo_intento_at, entregado_at)
         SELECT $1, $2, 'message.status', json_build_object('msg_id', md5(g::text)::uuid::text, 'estado', 'enviado')::text, 1700000000000 + g,
                'entregado', 2, 1700000000000 + g, 1700000000000 + g
         FROM generate_series(1, 200000) g`,
        [a.clienteId, a.celularId],
      );
      await c.query(
        `INSERT INTO webhook_intentos (entrega_id, n, fecha, status, duracion_ms, error)
         SELECT 'evt_0000000' || lpad(to_hex(g), 25, '0'), 1, 1700000000000 + g, 500, 5, 'HTTP 500' FROM generate_series(1, 200000) g`,
      );
      await c.query('ANALYZE movimientos_saldo');
      await c.query('ANALYZE eventos');
      await c.query('ANALYZE webhook_intentos');
    } finally {
      await c.end();
    }
  }, 600_000);
  afterAll(async () => {
    await s?.stop();
    await R?.close();
    await drop?.();
  });

  it("each read of the story is an index scan by the message's id, and the story is whole (PostgreSQL)", async () => {
    const r = await send(s, a, TEXT, { destinatario: numeroNuevo(), mensaje: uniqueText('entre muchos') });
    const id = r.body.msg_id as string;
    await waitEstado(s, id, 'leido');
    const t = await until(
      async () => {
        const x = await api(s.url, 'GET', `${PATH}?msg_id=${id}&timeline=1`, { key: a.clientKey });
        return (x.body.timeline as StoryStep[]).some((y) => y.paso === 'webhook' && y.detalle.estado === 'leido') && x;
      },
      { what: 'the read receipt delivered', timeoutMs: 20_000 },
    );
    expect((t.body.timeline as StoryStep[]).map((x) => x.paso).filter((p) => p !== 'webhook')).toEqual([
      'aceptado',
      'cobro',
      'encolado',
      'reclamado',
      'enviado',
      'entregado',
      'leido',
    ]);
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    try {
      const plan = async (sql: string, params: unknown[]) => JSON.stringify((await c.query(`EXPLAIN (FORMAT JSON) ${sql}`, params)).rows[0]['QUERY PLAN']);
      const ledger = await plan(movimientosDeMensajeSelect(ph), [chargeMotivo(id), refundMotivo(id)]);
      expect(ledger).toContain('"Index Name":"movimientos_motivo"');
      const deliveries = await plan(ENTREGAS_DE_MENSAJE, [id, 11]);
      expect(deliveries).toContain('"Index Name":"eventos_mensaje"');
      const attempts = await plan(FALLIDOS_DE_ENTREGAS, [['evt_x', 'evt_y'], 10]);
      expect(attempts).toContain('"Index Name":"webhook_intentos_entrega"');
      for (const p of [ledger, deliveries, attempts]) expect(p).not.toContain('Seq Scan');
    } finally {
      await c.end();
    }
  });
});
