import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { open } from 'node:fs/promises';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { TempFiles, type TempFile } from '../../src/core/media/media.js';
import { api, startTestServer, type TestServer } from '../helpers/server.js';
import { expectError } from '../helpers/expect.js';
import { until } from '../helpers/poll.js';
import { b64, linkedLine, numeroNuevo, PNG, send } from './send-helpers.js';

/**
 * The three places a full disk answered 500 (and one left a half-made line):
 * a base64 body's temp file, a line's creation, a backup's copy. Each answers
 * 507 with the store-full code and a reason, and leaves nothing half done.
 */
const servers: TestServer[] = [];
afterEach(async () => {
  vi.restoreAllMocks();
  for (const s of servers.splice(0)) await s.stop();
});

const dbOf = (s: TestServer) => (s.core.store as unknown as { db: Database.Database }).db;

/**
 * The store's own size limit makes the audit record of `accion` fail with SQLITE_FULL, as a full disk does, after the
 * row it records fitted: 1 MiB more than the file may grow by, written by a trigger of the server's connection only.
 */
function fillAtAudit(db: Database.Database, accion: string): void {
  db.exec('CREATE TABLE IF NOT EXISTS relleno (b BLOB)');
  db.prepare(
    `CREATE TEMP TRIGGER llena AFTER INSERT ON main.auditoria WHEN NEW.accion = '${accion}' BEGIN INSERT INTO relleno VALUES (zeroblob(1048576)); END`,
  ).run();
  db.pragma(`max_page_count = ${db.pragma('page_count', { simple: true }) as number}`);
}

function roomAgain(db: Database.Database): void {
  db.exec('DROP TRIGGER temp.llena');
  db.pragma('max_page_count = 1073741823');
}

async function server(): Promise<TestServer> {
  const s = await startTestServer({ queue: { gapMinMs: 0, gapMaxMs: 0 } });
  servers.push(s);
  return s;
}

