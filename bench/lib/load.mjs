// The load generators (undici): a closed loop over a time window (load),
// exactly N as fast as they go (pushN), N paced in an open loop (pushPaced);
// and the percentiles of their latencies.
import { Pool } from 'undici';
import { CONNECTIONS, DURATION_MS, WARMUP_MS } from './options.mjs';
import { cpuMs, requestThreadCpuMs, sleep } from './proc.mjs';

export function percentiles(samples) {
  const s = Float64Array.from(samples).sort();
  const q = (p) => (s.length === 0 ? NaN : s[Math.min(s.length - 1, Math.max(0, Math.ceil(p * s.length) - 1))]);
  return { p50: q(0.5), p95: q(0.95), p99: q(0.99), max: s[s.length - 1] ?? NaN };
}

/**
 * `connections` workers, each looping POSTs for warm-up + duration over one
 * pool of keep-alive connections. Counts the 2xx and errors that complete in
 * the measured part (closed-loop throughput), and the server's CPU over it;
 * requests still in flight at the end are awaited, not counted.
 */
export async function load({
  origin,
  pid,
  path,
  key,
  makeBody,
  connections = CONNECTIONS,
  warmupMs = WARMUP_MS,
  durationMs = DURATION_MS,
  extraHeaders = {},
  atStart = () => {},
  atEnd = () => {},
}) {
  const pool = new Pool(origin, { connections, pipelining: 1, keepAliveTimeout: 30_000 });
  const headers = { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}), ...extraHeaders };
  const t0 = performance.now();
  const measureFrom = t0 + warmupMs;
  const end = measureFrom + durationMs;
  let ok = 0;
  let errors = 0;
  const statuses = {};
  const samples = [];
  let firstError;
  let seq = 0;
  let late = 0;
  let lateOk = 0;
  let lateLast = 0;
  let cpuStart;
  let cpuEnd;
  let mainStart;
  let mainEnd;
  const cpuTimer = setTimeout(
    () => {
      cpuStart = pid ? cpuMs(pid) : undefined;
      mainStart = pid ? requestThreadCpuMs(pid) : undefined;
      atStart();
    },
    Math.max(0, measureFrom - performance.now()),
  );
  let ended = false;
  const atWindowEnd = () => {
    if (ended) return;
    ended = true;
    cpuEnd = pid ? cpuMs(pid) : undefined;
    mainEnd = pid ? requestThreadCpuMs(pid) : undefined;
    atEnd();
  };
  const cpuEndTimer = setTimeout(atWindowEnd, Math.max(0, end - performance.now()));
  await Promise.all(
    Array.from({ length: connections }, async (_, w) => {
      while (performance.now() < end) {
        const b = makeBody(w, seq++);
        const body = typeof b === 'string' ? b : JSON.stringify(b);
        const start = performance.now();
        let status = 0;
        let text;
        try {
          const res = await pool.request({ path, method: 'POST', headers, body });
          status = res.statusCode;
          if (status >= 200 && status < 300) await res.body.dump();
          else text = await res.body.text();
        } catch (err) {
          text = String(err);
        }
        const done = performance.now();
        if (done > end) {
          // In flight when the window closed: awaited (the server finishes them anyway), not counted.
          late += 1;
          lateLast = Math.max(lateLast, done - end);
          if (status >= 200 && status < 300) lateOk += 1;
          continue;
        }
        // Completions inside the window count, whenever they started: a slow server is not hidden.
        if (done < measureFrom) continue;
        samples.push(done - start);
        statuses[status] = (statuses[status] ?? 0) + 1;
        if (status >= 200 && status < 300) ok += 1;
        else {
          errors += 1;
          firstError ??= `${status} ${String(text).slice(0, 200)}`;
        }
      }
    }),
  );
  // A busy loop may run the last completions before the end timer: the window's end is read now then.
  clearTimeout(cpuEndTimer);
  atWindowEnd();
  const cpuFinish = pid && cpuStart !== undefined ? cpuMs(pid) : undefined;
  await pool.close();
  clearTimeout(cpuTimer);
  const serverCpu = cpuStart !== undefined && cpuEnd !== undefined ? cpuEnd - cpuStart : undefined;
  // With nothing completed in the window, the CPU per message is taken up to the last late answer.
  const cpuPerOk = ok ? serverCpu / ok : cpuFinish !== undefined && lateOk ? (cpuFinish - cpuStart) / lateOk : NaN;
  return {
    per_s: ok / (durationMs / 1000),
    ok,
    errors,
    statuses,
    latency_ms: percentiles(samples),
    in_flight_at_end: { n: late, ok: lateOk, last_done_ms_after_end: lateLast },
    ...(serverCpu !== undefined ? { server_cpu_ms: serverCpu, server_cpu_ms_per_ok: cpuPerOk } : {}),
    ...(mainStart !== undefined && mainEnd !== undefined && ok ? { request_thread_cpu_ms_per_ok: (mainEnd - mainStart) / ok } : {}),
    ...(firstError ? { first_error: firstError } : {}),
  };
}

