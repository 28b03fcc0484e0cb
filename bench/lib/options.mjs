// The bench's flags (`node bench/run.mjs --help` lists them), read once from the
// command line, and the paths it runs from. Imported first by run.mjs: when
// dist/ is missing the run ends here, before any helper starts a process.
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The bench/ folder: the helper scripts and results/ are found from it. */
export const HERE = join(dirname(fileURLToPath(import.meta.url)), '..');
export const ROOT = join(HERE, '..');
export const BIN = join(ROOT, 'bin', 'pasarela');
export const CACHE = join(HERE, '.cache');
export const args = process.argv.slice(2);
export const opt = (name, def) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? Number(args[i + 1]) : def;
};
export const DURATION_MS = opt('duration-ms', 5000);
export const WARMUP_MS = opt('warmup-ms', 1000);
export const CONNECTIONS = opt('connections', 50);
/** Figure 2: messages pushed through the whole pipeline (default scales with --duration-ms: 800 at 2 s, 2000 at 5 s). */
export const PIPELINE_MESSAGES = opt('pipeline-messages', Math.max(200, Math.round(DURATION_MS * 0.4)));
/** Figure 7: test events generated, then delivered. */
export const WEBHOOK_EVENTS = opt('webhook-events', 5000);
export const BIG_ROWS = opt('big-store-rows', 1_000_000);
/** Figure 1b: rounds of the empty store and the 1M store, interleaved. */
export const GROWTH_ROUNDS = opt('growth-rounds', 2);
/** Figure 1c's offer, accepts a second on both stores (open loop). */
export const GROWTH_RATE = opt('growth-rate', 2000);
/**
 * Figure 9: messages pushed at a fixed rate (requests/s, spread round-robin over the nodes), in rounds of
 * 1, 2, 3 nodes; the median per node count is reported (one round swings 10-20% on this shared machine).
 */
export const NODES_MESSAGES = opt('nodes-messages', 600);
export const NODES_RATE = opt('nodes-rate', 30);
export const NODES_ROUNDS = opt('nodes-rounds', 3);
/** Figure 9: the nodes' idle cost (their polling alone) is measured over this long before the load. */
export const NODES_IDLE_MS = opt('nodes-idle-ms', 5000);
/** Figure 12: event stream readers of one client, and the events made while they read. */
export const STREAM_READERS = opt('stream-readers', 10);
export const STREAM_EVENTS = opt('stream-events', 2000);
/**
 * Figure 9 --nodes-profile DIR: every node runs with bench/pg-count.cjs (its statements to PostgreSQL
 * counted by text), and with --nodes-cpu-prof also with --cpu-prof, one folder per run under DIR; the
 * measured window is in the details, on the profiles' clock. Read with `node bench/nodes-profile.mjs`.
 * The CPU figures of a --nodes-cpu-prof run include the profiler's own cost (about 50 ms/s a node even
 * idle): compare them with each other, not with a run without it.
 */
export const NODES_PROFILE = args.includes('--nodes-profile') ? String(args[args.indexOf('--nodes-profile') + 1]) : null;
export const NODES_CPU_PROF = NODES_PROFILE !== null && args.includes('--nodes-cpu-prof');
/** Figure 10: messages through one PostgreSQL node (and jobs through pg-boss), paced at this rate (requests/s). */
export const LIFECYCLE_MESSAGES = opt('lifecycle-messages', 600);
export const LIFECYCLE_RATE = opt('lifecycle-rate', 30);
/** Figure 11: seconds of sending, and the queued sends/s of 11b (11a: half of it directo, half queued). */
export const LIVE_SECONDS = opt('live-seconds', 10);
export const LIVE_RATE = opt('live-rate', 300);
/** Warm-up of the figures that push a fixed number of messages (2, 8b, 10, 11): this many go through first, unmeasured. */
export const WARMUP_MESSAGES = opt('warmup-messages', 200);
/** Figures 2, 2b and 8b: at least 1000 first, on pasarela and on BullMQ alike (a JIT still compiling weighs on a short window). */
export const PIPELINE_WARMUP = Math.max(WARMUP_MESSAGES, 1000);
/** Figure 12: rows of the `send bulk` campaign, and sends of the plain `send text` loop it is compared with. */
export const BULK_ROWS = opt('bulk-rows', 2000);
export const BULK_LOOP = opt('bulk-loop', 40);
/** Figure 16: lines linked to the engine against the fake, and the contacts they send to. */
export const ENGINE_LINES = opt('engine-lines', 100);
export const ENGINE_CONTACTS = opt('engine-contacts', 20);
/**
 * Figure 18: lines linked on an idle node, the settle before the window, the window (120 s holds two passes of
 * the lines' health check, and /proc's 10 ms ticks are 0.08 ms/s of it); --idle-profile DIR keeps each run's statement counts and a --cpu-prof profile there.
 */