describe('a full disk', () => {
  // /dev/full answers every write with ENOSPC, as a full disk does: the temp file's bytes go there.
  it.skipIf(!existsSync('/dev/full'))('a base64 file whose temp file cannot be written: 507 naming the folder, no message, no charge', async () => {
    const s = await server();
    const line = await linkedLine(s, { saldo: 10 });
    const create = Object.getOwnPropertyDescriptor(TempFiles.prototype, 'create')!.value as (this: TempFiles, msgId: string) => Promise<TempFile>;
    vi.spyOn(TempFiles.prototype, 'create').mockImplementation(async function (this: TempFiles, msgId: string): Promise<TempFile> {
      const real = await create.call(this, msgId);
      const full = await open('/dev/full', 'w');
      const shut = () => full.close().catch(() => {});
      return {
        path: real.path,
        write: async (bytes) => {
          await full.write(bytes);
        },
        close: async () => {
          await shut();
          await real.close();
        },
        discard: async () => {
          await shut();
          await real.discard();
        },
      };
    });
    const r = await send(s, line, '/api/mensaje_enviar_imagen_base64.php', { destinatario: numeroNuevo(), imageBase64: b64(PNG) });
    expectError(r, 507, 903);
    expect(r.body.error).toContain(`the temporary folder ${join(s.dataDir, 'tmp')} cannot be written: the disk is full (ENOSPC)`);
    const db = dbOf(s);
    expect(db.prepare('SELECT COUNT(*) AS n FROM mensajes').get()).toEqual({ n: 0 });
    expect((await api(s.url, 'GET', '/api/saldo.php', { key: line.celularKey })).body.saldo_global).toBe(10);
    vi.restoreAllMocks();
    const again = await send(s, line, '/api/mensaje_enviar_imagen_base64.php', { destinatario: numeroNuevo(), imageBase64: b64(PNG) });
    expect(again.status, again.text).toBe(200);
  });

  it('celular_crear when the store fills up meanwhile: 507, no line left behind, and a retry once there is room makes it', async () => {
    const s = await server();
    const c = await api(s.url, 'POST', '/admin/clientes', { key: s.adminToken, json: { nombre: 'Lleno', email: 'lleno@example.com' } });
    expect(c.status, c.text).toBe(201);
    const db = dbOf(s);
    fillAtAudit(db, 'celular.crear');
    const numero = numeroNuevo();
    const r = await api(s.url, 'POST', '/api/celular_crear.php', { key: c.body.api_key, json: { numero } });
    expectError(r, 507, 903);
    expect(r.body.error).toContain('cannot be written: the disk is full (SQLITE_FULL)');
    expect(db.prepare('SELECT COUNT(*) AS n FROM celulares WHERE numero = ?').get(numero)).toEqual({ n: 0 });
    expect((await api(s.url, 'GET', '/api/celulares.php', { key: c.body.api_key })).body.celulares).toEqual([]);

    roomAgain(db);
    const retry = await api(s.url, 'POST', '/api/celular_crear.php', { key: c.body.api_key, json: { numero } });
    expect(retry.status, retry.text).toBe(201);
    expect(retry.body.celular).toMatchObject({ numero, gateway_instancia: `pasarela-${retry.body.celular_id}` });
    const mine = await api(s.url, 'GET', `/api/celular.php?id=${retry.body.celular_id}`, { key: retry.body.api_key });
    expect(mine.status, mine.text).toBe(200);
    const audit = await api(s.url, 'GET', `/admin/auditoria?cliente_id=${c.body.cliente.id}`, { key: s.adminToken });
    expect(audit.body.registros.filter((a: { accion: string }) => a.accion === 'celular.crear')).toHaveLength(1);
  });

  it('POST /admin/clientes when the store fills up meanwhile: 507, no client whose key was never shown, and a retry makes one', async () => {
    const s = await server();
    const db = dbOf(s);
    fillAtAudit(db, 'cliente.crear');
    const body = { nombre: 'Lleno', email: 'lleno@example.com', saldo: 50 };
    const r = await api(s.url, 'POST', '/admin/clientes', { key: s.adminToken, json: body });
    expectError(r, 507, 903);
    expect(r.body.error).toContain('cannot be written: the disk is full (SQLITE_FULL)');
    expect(db.prepare('SELECT COUNT(*) AS n FROM clientes WHERE email = ?').get(body.email)).toEqual({ n: 0 });
    expect(db.prepare('SELECT COUNT(*) AS n FROM movimientos_saldo').get()).toEqual({ n: 0 });

    roomAgain(db);
    const retry = await api(s.url, 'POST', '/admin/clientes', { key: s.adminToken, json: body });
    expect(retry.status, retry.text).toBe(201);
    expect(retry.body.saldo_global).toBe(50);
    expect(db.prepare('SELECT COUNT(*) AS n FROM clientes WHERE email = ?').get(body.email)).toEqual({ n: 1 });
    expect(db.prepare('SELECT monto, saldo_resultante FROM movimientos_saldo WHERE cliente_id = ?').all(retry.body.cliente.id)).toEqual([
      { monto: 50, saldo_resultante: 50 },
    ]);
    expect((await api(s.url, 'GET', '/api/saldo.php', { key: retry.body.api_key })).body.saldo_global).toBe(50);
  });

  it('POST /admin/backup when the copy does not fit: 507 with the reason, no copy left, and the next backup works', async () => {
    const s = await server();
    const store = s.core.store as { backupTo?: (file: string) => Promise<{ schemaVersion: number }> };
    const backupTo = store.backupTo!;
    // What SQLite's backup API throws when the copy's disk fills (measured on a 256 KiB tmpfs).
    store.backupTo = async () => {
      throw new Database.SqliteError('database or disk is full', 'SQLITE_FULL');
    };
    const r = await api(s.url, 'POST', '/admin/backup', { key: s.adminToken });
    expectError(r, 507, 903);
    expect(r.body.error).toContain(`the backup copy in ${join(s.dataDir, 'tmp')} cannot be written: the disk is full (SQLITE_FULL)`);
    expect(readdirSync(join(s.dataDir, 'tmp')).filter((f) => f.startsWith('backup-'))).toEqual([]);
    store.backupTo = backupTo;
    const ok = await api(s.url, 'POST', '/admin/backup', { key: s.adminToken });
    expect(ok.status, ok.text).toBe(200);
    // Its copy goes once the answer has ended (then its connection is idle, and the stop need not wait for it).
    await until(() => readdirSync(join(s.dataDir, 'tmp')).every((f) => !f.startsWith('backup-')), { what: 'the copy removed' });
  });
});
