import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { REASON_NOT_SENT } from '../../src/core/sending/direct-recovery.js';
import { api, type ApiResponse } from '../helpers/server.js';
import { until } from '../helpers/poll.js';
import { crash, killAllServeChildren, startServeChild, stop } from '../helpers/serve-child.js';

/**
 * kill -9 in the middle of a burst of direct sends, against the real binary.
 * After the restart no message may stay `pendiente`, each one the simulated
 * network took is recorded as sent under the id the network gave it (with the
 * receipts it owed), each one it never took ends in `error` refunded, and
 * every balance equals its ledger.
 */

const SENDS = 400;
const SALDO = 1000;
const dirs: string[] = [];

afterAll(() => {
  killAllServeChildren();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

async function ok(p: Promise<ApiResponse>, status = 200): Promise<any> {
  const r = await p;
  expect(r.status, r.text).toBe(status);
  return r.body;
}

describe('crash: SIGKILL during a burst of direct sends', () => {
  it('resolves every direct send the crash left pending, and every balance equals its ledger', async () => {
    const root = mkdtempSync(join(tmpdir(), 'pasarela-crash-direct-'));
    dirs.push(root);
    const dataDir = join(root, 'data');
    let s = await startServeChild(dataDir, ['--sim-delivery-ms', '50', '--sim-read-ms', '100']);
    const admin = readFileSync(join(dataDir, 'admin-token'), 'utf8').trim();
    const call = (method: string, path: string, key: string, json?: unknown) => api(s.url, method, path, { key, json });
    const cli = await ok(call('POST', '/admin/clientes', admin, { nombre: 'Directo', email: 'directo@example.com', saldo: SALDO }), 201);
    const key: string = cli.api_key;
    const c = await ok(call('POST', '/api/celular_crear.php', key, { numero: '5215512345678' }), 201);
    const id: number = c.celular_id;
    await ok(call('POST', `/api/celular_qr.php?id=${id}`, key));
    await ok(call('POST', '/admin/sim/scan', admin, { celular_id: id }));
    await ok(call('POST', `/api/celular_editar.php?id=${id}`, key, { max_envios_por_minuto: 1000, max_envios_por_hora: 50_000 }));
    await until(async () => (await ok(call('GET', `/api/celular.php?id=${id}`, key))).celular.estado === 'activo', { what: 'the line activo' });

    // 400 direct sends at once; the process is killed as soon as the first answers come back.
    let answered = 0;
    const sends = Array.from({ length: SENDS }, (_, n) =>
      call('POST', '/api/mensaje_enviar_texto.php', key, { directo: 1, celular_id: id, destinatario: `5255${20_000_000 + n * 7}`, mensaje: `código ${n}` })
        .then((r) => {
          answered += 1;
          return r;
        })
        .catch(() => null),
    );
    await until(() => answered > 0, { what: 'a first answer', timeoutMs: 30_000, stepMs: 2 });
    await crash(s);
    const answers = (await Promise.all(sends)).filter((r): r is ApiResponse => r !== null && r.status === 200);

    // What the crash left: stranded direct sends (usually many; the assertions below hold either way).
    const stranded = (() => {
      const db = new Database(join(dataDir, 'pasarela.db'), { readonly: true, fileMustExist: true });
      try {
        return (db.prepare("SELECT COUNT(*) AS n FROM mensajes WHERE estado = 'pendiente' AND modo = 'directo'").get() as { n: number }).n;
      } finally {
        db.close();
      }
    })();

    s = await startServeChild(dataDir, ['--sim-delivery-ms', '50', '--sim-read-ms', '100']);
    // The receipts the network owed for the sends recorded at start-up arrive within a moment.
    let withoutReceipts = -1;
    await until(async () => (withoutReceipts = (await ok(api(s.url, 'GET', '/api/historial_listar.php?estado=enviado&por_pagina=1', { key }))).total) === 0, {
      what: () => `every receipt (${withoutReceipts} messages still without one)`,
      timeoutMs: 10_000,
    });
    await stop(s);

    const db = new Database(join(dataDir, 'pasarela.db'), { readonly: true, fileMustExist: true });
    try {
      const rows = db.prepare('SELECT msg_id, estado, gateway_msg_id, error, cobrado FROM mensajes').all() as Array<{
        msg_id: string;
        estado: string;
        gateway_msg_id: string | null;
        error: string | null;
        cobrado: number;
      }>;
      const sent = new Map(
        (db.prepare("SELECT key, value FROM kv WHERE ns = 'sim.sent'").all() as Array<{ key: string; value: string }>).map((r) => [
          r.key,
          (JSON.parse(r.value) as { gatewayMsgId: string }).gatewayMsgId,
        ]),
      );
      expect(
        rows.filter((r) => r.estado === 'pendiente'),
        `stranded at the crash: ${stranded}`,
      ).toEqual([]);
      for (const r of rows) {
        const gid = sent.get(r.msg_id);
        if (gid) {
          // The network took it: recorded under its id, and the receipts it owed were applied.
          expect(r.gateway_msg_id, r.msg_id).toBe(gid);
          expect(r.estado, r.msg_id).toBe('leido');
          expect(r.cobrado).toBe(1);
        } else {
          expect(r.estado, r.msg_id).toBe('error');
          expect(r.cobrado).toBe(0);
        }
      }
      // A 200 said "sent": every one of them is.
      for (const a of answers) expect(sent.get(a.body.msg_id as string), a.body.msg_id).toBe(a.body.gateway_msg_id);
      // Those never taken say why (the simulator can tell, so none is "unknown").
      for (const r of rows.filter((x) => x.estado === 'error')) expect(r.error, r.msg_id).toBe(REASON_NOT_SENT);
      // Every balance equals its ledger, and what is charged is exactly the messages sent.
      const ledger = db.prepare('SELECT COALESCE(SUM(monto), 0) AS total FROM movimientos_saldo WHERE cliente_id = ?').get(cli.cliente.id) as { total: number };
      const cliente = db.prepare('SELECT saldo_global FROM clientes WHERE id = ?').get(cli.cliente.id) as { saldo_global: number };
      const line = db.prepare('SELECT saldo_actual FROM celulares WHERE id = ?').get(id) as { saldo_actual: number };
      expect(cliente.saldo_global + line.saldo_actual).toBe(ledger.total);
      expect(cliente.saldo_global + line.saldo_actual).toBe(SALDO - sent.size);
      expect(rows.filter((r) => r.cobrado === 1).length).toBe(sent.size);
    } finally {
      db.close();
    }
  });
});
