import { join } from 'node:path';
import type Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { api, startTestServer, type TestServer } from '../helpers/server.js';
import { linkedLine, numeroNuevo, send, TEXT } from './send-helpers.js';
import { until } from '../helpers/poll.js';

/**
 * A store that cannot take writes. SQLite's own limit on the database's size
 * (`max_page_count`, set on the server's connection) makes every write that
 * needs a new page fail with SQLITE_FULL, exactly as a full disk does.
 */
const servers: TestServer[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await s.stop();
});

const dbOf = (s: TestServer) => (s.core.store as unknown as { db: Database.Database }).db;

describe('a full store', () => {
  it('answers 507 naming the store, never 500; /health says so; nothing accepted is lost; balances equal the ledger once it has room again', async () => {
    const s = await startTestServer({ queue: { gapMinMs: 0, gapMaxMs: 0 } });
    servers.push(s);
    const line = await linkedLine(s, { saldo: 1000 });
    const db = dbOf(s);
    const store = join(s.dataDir, 'pasarela.db');

    const accepted: string[] = [];
    db.pragma(`max_page_count = ${db.pragma('page_count', { simple: true }) as number}`);
    let full: Awaited<ReturnType<typeof send>> | undefined;
    for (let i = 0; i < 400 && !full; i += 1) {
      const r = await send(s, line, TEXT, { destinatario: numeroNuevo(), mensaje: `${i} ${'x'.repeat(3000)}`, ...(i % 2 ? { directo: 1 } : {}) });
      expect([200, 507], r.text).toContain(r.status);
      if (r.status === 200) accepted.push(r.body.msg_id as string);
      else full = r;
    }
    expect(full, 'the store filled up').toBeDefined();
    expect(full!.body).toMatchObject({ ok: false, api_codigo: 903, api_texto: 'ALMACEN_NO_DISPONIBLE' });
    expect(full!.body.error).toContain(`the store ${store} cannot be written: the disk is full (SQLITE_FULL)`);

    const sick = await api(s.url, 'GET', '/health');
    expect(sick.status).toBe(503);
    expect(sick.body).toMatchObject({ ok: false, status: 'store_unavailable', store: 'sqlite', api_texto: 'ALMACEN_NO_DISPONIBLE' });
    expect(sick.body.store_error).toContain(store);
    // Reads still answer.
    expect((await api(s.url, 'GET', '/api/saldo.php', { key: line.celularKey })).status).toBe(200);

    // Space again: the next health check finds the store writable, and everything accepted ends.
    db.pragma('max_page_count = 1073741823');
    const well = await api(s.url, 'GET', '/health');
    expect(well.status, well.text).toBe(200);
    expect(well.body.status).toBe('ok');
    await s.recovery.run(true);
    await until(
      async () => {
        const ms = await Promise.all(accepted.map((id) => s.core.store.getMensaje(id)));
        return ms.every((m) => m !== null && m.estado !== 'pendiente');
      },
      { what: 'every accepted message to end' },
    );
    for (const id of accepted) expect((await s.core.store.getMensaje(id))!.estado, id).not.toBe('error');

    const ledger = db.prepare('SELECT SUM(monto) AS t FROM movimientos_saldo WHERE cliente_id = ?').get(line.clienteId) as { t: number };
    const cli = db.prepare('SELECT saldo_global FROM clientes WHERE id = ?').get(line.clienteId) as { saldo_global: number };
    const cel = db.prepare('SELECT saldo_actual FROM celulares WHERE id = ?').get(line.celularId) as { saldo_actual: number };
    expect(cli.saldo_global + cel.saldo_actual).toBe(ledger.t);
    const charged = db.prepare('SELECT COUNT(*) AS n FROM mensajes WHERE cliente_id = ? AND cobrado = 1').get(line.clienteId) as { n: number };
    expect(cli.saldo_global + cel.saldo_actual).toBe(1000 - charged.n);
  });
});