/** Exactly `n` POSTs (bodies 0..n-1) over `connections` keep-alive connections, as fast as they go. */
export async function pushN({ origin, path, key, n, makeBody, connections = CONNECTIONS }) {
  const pool = new Pool(origin, { connections, pipelining: 1, keepAliveTimeout: 30_000 });
  const headers = { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) };
  let next = 0;
  let ok = 0;
  const statuses = {};
  let firstError;
  const startedAt = Date.now();
  await Promise.all(
    Array.from({ length: Math.min(connections, n) }, async () => {
      while (next < n) {
        const i = next++;
        let status = 0;
        let text;
        try {
          const res = await pool.request({ path, method: 'POST', headers, body: JSON.stringify(makeBody(i)) });
          status = res.statusCode;
          text = await res.body.text();
        } catch (err) {
          text = String(err);
        }
        statuses[status] = (statuses[status] ?? 0) + 1;
        if (status >= 200 && status < 300) ok += 1;
        else firstError ??= `${status} ${String(text).slice(0, 200)}`;
      }
    }),
  );
  await pool.close();
  return { ok, statuses, started_at: startedAt, ended_at: Date.now(), ...(firstError ? { first_error: firstError } : {}) };
}

/**
 * Exactly `n` POSTs, the i-th due at i / perS seconds (open loop: a slow
 * server does not slow the offer), to origins[i % origins.length].
 */
export async function pushPaced({ origins, path, key, n, perS, makeBody, connections = 16 }) {
  const pools = origins.map((o) => new Pool(o, { connections, pipelining: 1, keepAliveTimeout: 30_000 }));
  const headers = { 'content-type': 'application/json', authorization: `Bearer ${key}` };
  const perOrigin = origins.map(() => 0);
  const statuses = {};
  const samples = [];
  let ok = 0;
  let firstError;
  let maxLag = 0;
  let lastSentAt = null;
  const startedAt = Date.now();
  const t0 = performance.now();
  const jobs = [];
  for (let i = 0; i < n; i += 1) {
    const due = t0 + (i * 1000) / perS;
    const wait = due - performance.now();
    if (wait > 1) await sleep(wait);
    maxLag = Math.max(maxLag, performance.now() - due);
    lastSentAt = Date.now();
    const o = i % pools.length;
    jobs.push(
      (async () => {
        const start = performance.now();
        let status = 0;
        let text;
        try {
          const res = await pools[o].request({ path, method: 'POST', headers, body: JSON.stringify(makeBody(i)) });
          status = res.statusCode;
          text = await res.body.text();
        } catch (err) {
          text = String(err);
        }
        samples.push(performance.now() - start);
        statuses[status] = (statuses[status] ?? 0) + 1;
        if (status >= 200 && status < 300) {
          ok += 1;
          perOrigin[o] += 1;
        } else firstError ??= `${status} ${String(text).slice(0, 200)}`;
      })(),
    );
  }
  await Promise.all(jobs);
  await Promise.all(pools.map((p) => p.close()));
  const endedAt = Date.now();
  return {
    ok,
    statuses,
    per_node: perOrigin,
    offered_per_s: perS,
    accepted_per_s: (ok * 1000) / Math.max(1, endedAt - startedAt),
    latency_ms: percentiles(samples),
    max_pacing_lag_ms: maxLag,
    started_at: startedAt,
    last_sent_at: lastSentAt,
    ended_at: endedAt,
    ...(firstError ? { first_error: firstError } : {}),
  };
}
