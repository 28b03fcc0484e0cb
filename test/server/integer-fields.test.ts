import type Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, seedClient, startTestServer, type ApiResponse, type Seeded, type TestServer } from '../helpers/server.js';
import { expectError } from '../helpers/expect.js';
import { describeWith, postgres, schemaUrl } from '../helpers/services.js';
import { pgSchema } from '../contract/adapters.js';
import { createCliente, editCliente } from '../../src/core/accounts/accounts.js';
import { moveToPostgres, MoveRefused } from '../../src/store/migrate/move-to-postgres.js';
import { Db } from '../../src/store/postgres/db.js';

/**
 * Every integer field of every route, found in the served /openapi.json (built
 * from the schemas the routes registered, so a new field is fuzzed without
 * editing this file), refuses non-finite, fractional, too large and out of
 * range values with 400, as a query parameter, a path segment, a JSON value
 * (quoted and bare) and a form field; and nothing at all is written.
 */

interface Schema {
  type?: string | string[];
  minimum?: number;
  maximum?: number;
  format?: string;
  pattern?: string;
  enum?: unknown[];
  minLength?: number;
  maxLength?: number;
  properties?: Record<string, Schema>;
  required?: string[];
}
interface Operation {
  parameters?: Array<{ in: string; name: string; schema: Schema; required?: boolean }>;
  requestBody?: { content: Record<string, { schema: Schema }> };
}
interface IntegerField {
  method: string;
  path: string;
  where: 'path' | 'query' | 'body';
  name: string;
  schema: Schema;
  /** The route's JSON body: its required fields are sent valid, so the only fault is the fuzzed one. */
  body?: Schema;
  /** The route's other required query parameters, sent valid for the same reason. */
  query: Array<{ name: string; schema: Schema }>;
}

const types = (s: Schema) => (Array.isArray(s.type) ? s.type : [s.type]);
/** An integer field: a union that also takes a string (a legacy flag) is not one. */
const isInteger = (s: Schema) => types(s).includes('integer') && !types(s).includes('string');

export function integerFields(doc: { paths: Record<string, Record<string, Operation>> }): IntegerField[] {
  const out: IntegerField[] = [];
  for (const [path, ops] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(ops)) {
      const body = op.requestBody?.content['application/json']?.schema;
      const required = (op.parameters ?? []).filter((p) => p.in === 'query' && p.required);
      const query = (name: string) => required.filter((p) => p.name !== name).map((p) => ({ name: p.name, schema: p.schema }));
      for (const p of op.parameters ?? []) {
        if ((p.in === 'path' || p.in === 'query') && isInteger(p.schema))
          out.push({ method: method.toUpperCase(), path, where: p.in, name: p.name, schema: p.schema, body, query: query(p.name) });
      }
      for (const [name, s] of Object.entries(body?.properties ?? {}))
        if (isInteger(s)) out.push({ method: method.toUpperCase(), path, where: 'body', name, schema: s, body, query: query('') });
    }
  }
  return out;
}

/** The values every integer field refuses, and those its own bounds make wrong. */
function badValues(s: Schema): Array<string | number> {
  const v: Array<string | number> = [
    'Infinity',
    '-Infinity',
    '1e999',
    '-1e999',
    'NaN',
    '1.5',
    1.5,
    '-0.5',
    2 ** 53,
    -(2 ** 53),
    '9007199254740993',
    '9'.repeat(90),
    '9'.repeat(400),
  ];
  if (s.minimum !== undefined && s.minimum > -Number.MAX_SAFE_INTEGER) v.push(s.minimum - 1, String(s.minimum - 1));
  if (s.maximum !== undefined && s.maximum < Number.MAX_SAFE_INTEGER) v.push(s.maximum + 1, String(s.maximum + 1));
  return v;
}

