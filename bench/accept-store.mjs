#!/usr/bin/env node
// SQLite's acceptAll alone (no HTTP), CPU per accept: 50 lines of one metered
// client, text sends in batches of 21 (figure 1's group commit), 7 rounds of
// 300 batches. `--writer` also runs the same batches posted to a worker thread
// on its own connection and answered (the writer thread of issue 39, D-146).
// Other built checkouts given are measured in the same process, interleaved.
//
//   npm run build && node bench/accept-store.mjs [--writer] [OTHER_ROOT ...]
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const BATCH = 21;
const BATCHES = 300;
const LINES = 50;
const ROUNDS = 7;

if (!isMainThread) {
  const { openSqliteStore } = await import(join(workerData.root, 'dist/store/sqlite/store.js'));
  const { acceptAll } = await import(join(workerData.root, 'dist/store/sqlite/accept.js'));
  const store = openSqliteStore(workerData.file);
  parentPort.on('message', (items) => parentPort.postMessage(acceptAll(store.db, items)));
  parentPort.postMessage('ready');
} else {
  const own = process.argv.slice(2);
  const writer = own.includes('--writer');
  const roots = [ROOT, ...own.filter((a) => a !== '--writer')];
  const dir = mkdtempSync(join(tmpdir(), 'pasarela-accept-store-'));
  process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
  const subjects = [];
  for (const [i, root] of roots.entries()) {
    const { openSqliteStore } = await import(join(root, 'dist/store/sqlite/store.js'));
    const { acceptAll } = await import(join(root, 'dist/store/sqlite/accept.js'));
    const file = join(dir, `${i}.db`);
    const store = openSqliteStore(file);
    const cli = await store.createCliente(
      { nombre: 'Bench', email: 'b@example.com', plan: 'medido', estado: 'activo', max_celulares: null, saldo_global: 1e9, key_hash: 'h' },
      1000,
    );
    const lines = [];
    for (let j = 0; j < LINES; j++) {
      const r = await store.insertCelular(
        {
          cliente_id: cli.id,
          numero: `5255${10_000_000 + j}`,
          nombre_interno: null,
          estado: 'activo',
          max_envios_por_minuto: 1000,
          max_envios_por_hora: 50_000,
          max_envios_por_dia: null,
          hora_inicio_permitido: '00:00',
          hora_fin_permitido: '23:59',
          key_hash: 'k'.repeat(64),
          gateway_token_hash: String(j).padEnd(64, 'g'),
        },
        1000,
      );
      lines.push(r.celular.id);
    }
    let n = 0;
    const batch = () =>
      Array.from({ length: BATCH }, () => {
        n += 1;
        const now = Date.now();
        const texto = `Hola, su pedido ${n} está en camino. Gracias por su compra.`;
        return {
          m: {
            msg_id: `m-${n}`,
            cliente_id: cli.id,
            celular_id: lines[n % LINES],
            destinatario: `5255${20_000_000 + n}`,
            tipo: 'texto',
            modo: 'cola',
            texto,
            media: null,
            payload: { texto },
            expira_at: now + 86_400_000,
          },
          opts: { charge: true, maxPending: null },
          now,
        };
      });
    subjects.push({
      name: root,
      run: async () => {
        for (let b = 0; b < BATCHES; b++) acceptAll(store.db, batch());
      },
      us: [],
    });
    if (writer) {
      const w = new Worker(new URL(import.meta.url), { workerData: { root, file } });
      await new Promise((r) => w.once('message', r));
      w.unref();
      const post = (items) =>
        new Promise((r) => {
          w.once('message', r);
          w.postMessage(items);
        });
      subjects.push({
        name: `${root} (writer thread)`,
        run: async () => {
          for (let b = 0; b < BATCHES; b++) await post(batch());
        },
        us: [],
      });
    }
  }
  for (let r = 0; r < ROUNDS; r++)
    for (const s of subjects) {
      const t = process.cpuUsage();
      await s.run();
      const u = process.cpuUsage(t);
      s.us.push((u.user + u.system) / (BATCH * BATCHES));
    }
  for (const s of subjects) {
    const sorted = [...s.us].sort((a, b) => a - b);
    console.log(`${s.name}: ${sorted[ROUNDS >> 1].toFixed(1)} µs of process CPU per accept (median of ${ROUNDS}; ${s.us.map((x) => x.toFixed(1)).join(' ')})`);
  }
  process.exit(0);
}
