#!/usr/bin/env node
// Two builds under figure 1's load at the same time, for an A/B on a shared
// machine: run one after the other, figure 1 swung 2-7x with other work's
// load (bench/README.md, D-141); served at once, both meet the same load.
//
//   node bench/pair-accept.mjs OTHER_ROOT [ROUNDS]
//
// OTHER_ROOT is another built checkout (a `git worktree add --detach` of main,
// `npm run build` in it). Each build's `serve` (its own bin/pasarela, a fresh
// data directory, production pacing, 50 lines) takes 50 connections of its
// own; per round 2 s of warm-up and an 8 s window; prints each one's
// accepts/s, process and request thread CPU per accept, and this build's
// over the other's.
import { join } from 'node:path';
import { ROOT } from './lib/options.mjs';
import { startServe } from './lib/proc.mjs';
import { setupClient, textBody } from './lib/http.mjs';
import { load } from './lib/load.mjs';

const [otherRoot, roundsArg] = process.argv.slice(2);
if (!otherRoot) {
  console.error('usage: node bench/pair-accept.mjs OTHER_ROOT [ROUNDS]');
  process.exit(2);
}
const other = await import(join(otherRoot, 'bench', 'lib', 'proc.mjs'));
const rounds = Number(roundsArg ?? 5);
const servers = { other: await other.startServe([]), this: await startServe([]) };
try {
  const clients = { other: await setupClient(servers.other, 50), this: await setupClient(servers.this, 50) };
  for (let r = 1; r <= rounds; r += 1) {
    const run = (k) =>
      load({
        origin: servers[k].url,
        pid: servers[k].pid,
        key: clients[k].key,
        path: '/api/mensaje_enviar_texto.php',
        makeBody: (w, n) => textBody(clients[k].lines, w, r * 1_000_000 + n, false),
        warmupMs: 2000,
        durationMs: 8000,
      });
    const [o, t] = await Promise.all([run('other'), run('this')]);
    const f = (g) =>
      `${g.per_s.toFixed(0)}/s, process ${g.server_cpu_ms_per_ok.toFixed(3)}, request thread ${g.request_thread_cpu_ms_per_ok.toFixed(3)} ms/accept`;
    console.log(
      `round ${r}: ${otherRoot} ${f(o)} | ${ROOT} ${f(t)} | this/other: process ${(t.server_cpu_ms_per_ok / o.server_cpu_ms_per_ok).toFixed(2)}, ` +
        `request thread ${(t.request_thread_cpu_ms_per_ok / o.request_thread_cpu_ms_per_ok).toFixed(2)}`,
    );
  }
} finally {
  await servers.other.stop();
  await servers.this.stop();
}
