#!/usr/bin/env node
// Where the server's CPU goes under a send load: `serve` runs with --cpu-prof
// (sim gateway, 50 linked lines with the highest caps, production gaps) while
// 50 connections send texts for a while; then the profile is summed per
// function of pasarela (dist/), by self time and by inclusive time, leaving
// out the set-up (creating and linking the lines).
//
// `--pools N`: the lines in N pools (docs/pools.md), each send to a pool (`grupo`) with the client key;
// `--client`: each send names its line (`celular_id`) with the client key (the pools' baseline, figure 19's).
// `--big-store`: on a copy of the cached 1M-message store (figure 1c's and 3b's, bench/.cache; `node bench/run.mjs
// --only 1c` builds it), sending as its bench client on the first 50 of its lines (their queues wait behind a head).
// Each thread's CPU per message is printed before the profile (/proc/PID/task).
//
//   npm run build && node bench/profile.mjs [--directo] [--pools 10 | --client | --big-store] [--ms 10000] [--top 30] [--thread 1] [-- extra serve flags]
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Pool, request } from 'undici';
import { cacheKey, copyStore } from './big-store.mjs';
import { BIG_ROWS, CACHE } from './lib/options.mjs';
import { waitActive } from './lib/http.mjs';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const dash = args.indexOf('--');
const own = dash < 0 ? args : args.slice(0, dash);
const extra = dash < 0 ? [] : args.slice(dash + 1);
const opt = (name, def) => (own.includes(`--${name}`) ? Number(own[own.indexOf(`--${name}`) + 1]) : def);
const DIRECTO = own.includes('--directo');
const MS = opt('ms', 10_000);
const TOP = opt('top', 30);
const LINES = 50;
const POOLS = opt('pools', 0);
const BIG = own.includes('--big-store');
const CLIENT = POOLS > 0 || BIG || own.includes('--client');

const dataDir = mkdtempSync(join(tmpdir(), 'pasarela-profile-'));
const profDir = mkdtempSync(join(tmpdir(), 'pasarela-cpuprof-'));
process.on('exit', () => {
  rmSync(dataDir, { recursive: true, force: true });
  rmSync(profDir, { recursive: true, force: true });
});

// The cached store of figures 1c and 3b (1,000,000 messages, 100 bench lines).
const big = BIG ? join(CACHE, await cacheKey(ROOT, BIG_ROWS, 100)) : null;
if (big && !existsSync(join(big, 'meta.json'))) throw new Error(`no cached 1M store for this schema (${big}): run node bench/run.mjs --only 1c first`);
if (big) copyStore(big, dataDir);

const child = spawn(
  process.execPath,
  ['--cpu-prof', `--cpu-prof-dir=${profDir}`, join(ROOT, 'bin', 'pasarela'), 'serve', '--port', '0', '--data-dir', dataDir, '--log-level', 'warn', ...extra],
  {
    stdio: ['ignore', 'ignore', 'pipe'],
  },
);
const url = await new Promise((resolve, reject) => {
  let seen = '';
  child.stderr.on('data', (c) => {
    seen += c;
    const m = /listening on (http:\/\/\S+)/.exec(seen);
    if (m) resolve(m[1]);
  });
  child.once('exit', (code) => reject(new Error(`serve ended (${code}): ${seen}`)));
});
const admin = readFileSync(join(dataDir, 'admin-token'), 'utf8').trim();

async function call(method, path, key, json) {
  const r = await request(url + path, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(json ? { 'content-type': 'application/json' } : {}) },
    body: json ? JSON.stringify(json) : undefined,
  });
  const text = await r.body.text();
  if (r.statusCode >= 300) throw new Error(`${path}: ${r.statusCode} ${text}`);
  return JSON.parse(text);
}

const keys = [];
let lineIds = [];
let cli;
if (big) {
  const { bench } = JSON.parse(readFileSync(join(big, 'meta.json'), 'utf8'));
  cli = { api_key: bench.key };
  lineIds = bench.lines.slice(0, LINES);
  await waitActive({ url }, bench.key, bench.lines.length);
} else {
  cli = await call('POST', '/admin/clientes', admin, { nombre: 'Profile', email: 'p@example.com', saldo: 1e9 });
  for (let i = 0; i < LINES; i++) {
    const c = await call('POST', '/api/celular_crear.php', cli.api_key, { numero: `52155${10_000_000 + i * 13}` });
    await call('POST', `/api/celular_qr.php?id=${c.celular_id}`, cli.api_key);
    await call('POST', '/admin/sim/scan', admin, { celular_id: c.celular_id });
    await call('POST', `/api/celular_editar.php?id=${c.celular_id}`, cli.api_key, { max_envios_por_minuto: 1000, max_envios_por_hora: 50_000 });
    keys.push(c.api_key);
    lineIds.push(c.celular_id);
  }
}
for (let g = 0; g < POOLS; g++)
  await call('POST', '/api/grupo_crear.php', cli.api_key, { nombre: `p${g}`, celulares: lineIds.filter((_, i) => i % POOLS === g) });

