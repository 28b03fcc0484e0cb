import Database from 'better-sqlite3';
import { copyFileSync, existsSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, startTestServer, tempDir, type TestServer } from '../helpers/server.js';
import { describeWith, postgres, schemaUrl } from '../helpers/services.js';
import { pgSchema } from '../contract/adapters.js';
import { linkedLine, numeroNuevo, send, TEXT, type Line } from '../server/send-helpers.js';
import { injectTransport } from '../helpers/inject-http.js';
import { Cli, expectJsonOnly } from './helpers.js';

/**
 * `pasarela admin backup FILE` against a real server taking sends meanwhile,
 * then the documented restore: the file copied to `<data-dir>/pasarela.db`
 * of a new server, which serves what was accepted before the backup.
 */
let s: TestServer;
let cli: Cli;
let L: Line;
const out = tempDir('pasarela-backup-');

beforeAll(async () => {
  s = await startTestServer({ queue: { gapMinMs: 0, gapMaxMs: 0 } });
  cli = new Cli(s.url, injectTransport(s.app));
  L = await linkedLine(s, { saldo: 100_000, plan: 'ilimitado' });
});
afterAll(async () => {
  cli?.cleanup();
  await s?.stop();
});

let n = 0;
async function sendOne(): Promise<{ status: number; msgId?: string }> {
  n += 1;
  const r = await send(s, L, TEXT, { destinatario: numeroNuevo(), mensaje: `respaldo ${n} ${Date.now()}` });
  return { status: r.status, msgId: r.body?.msg_id };
}

describe('admin backup', () => {
  it('copies the store while sends go on; the copy restores into a working server', async () => {
    const before: string[] = [];
    for (let i = 0; i < 20; i++) {
      const r = await sendOne();
      expect(r.status).toBe(200);
      before.push(r.msgId!);
    }
    // Sends keep coming while the backup runs.
    let stop = false;
    const during: number[] = [];
    const loop = (async () => {
      while (!stop) during.push((await sendOne()).status);
    })();
    const file = join(out, 'copia.db');
    let r;
    try {
      r = await cli.run(['admin', 'backup', file, '--json', '--admin-token', s.adminToken]);
    } finally {
      stop = true;
      await loop;
    }
    const b = expectJsonOnly(r);
    expect(during.length).toBeGreaterThan(0);
    expect(b.file).toBe(file);
    expect(b.bytes).toBe(statSync(file).size);
    expect(b.sha256).toBe(createHash('sha256').update(readFileSync(file)).digest('hex'));
    expect(b.schema_version).toBe(s.schemaVersion);
    expect(existsSync(`${file}.partial`)).toBe(false);
    // The server's temp copy is gone once the answer ended.
    expect(readdirSync(join(s.dataDir, 'tmp')).filter((f) => f.startsWith('backup-'))).toEqual([]);

    const db = new Database(file, { readonly: true });
    try {
      expect(db.pragma('integrity_check', { simple: true })).toBe('ok');
    } finally {
      db.close();
    }

    // Restore: the file is the new data directory's pasarela.db.
    const dir = tempDir();
    copyFileSync(file, join(dir, 'pasarela.db'));
    const restored = await startTestServer({ dataDir: dir });
    try {
      const c = await api(restored.url, 'GET', `/admin/clientes/${L.clienteId}`, { key: restored.adminToken });
      expect(c.status, c.text).toBe(200);
      expect(c.body.celulares.map((x: { id: number }) => x.id)).toContain(L.celularId);
      const listed = new Set<string>();
      for (let pagina = 1; pagina <= 50; pagina++) {
        const h = await api(restored.url, 'GET', `/api/historial_listar.php?celular_id=${L.celularId}&por_pagina=100&page=${pagina}`, { key: L.clientKey });
        expect(h.status, h.text).toBe(200);
        const page = h.body.mensajes as Array<{ msg_id: string }>;
        for (const m of page) listed.add(m.msg_id);
        if (page.length < 100) break;
      }
      for (const id of before) expect(listed.has(id), id).toBe(true);
      // The line's key from before the backup works on the restored server.
      const again = await api(restored.url, 'POST', TEXT, { key: L.celularKey, json: { destinatario: numeroNuevo(), mensaje: 'after restore' } });
      expect(again.status, again.text).toBe(200);
    } finally {
      await restored.stop();
    }
  });

  it('refuses a bad operator token (exit 3, 401) and writes nothing', async () => {
    const file = join(out, 'denied.db');
    const r = await cli.run(['admin', 'backup', file, '--admin-token', 'not-the-token-of-this-server-xxxxxxxx']);
    expect(r.exitCode, r.stderr).toBe(3);
    expect(existsSync(file)).toBe(false);
    expect(existsSync(`${file}.partial`)).toBe(false);
    const raw = await api(s.url, 'POST', '/admin/backup', { key: 'not-the-token-of-this-server-xxxxxxxx' });
    expect(raw.status).toBe(401);
  });

  it('does not replace an existing FILE without --force (exit 2); with --force it does', async () => {
    const file = join(out, 'existing.db');
    writeFileSync(file, 'keep me');
    const r = await cli.run(['admin', 'backup', file, '--admin-token', s.adminToken]);
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toContain('--force');
    expect(readFileSync(file, 'utf8')).toBe('keep me');
    const f = await cli.run(['admin', 'backup', file, '--force', '--admin-token', s.adminToken]);
    expect(f.exitCode, f.stderr).toBe(0);
    expect(f.stdout).toMatch(/^file\t/m);
    expect(readFileSync(file).subarray(0, 16).toString('latin1')).toBe('SQLite format 3\0');
  });
});

describeWith(postgres, 'admin backup on PostgreSQL', () => {
  it('is refused with a pointer to pg_dump', async () => {
    const sch = await pgSchema();
    const u = new URL(schemaUrl(sch.schema));
    const pg = await startTestServer({ store: u.toString() });
    try {
      const r = await api(pg.url, 'POST', '/admin/backup', { key: pg.adminToken });
      expect(r.status).toBe(409);
      expect(r.body.api_codigo).toBe(604);
      expect(r.body.error).toContain('pg_dump');
    } finally {
      await pg.stop();
      await sch.drop();
    }
  });
});
