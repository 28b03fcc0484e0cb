#!/usr/bin/env node
// What a health pass's statements cost the node warm and right after a full GC
// (issue 39, figure 18): on a fresh PostgreSQL schema of 1,000 lines, the
// page with its leases, the simulator's 1,000 sessions and the status write,
// timed by process.cpuUsage (every thread: TurboFan compiles on helper
// threads) after each kind of pause. An idle node meets a full GC between
// most passes; here one is forced (`gc()`), so its effect is read in seconds.
// Run with --trace-opt or --trace-deopt after `--` to see the compiles again
// and the optimized code marked for deoptimization ("weak objects").
// The PostgreSQL adapter keeps pg's last statement and the last protocol
// message of each kind alive (src/store/postgres/db.ts) for that reason: the
// objects whose shapes the optimized code checks outlive a GC, and so does the
// code. `--sqlite`: the same pass on a SQLite file in a temporary folder.
//
//   npm run build && node bench/cold-pass.mjs [--passes 5] [--sqlite] [-- extra V8 flags]
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { postgresSchema } from './lib/postgres.mjs';

const args = process.argv.slice(2);
const dash = args.indexOf('--');
const own = dash < 0 ? args : args.slice(0, dash);
const PASSES = own.includes('--passes') ? Number(own[own.indexOf('--passes') + 1]) : 5;

if (typeof globalThis.gc !== 'function') {
  // Itself again, with the flag that exposes gc() and any V8 flags given.
  const r = spawnSync(process.execPath, ['--expose-gc', ...(dash < 0 ? [] : args.slice(dash + 1)), fileURLToPath(import.meta.url), ...own], {
    stdio: 'inherit',
  });
  process.exit(r.status ?? 1);
}

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const SQLITE = own.includes('--sqlite');
const dir = SQLITE ? mkdtempSync(join(tmpdir(), 'cold-pass-')) : null;
const pg = SQLITE ? null : await postgresSchema();
const store = SQLITE
  ? (await import(join(ROOT, 'dist', 'store', 'sqlite', 'store.js'))).openSqliteStore(join(dir, 'p.db'))
  : await (await import(join(ROOT, 'dist', 'store', 'postgres', 'store.js'))).openPgStore(pg.store, { max: 1 });
try {
  const cliente = await store.createCliente(
    { nombre: 'A', email: 'a@x.mx', plan: 'medido', estado: 'activo', max_celulares: null, saldo_global: 0, key_hash: 'h' },
    1,
  );
  const line = (i) => ({
    cliente_id: cliente.id,
    numero: `52155${10_000_000 + i}`,
    nombre_interno: null,
    estado: 'desconectado',
    max_envios_por_minuto: 12,
    max_envios_por_hora: 500,
    max_envios_por_dia: null,
    hora_inicio_permitido: '00:00',
    hora_fin_permitido: '23:59',
    key_hash: 'k'.repeat(64),
    gateway_token_hash: `${i}`.padEnd(64, 'g'),
  });
  for (let i = 0; i < 1000; i++) await store.insertCelular(line(i), 1);
  const linked = "UPDATE celulares SET gateway_instancia = 'pasarela-' || id, last_status = 'connected', estado = 'activo', vinculado = 1";
  if (SQLITE) store.db.exec(linked);
  else await store.db.query(linked);
  const session = { status: 'connected', seed: 'abcdef0123456789', numero: '5215512345678', qrSince: 0 };
  const lines = (await store.leaseTakeLines('n', 'salud:', 0, 1000, 0, 1)).taken;
  await store.kvSetMany(lines.map((l) => ({ ns: 'sim.sessions', key: l.gateway_instancia, value: session, expiraAt: null })));
  await store.nodeBeat({ id: 'n', label: 'n', staleMs: 60_000, marginMs: 10_000, engineUrl: null }, 1);
  let at = 2;
  const pass = async () => {
    const page = await store.leaseTakeLines('n', 'salud:', 0, 1000, 0, 1);
    const found = await store.kvGetMany(page.taken.map((l) => ({ ns: 'sim.sessions', key: l.gateway_instancia })));
    at += 1;
    await store.recordStatusChecks(
      page.taken.map((l, i) => ({ id: l.id, status: found[i]?.status ?? 'unknown', estado: l.estado, vinculado: 1, at })),
      at,
    );
  };
  const timed = async () => {
    const t = process.cpuUsage();
    await pass();
    const d = process.cpuUsage(t);
    return (d.user + d.system) / 1000;
  };
  for (let i = 0; i < 20; i++) await pass();
  const row = async (name, before) => {
    const ms = [];
    for (let i = 0; i < PASSES; i++) {
      await before();
      ms.push(await timed());
    }
    const sorted = [...ms].sort((a, b) => a - b);
    console.log(
      `${SQLITE ? '[sqlite] ' : ''}${name.padEnd(28)} median ${sorted[Math.floor(sorted.length / 2)].toFixed(1)} ms of node CPU a pass (${ms.map((x) => x.toFixed(1)).join(', ')})`,
    );
  };
  await row('warm', async () => {});
  await row('after 2 s idle', () => sleep(2000));
  await row('after a scavenge', async () => globalThis.gc({ type: 'minor' }));
  await row('after a full GC and 500 ms', async () => {
    globalThis.gc();
    await sleep(500);
  });
} finally {
  await store.close();
  if (pg) await pg.drop();
  if (dir) rmSync(dir, { recursive: true, force: true });
}
