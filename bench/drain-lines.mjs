#!/usr/bin/env node
// The queue worker's cost per sent message as the lines grow: a server (sim, production gaps of 1-5 s, default
// caps raised) with N linked lines gets 30 queued texts on each, then the background thread's CPU is read over a
// window of the drain, no accepts meanwhile. At production pacing every line sends about once every 3 s, so the
// sends a second grow with N; the CPU per sent message should not (D-143: a look reads the heads of the lines it
// could send, not every line's).
//
//   npm run build && node bench/drain-lines.mjs [LINES=50] [WINDOW_MS=15000]
import Database from 'better-sqlite3';
import { join } from 'node:path';
import { sleep, startServeThreads, threadCpuMs } from './lib/proc.mjs';
import { setupClient, textBody } from './lib/http.mjs';
import { pushN } from './lib/load.mjs';

const LINES = Number(process.argv[2] ?? 50);
const WINDOW_MS = Number(process.argv[3] ?? 15_000);
const PER_LINE = 30;

const s = await startServeThreads([]);
try {
  const c = await setupClient(s, LINES);
  const r = await pushN({
    origin: s.url,
    path: '/api/mensaje_enviar_texto.php',
    key: c.key,
    n: LINES * PER_LINE,
    makeBody: (i) => textBody(c.lines, i, 800_000 + i, false),
  });
  // The accepts' own work settles first.
  await sleep(3000);
  const tid = s.backgroundTid();
  const db = new Database(join(s.dataDir, 'pasarela.db'), { readonly: true, fileMustExist: true });
  const ended = db.prepare("SELECT COUNT(*) AS n FROM mensajes WHERE estado != 'pendiente'").pluck();
  const n0 = ended.get();
  const cpu0 = threadCpuMs(s.pid, tid);
  await sleep(WINDOW_MS);
  const sent = ended.get() - n0;
  const cpu = threadCpuMs(s.pid, tid) - cpu0;
  db.close();
  const secs = WINDOW_MS / 1000;
  console.log(
    `${LINES} lines: ${r.ok} accepted; ${sent} sent in ${secs} s (${(sent / secs).toFixed(1)}/s); background thread ${(cpu / secs).toFixed(1)} ms/s, ${(cpu / Math.max(1, sent)).toFixed(3)} ms per sent message`,
  );
} finally {
  await s.stop();
}
