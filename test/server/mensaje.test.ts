import { createHash } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COLS } from '../../src/store/postgres/messages.js';
import { pgSchema } from '../contract/adapters.js';
import { api, startTestServer, type TestServer } from '../helpers/server.js';
import { describeWith, postgres, schemaUrl } from '../helpers/services.js';
import { expectError, expectOk, numeroNuevo } from '../helpers/expect.js';
import { link, linkedLine, send, waitEstado, type Line } from './send-helpers.js';

/**
 * GET /api/mensaje.php over real HTTP: one message by the msg_id its send
 * answered, in the credential's scope (docs/design.md §10).
 */
const PATH = '/api/mensaje.php';
const TEXT = '/api/mensaje_enviar_texto.php';

describe('GET /api/mensaje.php', () => {
  let s: TestServer;
  let a: Line;
  let other: Line;
  let sibling: Line;

  beforeAll(async () => {
    s = await startTestServer({ queue: { gapMinMs: 0, gapMaxMs: 0 }, simDeliveryMs: 5, simReadMs: 10 });
    a = await linkedLine(s, { saldo: 20 });
    other = await linkedLine(s);
    const sib = await api(s.url, 'POST', '/api/celular_crear.php', { key: a.clientKey, json: { numero: numeroNuevo() } });
    expect(sib.status, sib.text).toBe(201);
    sibling = { ...a, celularId: sib.body.celular_id, celularKey: sib.body.api_key, gatewayToken: sib.body.gateway_token, numero: sib.body.celular.numero };
    await link(s, sibling);
  });
  afterAll(async () => {
    await s?.stop();
  });

  const get = (key: string, msgId: string) => api(s.url, 'GET', `${PATH}?msg_id=${encodeURIComponent(msgId)}`, { key });

  it('answers the record the history lists, as it moves on to leido', async () => {
    const r = await send(s, a, TEXT, { destinatario: numeroNuevo(), mensaje: 'hola por id' });
    expect(r.status, r.text).toBe(200);
    const id = r.body.msg_id as string;
    const first = await get(a.clientKey, id);
    expectOk(first);
    expect(first.body.mensaje).toMatchObject({ msg_id: id, celular_id: a.celularId, tipo: 'texto', modo: 'cola', texto: 'hola por id' });
    await waitEstado(s, id, 'leido');
    const read = await get(a.clientKey, id);
    expect(read.body.mensaje).toMatchObject({ estado: 'leido', error: null, error_clase: null });
    expect(read.body.mensaje.leido_at).toMatch(/^\d{4}-\d{2}-\d{2}T/);
    // The same record, field for field, as its history page.
    const page = await api(s.url, 'GET', `/api/historial_listar.php?celular_id=${a.celularId}&por_pagina=500`, { key: a.clientKey });
    expect(page.body.mensajes.find((m: { msg_id: string }) => m.msg_id === id)).toEqual(read.body.mensaje);
    // The line's own key reads it too, with the line's balance.
    const own = await get(a.celularKey, id);
    expectOk(own);
    expect(own.body.mensaje.msg_id).toBe(id);
    expect(own.body.saldo).toBeTypeOf('number');
  });

  it('a message that ended in error says why, with its class', async () => {
    const dead = numeroNuevo();
    expectOk(await api(s.url, 'POST', '/admin/sim/fail', { key: s.adminToken, json: { numero: dead, motivo: 'not on the network' } }));
    const r = await send(s, a, TEXT, { destinatario: dead, mensaje: 'nunca', directo: 1 });
    expectError(r, 502, 704);
    const id = /msg_id ([0-9a-f-]{36})/.exec(r.body.error)![1]!;
    const m = await get(a.clientKey, id);
    expectOk(m);
    expect(m.body.mensaje).toMatchObject({ estado: 'error', error_clase: 'rechazado', modo: 'directo' });
    expect(m.body.mensaje.error).toContain('not on the network');
  });

  it("scopes: a sibling line's key 403; another client's message and an unknown id 404 alike; a bad id 400", async () => {
    const r = await send(s, a, TEXT, { destinatario: numeroNuevo(), mensaje: 'alcance' });
    const id = r.body.msg_id as string;
    expectError(await get(sibling.celularKey, id), 403, 201);
    // Another client cannot learn that the id exists: the same answer as an id never issued.
    const foreign = await get(other.clientKey, id);
    expectError(foreign, 404, 611);
    const unknown = await get(a.clientKey, '01a21b3d-2a89-7ea1-83be-22d9f67523ae');
    expectError(unknown, 404, 611);
    expect(foreign.body.error.replace(id, 'X')).toBe(unknown.body.error.replace('01a21b3d-2a89-7ea1-83be-22d9f67523ae', 'X'));
    expectError(await api(s.url, 'GET', PATH, { key: a.clientKey }), 400);
    expectError(await get(a.clientKey, 'x'.repeat(65)), 400);
    expectError(await get('WA_999_nope', id), 401);
    // The sibling's own messages are its to read.
    const mine = await api(s.url, 'POST', TEXT, {
      key: a.clientKey,
      json: { destinatario: numeroNuevo(), mensaje: 'del hermano', celular_id: sibling.celularId },
    });
    expect(mine.status, mine.text).toBe(200);
    expectOk(await get(sibling.celularKey, mine.body.msg_id));
  });
});