/** A valid value of a required field other than the fuzzed one. */
function filler(s: Schema): unknown {
  if (isInteger(s)) return Math.max(1, s.minimum ?? 1);
  if (s.enum) return s.enum[0];
  if (s.format === 'email') return 'fuzz@example.com';
  const candidates = ['fuzz', 'fuzz.pdf', 'http://127.0.0.1:9/x.png', '5215512345678'];
  return candidates.find((c) => (!s.pattern || new RegExp(s.pattern).test(c)) && c.length >= (s.minLength ?? 0)) ?? 'fuzz';
}

const dbOf = (s: TestServer) => (s.core.store as unknown as { db: Database.Database }).db;

/** Every row of every table of the store. */
function snapshot(db: Database.Database): Record<string, unknown[]> {
  const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").all() as Array<{ name: string }>;
  return Object.fromEntries(tables.map(({ name }) => [name, db.prepare(`SELECT * FROM "${name}"`).all()]));
}

let s: TestServer;
let A: Seeded;
beforeAll(async () => {
  s = await startTestServer({ authMaxFailures: 1_000_000 }, { inject: true });
  A = await seedClient(s, { saldo: 100 });
});
afterAll(async () => {
  await s?.stop();
});

describe('integer fields', () => {
  it('every integer field of every route refuses bad numbers with 400 naming it, and nothing is written', async () => {
    const doc = (await api(s.url, 'GET', '/openapi.json')).body as Parameters<typeof integerFields>[0];
    const fields = integerFields(doc);
    // The document lists them all: the operator API, the client API and the legacy .php routes.
    expect(fields.some((f) => f.path.startsWith('/admin/') && f.where === 'body')).toBe(true);
    expect(fields.some((f) => f.path.endsWith('.php') && f.where === 'query')).toBe(true);
    expect(fields.some((f) => f.where === 'path')).toBe(true);
    expect(fields.length).toBeGreaterThan(30);

    const before = snapshot(dbOf(s));
    let sent = 0;
    const check = (r: ApiResponse, f: IntegerField, how: string, value: unknown): void => {
      const what = `${f.method} ${f.path} ${f.where} ${f.name} = ${JSON.stringify(value)} (${how})`;
      expect(r.status, `${what}: ${r.text}`).toBe(400);
      // The router refuses a path segment over 100 characters itself (101), before the schema (100).
      if (how === 'path' && String(r.body?.error).includes('exceeding the max param length')) return expectError(r, 400, 100);
      expect(r.body?.api_codigo, `${what}: ${r.text}`).toBe(100);
      expectError(r, 400, 100);
      expect(r.body.error, what).toContain(f.name);
      sent += 1;
    };
    for (const f of fields) {
      const key = f.path.startsWith('/admin/') ? s.adminToken : A.clientKey;
      const path = (id: string | number) =>
        f.path.replace(/\{(\w+)\}/g, (_m, name: string) => (f.where === 'path' && name === f.name ? encodeURIComponent(String(id)) : '1'));
      const base = Object.fromEntries((f.body?.required ?? []).filter((n) => n !== f.name).map((n) => [n, filler(f.body!.properties![n]!)]));
      const json = f.body ? base : undefined;
      // One field's requests together: a few dozen at a time keeps the run short on a loaded machine.
      const calls: Array<Promise<void>> = [];
      const call = (how: string, value: unknown, p: string, o: Parameters<typeof api>[3]) =>
        calls.push(api(s.url, f.method, p, { key, ...o }).then((r) => check(r, f, how, value)));
      for (const value of badValues(f.schema)) {
        if (f.where === 'path') call('path', value, path(value), { json });
        else if (f.where === 'query') {
          const others = f.query.map((q) => `${q.name}=${encodeURIComponent(String(filler(q.schema)))}&`).join('');
          call('query', value, `${path(1)}?${others}${f.name}=${encodeURIComponent(String(value))}`, { json });
        } else {
          call('json', value, path(1), { json: { ...base, [f.name]: value } });
          call('form', value, path(1), { form: Object.fromEntries(Object.entries({ ...base, [f.name]: value }).map(([k, v]) => [k, String(v)])) });
        }
      }
      if (f.where === 'body') {
        // A bare number JSON.parse makes Infinity of.
        for (const literal of ['1e999', '-1e999']) {
          call('bare JSON', literal, path(1), { raw: JSON.stringify({ ...base, [f.name]: '@' }).replace('"@"', literal), contentType: 'application/json' });
        }
      }
      await Promise.all(calls);
    }
    expect(sent).toBeGreaterThan(500);
    expect(snapshot(dbOf(s))).toEqual(before);
  }, 120_000);
});

