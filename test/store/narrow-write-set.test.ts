import { rmSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { slotClaim } from '../../src/core/sending/caps.js';
import { MIGRATIONS } from '../../src/store/sqlite/migrations.js';
import { openSqliteStore, type SqliteStore } from '../../src/store/sqlite/store.js';
import { tempDir } from '../helpers/server.js';

/**
 * Migration 20 (D-74): a store written by the previous version, with queued
 * messages pending (one of them claimed when the process died), a direct send
 * in flight, sent messages and a parked receipt, opens on the narrow write set
 * and its queue, caps, receipts and recovery go on from where they were.
 */
const NARROW = MIGRATIONS.find((m) => /narrow write set/.test(m.name))!;
const NOW = 40 * 86_400_000;
const CAPS = { max_envios_por_minuto: 2, max_envios_por_hora: 100, max_envios_por_dia: null };

let dir: string;
let store: SqliteStore | null = null;

beforeEach(() => {
  dir = tempDir('pasarela-narrow-');
});
afterEach(() => {
  store?.db.close();
  store = null;
  rmSync(dir, { recursive: true, force: true });
});

/** A file at the version before migration 20, holding one line's messages in every state the queue cares about. */
function previousVersion(file: string): void {
  const db = new Database(file);
  db.exec('CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)');
  for (const m of MIGRATIONS.filter((m) => m.version < NARROW.version)) {
    db.exec(m.sql);
    db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, 0)').run(m.version, m.name);
  }
  db.prepare(
    `INSERT INTO clientes (id, nombre, email, estado, plan, saldo_global, key_hash, created_at, updated_at)
     VALUES (1, 'c', 'c@example.com', 'activo', 'medido', 0, 'x', 0, 0)`,
  ).run();
  db.prepare(
    `INSERT INTO celulares (id, cliente_id, numero, estado, saldo_actual, max_envios_por_minuto, max_envios_por_hora,
       hora_inicio_permitido, hora_fin_permitido, key_hash, created_at, updated_at, pendientes)
     VALUES (1, 1, '5215500000001', 'activo', 10, 2, 100, '00:00', '23:59', 'x', 0, 0, 3)`,
  ).run();
  const insert = db.prepare(
    `INSERT INTO mensajes (msg_id, cliente_id, celular_id, destinatario, tipo, modo, estado, texto, cobrado, cargo, payload,
       created_at, enviado_at, gateway_msg_id, lease_until, cupo_at, proximo_intento_at)
     VALUES (@id, 1, 1, '5215512345678', 'texto', @modo, @estado, 'hola', 1, 'celular', '{}', @created, @sent, @gid, @lease, @cupo, @created)`,
  );
  const row = { lease: null, cupo: null, sent: null, gid: null };
  // Sent a day and a half ago (counts in no window), and ten seconds ago (counts in the minute's).
  insert.run({
    ...row,
    id: 's-old',
    modo: 'cola',
    estado: 'leido',
    created: NOW - 130_000_000,
    sent: NOW - 129_600_000,
    cupo: NOW - 129_600_000,
    gid: 'GW-OLD',
  });
  insert.run({ ...row, id: 's1', modo: 'cola', estado: 'enviado', created: NOW - 20_000, sent: NOW - 10_000, cupo: NOW - 10_000, gid: 'GW-S1' });
  // The queue: q0 was claimed when the process stopped; q1 and q2 wait behind it.
  insert.run({ ...row, id: 'q0', modo: 'cola', estado: 'pendiente', created: NOW - 9_000, lease: NOW + 20_000, cupo: NOW + 20_000 });
  insert.run({ ...row, id: 'q1', modo: 'cola', estado: 'pendiente', created: NOW - 8_000 });
  insert.run({ ...row, id: 'q2', modo: 'cola', estado: 'pendiente', created: NOW - 7_000 });
  // A direct send in flight when the process stopped (its slot ended over a minute ago).
  insert.run({ ...row, id: 'd1', modo: 'directo', estado: 'pendiente', created: NOW - 100_000, cupo: NOW - 70_000 });
  // q0's delivery receipt arrived before its send was recorded.
  db.prepare("INSERT INTO acuses_pendientes (gateway_msg_id, estado, error, at, celular_id) VALUES ('GW-Q0', 'entregado', NULL, ?, 1)").run(NOW - 1_000);
  db.close();
}

