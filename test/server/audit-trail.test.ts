import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AuditFilter } from '../../src/core/ports/accounts.js';
import type { ManualClock } from '../../src/core/time/clock.js';
import { auditFirstAt, auditPage } from '../../src/store/audit-sql.js';
import { pgSchema } from '../contract/adapters.js';
import { api, seedClient, startTestServer, type Seeded, type TestServer } from '../helpers/server.js';
import { describeWith, postgres, schemaUrl } from '../helpers/services.js';
import { expectError, expectOk, numeroNuevo } from '../helpers/expect.js';
import { injectTransport } from '../helpers/inject-http.js';
import { Cli, expectJsonOnly } from '../cli/helpers.js';

/**
 * The audit trail of money and configuration (issue 36): each change through
 * the API and the CLI writes one record with its actor, before and after, and
 * no secret; GET /admin/auditoria and `admin audit` filter by action, client
 * and time and page to the end. On SQLite and on PostgreSQL alike.
 */

interface Registro {
  id: number;
  fecha: string;
  actor: string;
  accion: string;
  objeto_tipo: string;
  objeto_id: number | null;
  cliente_id: number | null;
  detalle: Record<string, any>;
}

const SECRET = 'a-webhook-secret-of-thirty-chars';

function suite(store: () => Promise<{ url?: string; drop?: () => Promise<void> }>) {
  let s: TestServer;
  let drop: (() => Promise<void>) | undefined;
  let A: Seeded;
  let cli: Cli;
  const admin = (method: string, path: string, json?: unknown) => api(s.url, method, path, { key: s.adminToken, json });
  const audit = async (q: string): Promise<{ registros: Registro[]; paginas: { antes: number | null; despues: number | null } }> => {
    const r = await admin('GET', `/admin/auditoria?${q}`);
    expectOk(r);
    return r.body;
  };
  /** The records of one action for client A written since `after` (an id). */
  const since = async (accion: string, after: number) =>
    (await audit(`cliente_id=${A.clienteId}&accion=${accion}&limit=1000`)).registros.filter((r) => r.id > after);
  const lastId = async () => (await audit('limit=1')).registros[0]?.id ?? 0;

  beforeAll(async () => {
    const st = await store();
    drop = st.drop;
    s = await startTestServer({ allowPrivateUrls: true, authMaxFailures: 100_000, ...(st.url ? { store: st.url } : {}) }, { inject: true });
    A = await seedClient(s, { numero: numeroNuevo() });
    cli = new Cli(s.url, injectTransport(s.app));
  });
  afterAll(async () => {
    cli?.cleanup();
    await s?.stop();
    await drop?.();
  });

  it('a balance change through the API writes one record: amount, reason, movement, balance before and after', async () => {
    const from = await lastId();
    const r = await admin('POST', '/admin/saldo', { cliente_id: A.clienteId, monto: 250, motivo: 'transferencia' });
    expectOk(r);
    const rows = await since('saldo.cambiar', from);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({
      actor: 'operator',
      objeto_tipo: 'cliente',
      objeto_id: A.clienteId,
      cliente_id: A.clienteId,
      detalle: {
        monto: 250,
        motivo: 'transferencia',
        celular_id: null,
        movimiento_id: r.body.movimiento_id,
        antes: { saldo_global: 0 },
        despues: { saldo_global: 250 },
      },
    });
    // A refused change (below zero) leaves no record.
    expectError(await admin('POST', '/admin/saldo', { cliente_id: A.clienteId, monto: -999_999 }), 409, 604);
    expect(await since('saldo.cambiar', from)).toHaveLength(1);
  });

  it('a balance change through the CLI (a line’s balance) writes one record', async () => {
    const from = await lastId();
    const out = expectJsonOnly(
      await cli.run(['admin', 'balance', 'add', '--cliente', String(A.clienteId), '--celular', String(A.celularId), '--monto', '7', '--json'], {
        env: { PASARELA_ADMIN_TOKEN: s.adminToken },
      }),
    );
    const rows = await since('saldo.cambiar', from);
    expect(rows).toHaveLength(1);
    expect(rows[0]!.objeto_tipo).toBe('celular');
    expect(rows[0]!.detalle).toMatchObject({
      monto: 7,
      celular_id: A.celularId,
      movimiento_id: out.movimiento_id,
      antes: { saldo_celular: 0 },
      despues: { saldo_celular: 7 },
    });
  });

  it('webhook set, set again, delete and restore: one record each, the secret never in it', async () => {
    const from = await lastId();
    const set = (json: Record<string, unknown>) => api(s.url, 'POST', '/api/webhook_configurar.php', { key: A.clientKey, json: { op: 'set', ...json } });
    expectOk(await set({ url: 'http://127.0.0.1:9/hook?token=receiver-token-123', secret: SECRET, eventos: ['message.status'] }));
    expectOk(await set({ url: 'http://127.0.0.1:9/hook2', secret: `${SECRET}-2` }));
    expectOk(await api(s.url, 'POST', '/api/webhook_configurar.php', { key: A.clientKey, json: { op: 'delete' } }));
    expectOk(await api(s.url, 'POST', '/api/webhook_restaurar.php', { key: A.clientKey }));
    const all = (await audit(`cliente_id=${A.clienteId}&limit=1000`)).registros.filter((r) => r.id > from);
    expect(all.map((r) => r.accion).reverse()).toEqual(['webhook.configurar', 'webhook.configurar', 'webhook.eliminar', 'webhook.restaurar']);
    for (const r of all) expect(r).toMatchObject({ actor: `cliente:${A.clienteId}`, objeto_tipo: 'webhook', cliente_id: A.clienteId });
    const [restore, del, second, first] = all;
    expect(first!.detalle).toEqual({
      antes: { url: null, eventos: null, activo: null, secret: 'ninguno' },
      despues: { url: 'http://127.0.0.1:9/hook?…', eventos: 'message.status', activo: true, secret: 'puesto' },
    });
    expect(second!.detalle).toEqual({
      antes: { url: 'http://127.0.0.1:9/hook?…', eventos: 'message.status', secret: 'puesto' },
      despues: { url: 'http://127.0.0.1:9/hook2', eventos: 'all', secret: 'cambiado' },
    });
    expect(del!.detalle.despues).toEqual({ url: null, eventos: null, activo: null, secret: 'ninguno' });
    expect(restore!.detalle.despues).toMatchObject({ url: 'http://127.0.0.1:9/hook2', secret: 'puesto' });
    const text = JSON.stringify(all);
    expect(text).not.toContain(SECRET);
    expect(text).not.toContain('receiver-token-123');
  });

  it('plan and estado of a client, estado of a line: before and after of the fields changed', async () => {
    const from = await lastId();
    expectOk(await admin('PATCH', `/admin/clientes/${A.clienteId}`, { plan: 'ilimitado', estado: 'suspendido' }));
    expectOk(await admin('PATCH', `/admin/clientes/${A.clienteId}`, { estado: 'activo' }));
    const edits = await since('cliente.editar', from);
    expect(edits.map((r) => r.detalle)).toEqual([
      { antes: { estado: 'suspendido' }, despues: { estado: 'activo' } },
      { antes: { plan: 'medido', estado: 'activo' }, despues: { plan: 'ilimitado', estado: 'suspendido' } },
    ]);
    expectOk(await api(s.url, 'POST', `/api/celular_editar.php?id=${A.celularId}`, { key: A.clientKey, json: { estado: 'suspendido' } }));
    const line = await since('celular.editar', from);
    expect(line).toHaveLength(1);
    expect(line[0]).toMatchObject({
      actor: `cliente:${A.clienteId}`,
      objeto_id: A.celularId,
      detalle: { antes: { estado: 'desconectado' }, despues: { estado: 'suspendido' } },
    });
    expect(JSON.stringify([...edits, ...line])).not.toMatch(/key_hash|WAC_|WA_/);
  });

  it('filters by action, client and time, and pages to the end both ways (API)', async () => {
    const B = await seedClient(s, { numero: numeroNuevo() });
    const t0 = s.clock.now();
    (s.clock as ManualClock).advance(60_000);
    const ids: number[] = [];
    for (let i = 0; i < 7; i++) {
      const r = await admin('POST', '/admin/saldo', { cliente_id: B.clienteId, monto: i + 1 });
      expectOk(r);
    }
    expectOk(await admin('POST', '/admin/saldo', { cliente_id: A.clienteId, monto: 1 }));
    const f = `accion=saldo.cambiar&cliente_id=${B.clienteId}`;
    const q = `${f}&limit=3`;
    // Newest first; older pages to the end.
    let page = await audit(q);
    expect(page.paginas.despues).toBeNull();
    while (true) {
      ids.push(...page.registros.map((r) => r.id));
      for (const r of page.registros) expect(r).toMatchObject({ accion: 'saldo.cambiar', cliente_id: B.clienteId });
      if (page.paginas.antes === null) break;
      page = await audit(`${q}&antes=${page.paginas.antes}`);
    }
    expect(ids).toHaveLength(7);
    expect([...ids].sort((a, b) => b - a)).toEqual(ids);
    // The oldest page (despues=0), then newer pages back to the newest.
    let back = await audit(`${q}&despues=0`);
    expect(back.registros.map((r) => r.id)).toEqual(ids.slice(-3));
    expect(back.paginas.antes).toBeNull();
    const seen = [...back.registros.map((r) => r.id)];
    while (back.paginas.despues !== null) {
      back = await audit(`${q}&despues=${back.paginas.despues}`);
      seen.unshift(...back.registros.map((r) => r.id));
    }
    expect(seen).toEqual(ids);
    // Time: an instant before the first change takes them all; one after the last none; a day takes the whole day.
    const day = new Date(t0 + 60_000).toISOString().slice(0, 10);
    expect((await audit(`${f}&limit=100&desde=${new Date(t0 + 1).toISOString()}`)).registros).toHaveLength(7);
    expect((await audit(`${f}&limit=100&hasta=${new Date(t0 + 1).toISOString()}`)).registros).toHaveLength(0);
    expect((await audit(`${f}&limit=100&desde=${day}&hasta=${day}`)).registros).toHaveLength(7);
    expect((await audit(`${f}&desde=${new Date(s.clock.now() + 1000).toISOString()}`)).registros).toHaveLength(0);
  });

  it('refuses bad filters with words, never a 500', async () => {
    const bad = await admin('GET', '/admin/auditoria?hasta=ayer');
    expectError(bad, 400, 100);
    expect(bad.body.error).toBe('hasta: expected a calendar date YYYY-MM-DD or an RFC 3339 instant with its offset, such as 2026-11-26T10:00:00Z');
    const late = await admin('GET', '/admin/auditoria?desde=2026-13-45');
    expectError(late, 400, 100);
    expect(late.body.error).toContain('expected a calendar date YYYY-MM-DD');
    expectError(await admin('GET', '/admin/auditoria?desde=2026-11-28&hasta=2026-11-01'), 400, 100);
    expectError(await admin('GET', '/admin/auditoria?antes=5&despues=3'), 400, 100);
    expectError(await admin('GET', '/admin/auditoria?accion=DROP%20TABLE'), 400, 100);
    expectError(await admin('GET', '/admin/auditoria?limit=0'), 400, 100);
    expectError(await api(s.url, 'GET', '/admin/auditoria', { key: A.clientKey }), 401, 200);
  });

  it('admin audit: filters, readable changes, and --all to the end', async () => {
    const env = { env: { PASARELA_ADMIN_TOKEN: s.adminToken } };
    const all = expectJsonOnly(
      await cli.run(['admin', 'audit', '--accion', 'saldo.cambiar', '--cliente', String(A.clienteId), '--limit', '1', '--all', '--json'], env),
    );
    const api1000 = (await audit(`accion=saldo.cambiar&cliente_id=${A.clienteId}&limit=1000`)).registros;
    expect(all.registros.map((r: Registro) => r.id)).toEqual(api1000.map((r) => r.id));
    expect(all.paginas.antes).toBeNull();
    const table = await cli.run(['admin', 'audit', '--accion', 'saldo.cambiar', '--cliente', String(A.clienteId), '--limit', '1'], env);
    expect(table.exitCode, table.stderr).toBe(0);
    expect(table.stdout).toMatch(/saldo_global: \d+ → \d+|saldo_celular: \d+ → \d+/);
    expect(table.stderr).toMatch(/older records: --antes \d+/);
    const bad = await cli.run(['admin', 'audit', '--desde', 'ayer'], env);
    expect(bad.exitCode).toBe(2);
    expect(bad.stderr).toContain('expected a calendar date YYYY-MM-DD or an RFC 3339 instant with its offset, such as 2026-11-26T10:00:00Z');
  });
}

