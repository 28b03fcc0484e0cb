// Figure 13: `send bulk` against a loop of `send text`, both through the CLI
// binary.
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BIN, BULK_LOOP, BULK_ROWS } from '../lib/options.mjs';
import { children, cpuMs, log, startServe, temps } from '../lib/proc.mjs';
import { destinatario, setupClient } from '../lib/http.mjs';
import { cpuPer, f0, f2, ratio, results } from '../lib/results.mjs';

/** Runs the CLI binary; resolves with its exit code and how long it took. */
function runCli(argv, env) {
  const t0 = performance.now();
  const child = spawn(process.execPath, [BIN, ...argv], {
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: tmpdir(), LANG: 'C.UTF-8', ...env },
  });
  children.add(child);
  let err = '';
  child.stderr.on('data', (d) => (err = (err + String(d)).slice(-2000)));
  return new Promise((resolve) =>
    child.once('exit', (code) => {
      children.delete(child);
      resolve({ code, ms: performance.now() - t0, stderr: err });
    }),
  );
}

/**
 * `send bulk` of BULK_ROWS queued texts (default concurrency) against the
 * rows/s of what a script did before it: a loop of `pasarela send text`, one
 * process per row (BULK_LOOP rows). Both against the same server and line;
 * wall time of the CLI, from its start to its exit.
 */
export async function figureBulk() {
  const name = '13. send bulk, rows/s';
  const s = await startServe(['--queue-gap-ms', '0-0']);
  let loop;
  let bulk;
  try {
    const c = await setupClient(s, 1);
    const env = { PASARELA_URL: s.url, PASARELA_KEY: c.key, PASARELA_CONFIG_DIR: mkdtempSync(join(tmpdir(), 'pasarela-bench-cli-')) };
    temps.push(env.PASARELA_CONFIG_DIR);
    const celular = String(c.lines[0]);
    log(`  a loop of ${BULK_LOOP} \`send text\`...`);
    const t0 = performance.now();
    for (let i = 0; i < BULK_LOOP; i += 1) {
      const r = await runCli(['send', 'text', destinatario(2_000_000 + i), `Hola Cliente ${i}, su pedido está en camino.`, '--celular', celular], env);
      if (r.code !== 0) throw new Error(`send text exited ${r.code}: ${r.stderr}`);
    }
    const loopMs = performance.now() - t0;
    loop = { rows: BULK_LOOP, ms: loopMs, per_s: (BULK_LOOP * 1000) / loopMs };
    const dir = mkdtempSync(join(tmpdir(), 'pasarela-bench-bulk-'));
    temps.push(dir);
    const file = join(dir, 'campania.csv');
    const lines = ['destinatario,nombre'];
    for (let i = 0; i < BULK_ROWS; i += 1) lines.push(`${destinatario(3_000_000 + i)},Cliente ${i}`);
    writeFileSync(file, `${lines.join('\n')}\n`);
    log(`  send bulk of ${BULK_ROWS} rows...`);
    const cpu0 = cpuMs(s.pid);
    const r = await runCli(['send', 'bulk', file, '--text', 'Hola {nombre}, su pedido está en camino.', '--celular', celular], env);
    if (r.code !== 0) throw new Error(`send bulk exited ${r.code}: ${r.stderr}`);
    bulk = { rows: BULK_ROWS, ms: r.ms, per_s: (BULK_ROWS * 1000) / r.ms, server_cpu_ms: cpuMs(s.pid) - cpu0, summary: r.stderr.trim() };
  } finally {
    await s.stop();
  }
  const q = ratio(bulk.per_s, loop.per_s);
  results.push({
    figure: name,
    measured: `${f0(bulk.per_s)} rows/s (${BULK_ROWS} rows in ${(bulk.ms / 1000).toFixed(1)} s, concurrency 4)`,
    baseline: `${f2(loop.per_s)} rows/s, a loop of \`send text\` (${BULK_LOOP} in ${(loop.ms / 1000).toFixed(1)} s)`,
    ratio: q,
    target: '>= 10',
    met: q >= 10,
    cpu: cpuPer(bulk.server_cpu_ms / BULK_ROWS, 'row'),
    detail: { bulk, loop },
  });
}