it('a store of the previous version migrates and its queue, caps, receipts and recovery continue', async () => {
  const file = join(dir, 'pasarela.db');
  previousVersion(file);
  store = openSqliteStore(file);
  const s = store;
  expect(s.schemaVersion()).toBe(MIGRATIONS.at(-1)!.version);
  // The message row keeps its key and three history indexes, none on a column that changes.
  const indexes = s.db.prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'mensajes' ORDER BY name").all() as Array<{ name: string }>;
  expect(indexes.map((i) => i.name)).toEqual([
    'mensajes_cliente_celular_fecha',
    'mensajes_cliente_dest_fecha',
    'mensajes_cliente_fecha',
    'sqlite_autoindex_mensajes_1',
  ]);

  // Start-up: q0's claim is released, the direct send is found for recovery.
  expect(await s.releaseLeases()).toBe(1);
  expect((await s.strandedDirect(NOW, 10)).map((m) => m.msg_id)).toEqual(['d1']);
  expect((await s.queueHeads()).map((m) => m.msg_id)).toEqual(['q0']);

  // A receipt for a message sent before the migration finds it by its gateway id.
  const r = await s.receipt(1, 'GW-S1', 'entregado', NOW);
  expect(r !== null && r !== 'parked' && r.after.estado).toBe('entregado');

  // The minute's cap of 2 holds s1 (sent before) and q0's new claim; q1 must wait.
  const slot = () => slotClaim(CAPS, NOW, 30_000);
  expect(await s.claimQueued('q0', slot(), NOW)).toEqual({ ok: true });
  expect(await s.claimQueued('q1', slot(), NOW)).toMatchObject({ ok: false, reason: 'cap', which: 'per minute' });

  // q0 sent: the receipt parked before the migration applies, and the queue moves on in order.
  const sent = await s.markSent('q0', 'GW-Q0', NOW);
  expect(sent?.estado).toBe('entregado');
  expect((await s.queueHeads()).map((m) => m.msg_id)).toEqual(['q1']);
  expect(await s.queueDepth()).toEqual({ pending: 2, oldest_at: NOW - 8_000 });
  expect(s.db.prepare('SELECT pendientes FROM celulares WHERE id = 1').get()).toEqual({ pendientes: 2 });

  // The direct send resolved: nothing left to recover.
  await s.failMensaje('d1', 'outcome unknown', 'incierto', NOW);
  expect(await s.strandedDirect(NOW, 10)).toEqual([]);
  // Its slot given back (never sent), and the day-and-a-half-old one pruned by q0's claim: s1 and q0 remain.
  expect(s.db.prepare('SELECT msg_id FROM cupos ORDER BY msg_id').all()).toEqual([{ msg_id: 'q0' }, { msg_id: 's1' }]);

  // Migration 21 counted the rows by quarter hour and estado, and every change since kept them (D-74).
  const kept = s.db.prepare('SELECT cliente_id, cuarto, estado, n FROM conteos_cuartos WHERE n <> 0 ORDER BY 1, 2, 3').all();
  expect(kept).toEqual(
    s.db.prepare('SELECT cliente_id, created_at / 900000 AS cuarto, estado, COUNT(*) AS n FROM mensajes GROUP BY 1, 2, 3 ORDER BY 1, 2, 3').all(),
  );
  expect(kept.length).toBeGreaterThan(2);
  const day = { cliente_id: 1, page: 1, por_pagina: 10, desde: NOW - 86_400_000, hasta: NOW };
  expect((await s.listMensajes({ ...day, estado: 'error' })).total).toBe(1);
  expect((await s.listMensajes({ ...day, estado: 'leido' })).total).toBe(0);
});