describe('the audit trail of money and configuration (SQLite)', () => {
  suite(async () => ({}));
});

describeWith(postgres, 'the audit trail of money and configuration (PostgreSQL)', () => {
  suite(async () => {
    const schema = await pgSchema();
    return { url: schemaUrl(schema.schema), drop: schema.drop };
  });
});

/**
 * PostgreSQL plans of the trail's statements among 300,000 records: each
 * filter reads the index that leads with it, never the table in order
 * (EXPLAIN of the very SQL text the store runs, store/audit-sql.ts).
 */
describeWith(postgres, 'the audit trail read by its indexes among 300,000 records (PostgreSQL)', () => {
  let c: pg.Client;
  let drop: () => Promise<void>;
  let s: TestServer;

  beforeAll(async () => {
    const schema = await pgSchema();
    drop = schema.drop;
    s = await startTestServer({ store: schemaUrl(schema.schema) });
    await s.stop();
    c = new pg.Client({ connectionString: schemaUrl(schema.schema) });
    await c.connect();
    await c.query(`INSERT INTO auditoria (fecha, actor, accion, objeto_tipo, objeto_id, cliente_id, detalle)
      SELECT 1700000000000 + g * 1000, 'operator',
        CASE WHEN g % 1000 = 0 THEN 'webhook.configurar' WHEN g % 2 = 0 THEN 'saldo.cambiar' ELSE 'cliente.editar' END,
        'cliente', g % 500, g % 500, '{}' FROM generate_series(1, 300000) g`);
    await c.query('ANALYZE auditoria');
  });
  afterAll(async () => {
    await c?.end();
    await drop?.();
  });

  const plan = async (sql: string, params: unknown[]) => JSON.stringify((await c.query(`EXPLAIN (FORMAT JSON) ${sql}`, params)).rows[0]['QUERY PLAN']);

  // A common action alone (half the trail) is read from the primary key, filtered: a page stops after about twice its rows.
  // A rare one, a client, a client's action: from the index that leads with them.
  it('each filter and each direction reads one index range', async () => {
    const cases: Array<[AuditFilter, string]> = [
      [{ limit: 51 }, 'auditoria_pkey'],
      [{ limit: 51, before_id: 150_000 }, 'auditoria_pkey'],
      [{ limit: 51, after_id: 0, from: 'oldest' }, 'auditoria_pkey'],
      [{ limit: 51, cliente_id: 7 }, 'auditoria_cliente'],
      [{ limit: 51, cliente_id: 7, before_id: 150_000, after_id: 1000 }, 'auditoria_cliente'],
      [{ limit: 51, accion: 'webhook.configurar' }, 'auditoria_accion'],
      [{ limit: 51, accion: 'webhook.configurar', after_id: 10, from: 'oldest' }, 'auditoria_accion'],
      [{ limit: 51, cliente_id: 7, accion: 'saldo.cambiar' }, 'auditoria_cliente_accion'],
      [{ limit: 51, cliente_id: 7, accion: 'saldo.cambiar', before_id: 200_000, after_id: 100_000 }, 'auditoria_cliente_accion'],
    ];
    for (const [f, index] of cases) {
      const q = auditPage(f, (i) => `$${i}`);
      const text = await plan(q.sql, q.params);
      expect(text, JSON.stringify(f)).toContain(`"Index Name":"${index}"`);
      expect(text, JSON.stringify(f)).not.toContain('Seq Scan');
      expect(text, JSON.stringify(f)).not.toContain('"Node Type":"Sort"');
    }
    const first = await plan(
      auditFirstAt((i) => `$${i}`),
      [1700000000000 + 150_000 * 1000],
    );
    expect(first).toContain('"Index Name":"auditoria_fecha"');
    expect(first).not.toContain('Seq Scan');
  });
});
