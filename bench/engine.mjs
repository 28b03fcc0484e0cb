// Figure 16: the engine (`serve --gateway baileys`) against the fake of the
// network's server (test/fakewa, compiled to .fakewa/ and run as a child
// process with its control API). Three rows: memory per linked line, direct
// text sends per second beside the simulator's, and the time the linked
// lines take to reconnect after a restart of serve. Imported by run.mjs,
// which passes its helpers (child processes, HTTP, the load generator).
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'undici';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Compiles the fake unless .fakewa/ is newer than its sources (`npm run fakewa` does the same, then runs it). */
export function buildFake(root, log) {
  const out = join(root, '.fakewa', 'run.js');
  const src = join(root, 'test', 'fakewa', 'network.ts');
  if (existsSync(out) && statSync(out).mtimeMs >= statSync(src).mtimeMs) return;
  log('  compiling test/fakewa to .fakewa/...');
  const r = spawnSync(process.execPath, [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(root, 'test', 'fakewa', 'tsconfig.build.json')], {
    encoding: 'utf8',
  });
  if (r.status !== 0) throw new Error(`compiling the fake failed: ${(r.stdout + r.stderr).slice(0, 500)}`);
}

/** Starts the fake (its own process); resolves with its WebSocket URL, preload file, control API and pid. */
export function startFake(root, children) {
  const child = spawn(process.execPath, [join(root, '.fakewa', 'run.js')], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/tmp', FAKEWA_CONTROL_PORT: '0' },
  });
  children.add(child);
  child.once('exit', () => children.delete(child));
  let seen = '';
  let tail = '';
  return new Promise((resolve, reject) => {
    const onData = (d) => {
      seen += String(d);
      const ws = /fakewa wsUrl\s+(\S+)/.exec(seen);
      const pre = /fakewa preload\s+(\S+)/.exec(seen);
      const ctl = /fakewa control API (http:\/\/\S+?)\/?\s/.exec(seen);
      if (ws && pre && ctl) {
        // Its log goes on (a line per connection): drained, the tail kept.
        child.stdout.off('data', onData);
        child.stdout.on('data', (x) => (tail = (tail + String(x)).slice(-2000)));
        resolve({
          wsUrl: ws[1],
          preload: pre[1],
          control: ctl[1],
          pid: child.pid,
          tail: () => tail,
          stop: () =>
            new Promise((res) => {
              if (child.exitCode !== null) return res();
              child.once('exit', () => res());
              child.kill('SIGTERM');
              setTimeout(() => child.kill('SIGKILL'), 10_000).unref();
            }),
        });
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', (d) => (tail = (tail + String(d)).slice(-2000)));
    child.once('exit', (code) => reject(new Error(`the fake ended before listening (${code}): ${seen.slice(-500)}${tail}`)));
  });
}

export async function control(fake, method, path, json) {
  const res = await request(fake.control + path, {
    method,
    headers: json === undefined ? {} : { 'content-type': 'application/json' },
    body: json === undefined ? undefined : JSON.stringify(json),
  });
  const text = await res.body.text();
  if (res.statusCode >= 300) throw new Error(`fake ${method} ${path}: ${res.statusCode} ${text.slice(0, 300)}`);
  return JSON.parse(text);
}

/** RSS after the process has settled: the lowest of a few readings a second apart (timers and GC make it swing). */
async function settledRss(pid, memOf, n = 5) {
  let low = Infinity;
  for (let i = 0; i < n; i++) {
    await sleep(1000);
    low = Math.min(low, memOf(pid).rss);
  }
  return low;
}

const CLK_TCK = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout?.trim()) || 100;
/** CPU time (user + system) a process has used so far, ms. */
export function cpuMs(pid) {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return ((Number(f[11]) + Number(f[12])) * 1000) / CLK_TCK;
}

/**
 * Waits until serve is idle: three seconds in a row under 5% of a core. A
 * line just linked generates and uploads its 812 pre-keys (Baileys'
 * INITIAL_PREKEY_COUNT), each sealed and stored: seconds of CPU for 100
 * lines, which a send load started at once would be charged for.
 */
async function settledCpu(pid, timeoutMs = 300_000) {
  const end = Date.now() + timeoutMs;
  let quiet = 0;
  let last = cpuMs(pid);
  while (quiet < 3) {
    if (Date.now() > end) throw new Error(`serve still busy after ${timeoutMs / 1000} s`);
    await sleep(1000);
    const now = cpuMs(pid);
    quiet = now - last < 50 ? quiet + 1 : 0;
    last = now;
  }
}

