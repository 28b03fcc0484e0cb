// Figure 19: accepting to a pool of lines (`grupo`, docs/pools.md) against accepting to one named line,
// figure 1's load (queued texts, 50 connections, every recipient different) on one server, same lines:
// the 50 lines in 10 pools of 5 (`--pool-size`), connection w sending through pool w % 10. Every recipient is new, so
// every pick reads its pool's 5 lines' room (the worst case; a known recipient reads its one line). The two loads
// alternate on the one server, line-pool-pool-line (ROUNDS times): each later load finds a bigger store, so a
// fixed order would charge that growth to whichever ran second.
import { CONNECTIONS, DURATION_MS, POOL_SIZE, WARMUP_MS } from '../lib/options.mjs';
import { log, startServe } from '../lib/proc.mjs';
import { call, setupClient, textBody } from '../lib/http.mjs';
import { load } from '../lib/load.mjs';
import { cpuPer, f0, lat, ratio, results } from '../lib/results.mjs';

const ROUNDS = 2;

/** The loads' sum: accepted/s over their windows, CPU per message, latencies of the middle one (a sample). */
function summed(runs) {
  const ok = runs.reduce((a, r) => a + r.ok, 0);
  const cpu = runs.reduce((a, r) => a + r.server_cpu_ms, 0);
  const mid = runs[Math.floor(runs.length / 2)];
  return {
    ...mid,
    per_s: runs.reduce((a, r) => a + r.per_s, 0) / runs.length,
    errors: runs.reduce((a, r) => a + r.errors, 0),
    server_cpu_ms_per_ok: cpu / ok,
    rounds: runs.map((r) => ({ per_s: r.per_s, server_cpu_ms_per_ok: r.server_cpu_ms_per_ok, errors: r.errors })),
  };
}

export async function figurePoolAccept() {
  const name = '19. pool accept / one-line accept, accepted/s';
  const s = await startServe([]);
  const path = '/api/mensaje_enviar_texto.php';
  // `--pool-size 50`: one pool of every line.
  const pools = Math.max(1, Math.round(50 / POOL_SIZE));
  let line;
  let pool;
  try {
    const c = await setupClient(s, 50);
    for (let g = 0; g < pools; g++)
      await call(s.url, 'POST', '/api/grupo_crear.php', c.key, { nombre: `bench${g}`, celulares: c.lines.filter((_, i) => i % pools === g) });
    const run = (makeBody) => load({ origin: s.url, pid: s.pid, key: c.key, path, makeBody });
    const lineRuns = [];
    const poolRuns = [];
    let n = 0;
    const one = async (mode) => {
      const from = 2_000_000 * (n += 1);
      log(`  ${mode === 'line' ? 'one line per request (celular_id)' : 'through the pool (grupo)'}...`);
      if (mode === 'line') return lineRuns.push(await run((w, i) => textBody(c.lines, w, from + i, false)));
      poolRuns.push(
        await run((w, i) => {
          const { celular_id: _line, ...body } = textBody(c.lines, w, from + i, false);
          return { ...body, grupo: `bench${w % pools}` };
        }),
      );
    };
    for (let round = 0; round < ROUNDS; round++) for (const mode of round % 2 ? ['pool', 'line'] : ['line', 'pool']) await one(mode);
    line = summed(lineRuns);
    pool = summed(poolRuns);
  } finally {
    await s.stop();
  }
  const r = ratio(pool.per_s, line.per_s);
  results.push({
    figure: name,
    measured: `${f0(pool.per_s)}/s through the pool (${lat(pool)}, ${pool.errors} errors)`,
    baseline: `${f0(line.per_s)}/s naming the line (${lat(line)}, ${line.errors} errors)`,
    ratio: r,
    target: '>= 0.90',
    met: r >= 0.9 && pool.errors === 0,
    cpu: cpuPer(pool.server_cpu_ms_per_ok),
    detail: {
      lines: 50,
      pools: `${pools} of ${50 / pools} lines`,
      rounds: ROUNDS,
      connections: CONNECTIONS,
      warmup_ms: WARMUP_MS,
      duration_ms: DURATION_MS,
      pool,
      line,
    },
  });
}