describe('a store that already holds a non-integer', () => {
  it('a cap stored as Inf (before the schemas refused it) reads as no cap: listings, the client and info.php answer 200', async () => {
    const B = await seedClient(s, { max_celulares: 5 });
    dbOf(s).prepare('UPDATE clientes SET max_celulares = 9e999 WHERE id = ?').run(B.clienteId);
    const list = await api(s.url, 'GET', '/admin/clientes', { key: s.adminToken });
    expect(list.status, list.text).toBe(200);
    expect(list.body.clientes.find((c: { cliente: { id: number } }) => c.cliente.id === B.clienteId).cliente.max_celulares).toBeNull();
    const one = await api(s.url, 'GET', `/admin/clientes/${B.clienteId}`, { key: s.adminToken });
    expect(one.status, one.text).toBe(200);
    expect(one.body.cliente.max_celulares).toBeNull();
    const info = await api(s.url, 'GET', '/api/info.php', { key: B.clientKey });
    expect(info.status, info.text).toBe(200);
    expect(info.body.cliente.max_celulares).toBeNull();
    // Writing a cap repairs the row.
    const fixed = await api(s.url, 'PATCH', `/admin/clientes/${B.clienteId}`, { key: s.adminToken, json: { max_celulares: 3 } });
    expect(fixed.status, fixed.text).toBe(200);
    expect(fixed.body.cliente.max_celulares).toBe(3);
    dbOf(s).prepare('UPDATE clientes SET max_celulares = 9e999 WHERE id = ?').run(B.clienteId);
  });

  it('the core refuses such a number whoever calls it, before any write', async () => {
    for (const input of [{ max_celulares: Infinity }, { max_celulares: 1.5 }, { saldo: Infinity }, { saldo: 2 ** 53 }]) {
      await expect(createCliente(s.core, { nombre: 'x', email: 'x@example.com', ...input })).rejects.toMatchObject({ row: { codigo: 100 } });
    }
    await expect(editCliente(s.core, A.clienteId, { max_celulares: Infinity })).rejects.toMatchObject({ row: { codigo: 100 } });
  });
});

describeWith(postgres, 'migrate of a store holding a non-integer', () => {
  it('refuses, naming the table, column and row, instead of a bare PostgreSQL error; nothing is copied', async () => {
    const B = await seedClient(s);
    dbOf(s).prepare('UPDATE clientes SET max_celulares = 9e999 WHERE id = ?').run(B.clienteId);
    const target = await pgSchema();
    try {
      const u = new URL(schemaUrl(target.schema));
      const moved = moveToPostgres({ from: s.dataDir, to: u.toString(), replace: false });
      await expect(moved).rejects.toBeInstanceOf(MoveRefused);
      await expect(moved).rejects.toMatchObject({
        kind: 'source',
        message: expect.stringContaining(`clientes.max_celulares = "Infinity" (id ${B.clienteId})`),
      });
      const pg = new Db(u.toString(), { max: 1 });
      try {
        expect(Number((await pg.one<{ n: number }>('SELECT COUNT(*) AS n FROM clientes'))!.n)).toBe(0);
      } finally {
        await pg.close();
      }
    } finally {
      await target.drop();
    }
  });
});