/** Each line's live status (`celular_status.php`), polled until all are connected; ms from `t0` per line. */
async function waitConnected(s, key, ids, t0, call, timeoutMs) {
  const at = new Map();
  const end = Date.now() + timeoutMs;
  while (at.size < ids.length) {
    if (Date.now() > end) throw new Error(`${ids.length - at.size} of ${ids.length} lines not connected after ${timeoutMs / 1000} s`);
    const left = ids.filter((id) => !at.has(id));
    for (let i = 0; i < left.length; i += 10) {
      await Promise.all(
        left.slice(i, i + 10).map(async (id) => {
          const st = await call(s.url, 'GET', `/api/celular_status.php?id=${id}`, key).catch(() => null);
          if (st?.status === 'connected' && !at.has(id)) at.set(id, performance.now() - t0);
        }),
      );
    }
    if (at.size < ids.length) await sleep(100);
  }
  return ids.map((id) => at.get(id));
}

export async function figureEngine(h) {
  const { root, lines: N, contacts: C, log, results, startServe, stopQuietly, setupClient, call, load, memOf, percentiles, children } = h;
  const { f0, f2, cpuPer, ratio, lat } = h.fmt;
  const label = N === 100 ? '100 lines' : `${N} lines (not 100)`;
  buildFake(root, log);
  const fake = await startFake(root, children);
  const contacts = Array.from({ length: C }, (_, i) => `5255${String(30_000_000 + i)}`);
  // Asking a contact's received list registers it on the network (with its keys).
  for (const n of contacts) await control(fake, 'GET', `/contacts/${n}/received`);
  const engineFlags = ['--gateway', 'baileys', '--baileys-ws-url', fake.wsUrl];
  const nodeArgs = ['--import', fake.preload];
  let s = await startServe(engineFlags, undefined, {}, nodeArgs);
  const dataDir = s.dataDir;
  let ids;
  let key;
  let mem;
  let engineLoad;
  let simLoad;
  let linkMs;
  let settleMs;
  let linkCpuPerLine;
  let restart;
  let numeros;
  try {
    const emptyRss = await settledRss(s.pid, memOf);
    const cli = await call(s.url, 'POST', '/admin/clientes', s.admin, { nombre: 'Bench engine', email: 'engine@example.com', saldo: 1_000_000_000 });
    key = cli.api_key;
    const tl = performance.now();
    log(`  linking ${N} lines through the fake's control API...`);
    let seq = 0;
    ids = [];
    numeros = Array.from({ length: N }, (_, i) => `5255${String(40_000_000 + i)}`);
    await Promise.all(
      Array.from({ length: 4 }, async () => {
        while (seq < N) {
          const numero = numeros[seq++];
          const c = await call(s.url, 'POST', '/api/celular_crear.php', key, { numero });
          const qr = await call(s.url, 'POST', `/api/celular_qr.php?id=${c.celular_id}`, key, {});
          await control(fake, 'POST', '/scan', { qr: qr.qr, numero });
          await call(s.url, 'POST', `/api/celular_editar.php?id=${c.celular_id}`, key, {
            max_envios_por_minuto: 1000,
            max_envios_por_hora: 50_000,
            max_envios_por_dia: null,
          });
          ids.push(c.celular_id);
        }
      }),
    );
    const cpu0 = cpuMs(s.pid);
    await waitConnected(s, key, ids, tl, call, 300_000);
    linkMs = performance.now() - tl;
    log(`  ${N} lines linked in ${(linkMs / 1000).toFixed(1)} s; waiting for serve to settle (pre-keys)...`);
    await settledCpu(s.pid);
    settleMs = performance.now() - tl;
    linkCpuPerLine = (cpuMs(s.pid) - cpu0) / N;
    log(`  settled at ${(settleMs / 1000).toFixed(1)} s, ${linkCpuPerLine.toFixed(0)} ms of CPU a line linked`);
    const linkedRss = await settledRss(s.pid, memOf);
    mem = { empty_rss: emptyRss, linked_rss: linkedRss, per_line: (linkedRss - emptyRss) / N };

    const body = (w, n) => ({
      celular_id: ids[w % ids.length],
      destinatario: contacts[w % contacts.length],
      mensaje: `Hola, su pedido ${n} está en camino. Gracias por su compra.`,
      directo: 1,
    });
    log('  direct texts through the engine...');
    engineLoad = await load({ origin: s.url, pid: s.pid, key, path: '/api/mensaje_enviar_texto.php', makeBody: body });

    log('  restart of serve: every line back from the stored state...');
    const stopErr = await stopQuietly(s);
    if (stopErr) throw new Error(`serve did not stop cleanly: ${stopErr}`);
    const t0 = performance.now();
    const wall0 = Date.now();
    s = await startServe(engineFlags, dataDir, {}, nodeArgs);
    const listenMs = performance.now() - t0;
    const times = await waitConnected(s, key, ids, t0, call, 120_000);
    // When the fake saw each line's socket open again (its clock is this machine's): the network side of the wait.
    const opened = [];
    for (const numero of numeros) {
      const c = (await control(fake, 'GET', `/lines/${numero}`)).connections.filter((x) => x.openedAt >= wall0);
      if (c.length > 0) opened.push(c[0].openedAt - wall0);
    }
    const o = percentiles(opened);
    restart = {
      listen_ms: listenMs,
      ...percentiles(times),
      all_ms: Math.max(...times),
      socket_opened_ms: { n: opened.length, p50: o.p50, p95: o.p95, max: o.max },
    };
  } finally {
    await stopQuietly(s);
    await fake.stop();
  }

  // The simulator, same line count, same connections, same bodies (it takes any number).
  log('  the same texts through sim...');
  const sim = await startServe([]);
  try {
    const c = await setupClient(sim, N);
    simLoad = await load({
      origin: sim.url,
      pid: sim.pid,
      key: c.key,
      path: '/api/mensaje_enviar_texto.php',
      makeBody: (w, n) => ({
        celular_id: c.lines[w % c.lines.length],
        destinatario: contacts[w % contacts.length],
        mensaje: `Hola, su pedido ${n} está en camino. Gracias por su compra.`,
        directo: 1,
      }),
    });
  } finally {
    await sim.stop();
  }

  const MBf = (b) => (b / (1024 * 1024)).toFixed(2);
  results.push({
    figure: `16a. engine memory per linked line, ${label}`,
    measured: `${MBf(mem.per_line)} MB/line (RSS ${MBf(mem.empty_rss)} MB with none, ${MBf(mem.linked_rss)} MB with ${N}; linked in ${f0(linkMs / 1000)} s, idle at ${f0(settleMs / 1000)} s, ${f0(linkCpuPerLine)} ms CPU a link)`,
    baseline: `serve --gateway baileys with no line (${MBf(mem.empty_rss)} MB)`,
    ratio: NaN,
    target: 'reported',
    met: null,
    cpu: '-',
    detail: { lines: N, ...mem, link_ms: linkMs, settle_ms: settleMs, link_cpu_ms_per_line: linkCpuPerLine },
  });
  const r = ratio(engineLoad.per_s, simLoad.per_s);
  results.push({
    figure: `16b. engine direct texts/s vs sim, ${label}`,
    measured: `${f0(engineLoad.per_s)}/s (${lat(engineLoad)}, ${engineLoad.errors} errors)`,
    baseline: `${f0(simLoad.per_s)}/s through sim (${lat(simLoad)}, ${cpuPer(simLoad.server_cpu_ms_per_ok)})`,
    ratio: r,
    target: 'reported',
    met: null,
    cpu: cpuPer(engineLoad.server_cpu_ms_per_ok),
    detail: {
      lines: N,
      contacts: C,
      engine: engineLoad,
      sim: simLoad,
      cpu_per_msg_ratio: ratio(engineLoad.server_cpu_ms_per_ok, simLoad.server_cpu_ms_per_ok),
    },
  });
  results.push({
    figure: `16c. engine reconnect after a restart of serve, ${label}`,
    measured: `p50 ${f2(restart.p50 / 1000)} s, p95 ${f2(restart.p95 / 1000)} s, all ${f2(restart.all_ms / 1000)} s (listening at ${f2(restart.listen_ms / 1000)} s; sockets opened p50 ${f2(restart.socket_opened_ms.p50 / 1000)} s)`,
    baseline: '-',
    ratio: NaN,
    target: 'reported',
    met: null,
    cpu: '-',
    detail: { lines: N, ...restart },
  });
}