/**
 * The same lookup on PostgreSQL with 1,000,000 messages in the store (D-70's
 * companion in DESIGN §10: served by an index whatever the history size): the
 * plan of the statement is a primary-key index scan, and every scope answers
 * as on an empty store.
 */
describeWith(postgres, 'GET /api/mensaje.php among 1,000,000 messages (PostgreSQL)', () => {
  let s: TestServer;
  let drop: () => Promise<void>;
  let url: string;
  let a: Line;
  let other: Line;
  let sibling: Line;

  beforeAll(async () => {
    const schema = await pgSchema();
    drop = schema.drop;
    const u = new URL(schemaUrl(schema.schema));
    url = u.toString();
    s = await startTestServer({ store: url, queue: { gapMinMs: 0, gapMaxMs: 0 }, simDeliveryMs: 5, simReadMs: 10 });
    a = await linkedLine(s, { saldo: 20 });
    other = await linkedLine(s);
    const sib = await api(s.url, 'POST', '/api/celular_crear.php', { key: a.clientKey, json: { numero: numeroNuevo() } });
    sibling = { ...a, celularId: sib.body.celular_id, celularKey: sib.body.api_key, gatewayToken: sib.body.gateway_token, numero: sib.body.celular.numero };
    await link(s, sibling);
    // A million old messages over the two lines of the client, written straight into the table (its count triggers off while
    // they go in: the test is about the lookup, not the counts).
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    try {
      await c.query('ALTER TABLE mensajes DISABLE TRIGGER USER');
      await c.query(
        `INSERT INTO mensajes (msg_id, cliente_id, celular_id, destinatario, tipo, modo, estado, texto, created_at, cobrado)
         SELECT md5(g::text)::uuid::text, $1, CASE WHEN g % 2 = 0 THEN $2::bigint ELSE $3::bigint END, '5215500000000', 'texto', 'cola', 'leido', 'viejo', 1700000000000 + g, 0
         FROM generate_series(1, 1000000) g`,
        [a.clienteId, a.celularId, sibling.celularId],
      );
      await c.query('ALTER TABLE mensajes ENABLE TRIGGER USER');
      await c.query('ANALYZE mensajes');
    } finally {
      await c.end();
    }
  }, 600_000);
  afterAll(async () => {
    await s?.stop();
    await drop?.();
  });

  it('one primary-key read in every scope: own 200 (client and line keys), a sibling line 403, another client and an unknown id 404 (PostgreSQL)', async () => {
    const r = await send(s, a, TEXT, { destinatario: numeroNuevo(), mensaje: 'entre un millón' });
    expect(r.status, r.text).toBe(200);
    const id = r.body.msg_id as string;
    const get = (key: string, msgId: string) => api(s.url, 'GET', `${PATH}?msg_id=${msgId}`, { key });
    expectOk(await get(a.clientKey, id));
    expectOk(await get(a.celularKey, id));
    expectError(await get(sibling.celularKey, id), 403, 201);
    expectError(await get(other.clientKey, id), 404, 611);
    expectError(await get(a.clientKey, '01a21b3d-2a89-7ea1-83be-22d9f67523ae'), 404, 611);
    // An old one among the million, read by the line that holds it.
    const old = md5Uuid(2);
    expect((await get(a.celularKey, old)).body.mensaje).toMatchObject({ msg_id: old, estado: 'leido', texto: 'viejo' });
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    try {
      const plan = await c.query(`EXPLAIN (FORMAT JSON) SELECT ${COLS} FROM mensajes WHERE msg_id = $1`, [id]);
      const text = JSON.stringify(plan.rows[0]['QUERY PLAN']);
      expect(text).toContain('"Index Name":"mensajes_pkey"');
      expect(text).not.toContain('Seq Scan');
      expect(Number((await c.query('SELECT COUNT(*) AS n FROM mensajes')).rows[0].n)).toBeGreaterThan(1_000_000);
    } finally {
      await c.end();
    }
  });
});

/** The uuid text PostgreSQL's md5(g::text)::uuid makes for row g. */
function md5Uuid(g: number): string {
  const h = createHash('md5').update(String(g)).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}