export const IDLE_LINES = opt('idle-lines', 1000);
// Long enough for the first health pass and V8's one shrink of the heap the linking grew (D-191): the window is the steady state.
export const IDLE_SETTLE_MS = opt('idle-settle-ms', 120_000);
export const IDLE_WINDOW_MS = opt('idle-window-ms', 120_000);
export const IDLE_PROFILE = args.includes('--idle-profile') ? String(args[args.indexOf('--idle-profile') + 1]) : null;
export const REBUILD_STORE = args.includes('--rebuild-store');
export const SKIP_HISTORIAL = args.includes('--skip-historial');
/** --only 1,3 or --only 4c: run just those figures (for a quick look; the README numbers come from a full run). */
export const ONLY = args.includes('--only')
  ? new Set(
      String(args[args.indexOf('--only') + 1])
        .split(',')
        .map((x) => x.trim()),
    )
  : null;
/**
 * A figure's number (4) or its id (4c): `--only 4` runs 4a, 4b and 4c; `--only 4c` only that one. A list
 * for a figure that makes several rows ([3, '3a', '3b']: 3b's baseline is 3a, so `--only 3b` runs both).
 */
export const want = (n) => (Array.isArray(n) ? n.some(want) : !ONLY || ONLY.has(String(n)) || ONLY.has(String(Number.parseInt(String(n), 10))));
export const MB = 1024 * 1024;

/** What `--help` prints (and then nothing runs). */
export const USAGE = `pasarela benchmarks (bench/README.md has each figure):
  npm run bench            (= npm run build && node bench/run.mjs)
  node bench/run.mjs [--only 1,3] [--duration-ms 5000] [--warmup-ms 1000] [--connections 50]
                     [--pipeline-messages N] [--webhook-events 5000] [--rebuild-store] [--skip-historial]
                     [--big-store-rows 1000000] [--growth-rounds 2] [--growth-rate 2000] [--warmup-messages 200]
                     [--nodes-messages 600] [--nodes-rate 30] [--nodes-rounds 3] [--nodes-idle-ms 5000]
                     [--nodes-profile DIR [--nodes-cpu-prof]]
                     [--lifecycle-messages 600] [--lifecycle-rate 30] [--live-seconds 10] [--live-rate 300]
                     [--stream-readers 10] [--stream-events 2000]
                     [--bulk-rows 2000] [--bulk-loop 40] [--engine-lines 100] [--engine-contacts 20]
                     [--idle-lines 1000] [--idle-settle-ms 10000] [--idle-window-ms 60000] [--idle-profile DIR]
--only takes figure numbers (4: 4a, 4b and 4c) or ids (4c).`;
if (args.includes('--help') || args.includes('-h')) {
  console.log(USAGE);
  process.exit(0);
}

if (!existsSync(join(ROOT, 'dist', 'cli', 'main.js'))) {
  console.error('dist/ is missing: run `npm run bench` (it builds first)');
  process.exit(2);
}
/** Figure 19: lines in each pool (the 50 lines split into 50 / this pools). */
export const POOL_SIZE = opt('pool-size', 5);