const cpuMs = () => {
  const f = readFileSync(`/proc/${child.pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(f[11]) + Number(f[12])) * 10;
};
// Per thread: which one the load costs, the main (request) thread or another.
const taskCpu = () =>
  Object.fromEntries(
    readdirSync(`/proc/${child.pid}/task`).map((tid) => {
      const [comm, rest] = readFileSync(`/proc/${child.pid}/task/${tid}/stat`, 'utf8').split('(')[1].split(') ');
      const f = rest.split(' ');
      return [`${tid} ${comm}`, (Number(f[11]) + Number(f[12])) * 10];
    }),
  );
const pool = new Pool(url, { connections: 50 });
let n = 0;
let ok = 0;
const errors = {};
const cpu0 = cpuMs();
const tasks0 = taskCpu();
const end = Date.now() + MS;
await Promise.all(
  Array.from({ length: 50 }, async () => {
    while (Date.now() < end) {
      const i = n++;
      const r = await pool.request({
        path: '/api/mensaje_enviar_texto.php',
        method: 'POST',
        headers: { authorization: `Bearer ${CLIENT ? cli.api_key : keys[i % LINES]}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          // On the 1M store, recipients past those its history wrote to (as figure 1c).
          destinatario: `5255${10_000_000 + (BIG ? 700_000 : 0) + i}`,
          mensaje: `hola ${i}`,
          ...(POOLS ? { grupo: `p${i % POOLS}` } : CLIENT ? { celular_id: lineIds[i % LINES] } : {}),
          ...(DIRECTO ? { directo: 1 } : {}),
        }),
      });
      await r.body.text();
      if (r.statusCode === 200) ok++;
      else errors[r.statusCode] = (errors[r.statusCode] ?? 0) + 1;
    }
  }),
);
const cpu = cpuMs() - cpu0;
const tasks1 = taskCpu();
await pool.close();
child.kill('SIGTERM');
await new Promise((r) => child.once('exit', r));
console.log(
  `${DIRECTO ? 'directo' : 'queued'} sends: ${ok} in ${MS / 1000} s (${Math.round(ok / (MS / 1000))}/s), ${(cpu / ok).toFixed(3)} ms server CPU each, errors ${JSON.stringify(errors)}`,
);

for (const [t, ms] of Object.entries(tasks1)) {
  const d = ms - (tasks0[t] ?? 0);
  if (d >= 0.01 * cpu) console.log(`  thread ${t}: ${(d / ok).toFixed(3)} ms/msg`);
}

// ---- the profile, summed per function ----
// The main thread's (thread id 0) by default: the request thread; the background and checkpoint threads write their own
// (`--thread N` sums thread N's, e.g. 1 for the background thread: the queue, receipts and webhooks).
const THREAD = opt('thread', 0);
const profiles = readdirSync(profDir).filter((f) => f.endsWith('.cpuprofile'));
console.log(`threads profiled: ${profiles.map((f) => f.split('.').at(-3)).join(', ')}; summing thread ${THREAD}`);
const file = profiles.find((f) => f.includes(`.${child.pid}.${THREAD}.`)) ?? profiles[0];
const p = JSON.parse(readFileSync(join(profDir, file), 'utf8'));
const byId = new Map(p.nodes.map((x) => [x.id, x]));
const parent = new Map();
for (const x of p.nodes) for (const c of x.children ?? []) parent.set(c, x.id);
const name = (x) => {
  const u = x.callFrame.url;
  const where = u.includes('/dist/') && !u.includes('node_modules') ? u.slice(u.lastIndexOf('/dist/') + 1) : u.split('/').slice(-2).join('/');
  return `${x.callFrame.functionName || '(anonymous)'} ${where}:${x.callFrame.lineNumber + 1}`;
};
const time = new Map();
p.samples.forEach((id, i) => time.set(id, (time.get(id) ?? 0) + (p.timeDeltas[i] ?? 0)));
const SETUP = /routes\/celulares|routes\/admin|routes\/sim|startServer|buildApp|cjs\/loader|esm\//;
const self = new Map();
const incl = new Map();
let total = 0;
for (const [id, t] of time) {
  const stack = [];
  for (let cur = id; cur !== undefined; cur = parent.get(cur)) stack.push(name(byId.get(cur)));
  if (stack.some((s) => SETUP.test(s)) || stack[0].startsWith('(idle)')) continue;
  total += t;
  self.set(stack[0], (self.get(stack[0]) ?? 0) + t);
  for (const s of new Set(stack)) incl.set(s, (incl.get(s) ?? 0) + t);
}
const show = (title, m, filter) => {
  console.log(`\n${title}`);
  for (const [k, t] of [...m]
    .filter(([k]) => filter(k))
    .sort((a, b) => b[1] - a[1])
    .slice(0, TOP))
    console.log(`${((t / total) * 100).toFixed(1).padStart(5)}%  ${k}`);
};
show('self time (all code)', self, () => true);
show('inclusive time (pasarela code)', incl, (k) => / dist\//.test(k));
