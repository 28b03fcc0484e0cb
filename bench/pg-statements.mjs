// What bench/pg-count.cjs counted, turned into the figures of bench/run.mjs:
// round trips, statements and transactions per message, the simulator's
// bookkeeping apart from the product's.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const TX = /^(BEGIN|COMMIT|ROLLBACK|SAVEPOINT|RELEASE)\b/i;

/** The snapshots a node (or one of its threads: `pid` is then `<pid>.t<threadId>`) has written so far (one line each, SIGUSR2). */
export function countSnapshots(dir, pid) {
  const file = join(dir, `${pid}.jsonl`);
  if (!existsSync(file)) return [];
  const lines = readFileSync(file, 'utf8').split('\n');
  // The last line may be one the node is still writing (no newline yet): read it next time.
  lines.pop();
  return lines.filter(Boolean).map((l) => JSON.parse(l));
}

/** The process clock the snapshots are stamped with (CLOCK_MONOTONIC, microseconds; the same in every process). */
export const monoUs = () => Number(process.hrtime.bigint() / 1000n);

/**
 * For each mark (a monoUs() taken just before a SIGUSR2 was sent), the first
 * snapshot written at or after it, waiting up to 3 s for them. By time, not
 * by count: a node sometimes writes one signal's snapshot twice.
 */
export async function countsAt(dir, pid, marks) {
  for (let i = 0; ; i += 1) {
    const all = countSnapshots(dir, pid);
    const found = marks.map((m) => all.find((x) => x.mono_us >= m));
    if (found.every(Boolean)) return found;
    if (i >= 150) throw new Error(`node ${pid} wrote no statement counts after a mark`);
    await sleep(20);
  }
}

/** Asks the node for a snapshot now and returns it. */
export async function takeCounts(dir, pid) {
  const mark = monoUs();
  process.kill(pid, 'SIGUSR2');
  return (await countsAt(dir, pid, [mark]))[0];
}

/**
 * A snapshot of every thread of the node (bench/sqlite-count.cjs: the main
 * thread's file and one per other thread), merged: the counts summed.
 */
export async function takeThreadCounts(dir, pid) {
  const mark = monoUs();
  process.kill(pid, 'SIGUSR2');
  const [main] = await countsAt(dir, pid, [mark]);
  const merged = { mono_us: main.mono_us, counts: structuredClone(main.counts), threads: 1 };
  for (const f of readdirSync(dir).filter((x) => x.startsWith(`${pid}.t`) && x.endsWith('.jsonl'))) {
    const name = f.slice(0, -'.jsonl'.length);
    let snap;
    for (let i = 0; i < 50 && !snap; i += 1) {
      snap = countSnapshots(dir, name).find((x) => x.mono_us >= mark);
      if (!snap) await sleep(20);
    }
    if (!snap) continue; // a thread that has ended
    merged.threads += 1;
    for (const [k, v] of Object.entries(snap.counts)) {
      const o = (merged.counts[k] ??= { n: 0, ms: 0 });
      o.n += v.n;
      o.ms += v.ms;
    }
  }
  return merged;
}

/** b - a, key by key ({ n, ms }); `pairs` is [[a, b], ...] (one pair per node), summed. */
export function countsDelta(pairs) {
  const out = {};
  for (const [a, b] of pairs) {
    for (const [k, v] of Object.entries(b.counts)) {
      const n = v.n - (a.counts[k]?.n ?? 0);
      if (n <= 0) continue;
      const o = (out[k] ??= { n: 0, ms: 0 });
      o.n += n;
      o.ms += v.ms - (a.counts[k]?.ms ?? 0);
    }
  }
  return out;
}

/**
 * Per message (or job): round trips (every call to the server, each waits for
 * its answer), transactions (BEGIN), statements (the round trips that are not
 * transaction control), the milliseconds waited; the simulator's share
 * (`[sim]` keys) apart, the product's being the rest; and the statements by
 * text, most frequent first.
 */
export function perMessage(delta, n, top = 30) {
  const d = Math.max(1, n);
  let trips = 0;
  let tx = 0;
  let ctl = 0;
  let ms = 0;
  let simTrips = 0;
  let simMs = 0;
  for (const [k, v] of Object.entries(delta)) {
    trips += v.n;
    ms += v.ms;
    if (/^BEGIN\b/i.test(k)) tx += v.n;
    if (TX.test(k)) ctl += v.n;
    if (k.startsWith('[sim] ')) {
      simTrips += v.n;
      simMs += v.ms;
    }
  }
  const r3 = (x) => Number((x / d).toFixed(3));
  return {
    round_trips: r3(trips),
    statements: r3(trips - ctl),
    transactions: r3(tx),
    waited_ms: r3(ms),
    product: { round_trips: r3(trips - simTrips), statements: r3(trips - ctl - simTrips), waited_ms: r3(ms - simMs) },
    sim: { statements: r3(simTrips), waited_ms: r3(simMs) },
    by_text: Object.entries(delta)
      .sort((a, b) => b[1].n - a[1].n)
      .slice(0, top)
      .map(([k, v]) => ({ text: k, per_msg: r3(v.n), ms_per_msg: r3(v.ms) })),
  };
}

/** "12.3 round trips (9.1 statements, 1.6 transactions; the simulator 2.0 more)" for the table. */
export function describeTrips(p) {
  return `${p.product.round_trips.toFixed(1)} round trips/msg (${p.product.statements.toFixed(1)} statements, ${p.transactions.toFixed(2)} transactions; the simulator's own ${p.sim.statements.toFixed(1)} more)`;
}

/** The same for SQLite, where a statement is a call into the library, not a round trip. */
export function describeStatements(p) {
  return `${p.product.statements.toFixed(1)} statements/msg (${p.transactions.toFixed(2)} transactions; the simulator's own ${p.sim.statements.toFixed(1)} more)`;
}
