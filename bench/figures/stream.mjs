// Figure 12: the event stream (GET /api/eventos.php) read by several readers
// while incoming messages are made through the simulator.
import { request } from 'undici';
import http from 'node:http';
import { STREAM_EVENTS, STREAM_READERS } from '../lib/options.mjs';
import { cpuMs, sleep, startServe, stopQuietly } from '../lib/proc.mjs';
import { needPaths, setupClient } from '../lib/http.mjs';
import { percentiles, pushN } from '../lib/load.mjs';
import { cpuPer, f0, ratio, results } from '../lib/results.mjs';

/**
 * `GET /api/eventos.php` read by STREAM_READERS concurrent SSE readers of one
 * client while STREAM_EVENTS incoming messages are made through the simulator
 * (16 connections): each event's latency from just before its request was
 * sent to its arrival at each reader, and events/s delivered to all readers
 * together. The baseline is the rate the same requests are made at.
 */
export async function figureEventStream() {
  const name = '12. event stream, 10 readers';
  const s = await startServe([]);
  const readers = [];
  let gen;
  let cpu;
  try {
    await needPaths(s, '/api/eventos.php');
    const { key, lines } = await setupClient(s, 1);
    const sentAt = new Map();
    const lat = [];
    let delivered = 0;
    let lastAt = 0;
    for (let r = 0; r < STREAM_READERS; r++) {
      readers.push(
        await new Promise((resolve, reject) => {
          const req = http.get(`${s.url}/api/eventos.php?eventos=messages.received`, { headers: { authorization: `Bearer ${key}` } }, (res) => {
            if (res.statusCode !== 200) return reject(new Error(`stream answered ${res.statusCode}`));
            let buf = '';
            res.setEncoding('utf8');
            res.on('data', (chunk) => {
              buf += chunk;
              let i;
              while ((i = buf.indexOf('\n\n')) >= 0) {
                const frame = buf.slice(0, i);
                buf = buf.slice(i + 2);
                const data = /^data: (.*)$/m.exec(frame)?.[1];
                if (!data) continue;
                const t = sentAt.get(JSON.parse(data).data.texto);
                if (t !== undefined) lat.push(performance.now() - t);
                delivered += 1;
                lastAt = performance.now();
              }
            });
            resolve(req);
          });
          req.on('error', reject);
        }),
      );
    }
    const cpu0 = cpuMs(s.pid);
    const t0 = performance.now();
    gen = await pushN({
      origin: s.url,
      key: s.admin,
      path: '/admin/sim/receive',
      n: STREAM_EVENTS,
      connections: 16,
      makeBody: (i) => {
        sentAt.set(`bench ${i}`, performance.now());
        return { celular_id: lines[0], de: '5215599990000', texto: `bench ${i}` };
      },
    });
    const want = gen.ok * STREAM_READERS;
    const deadline = Date.now() + 60_000;
    while (delivered < want && Date.now() < deadline) await sleep(20);
    cpu = cpuMs(s.pid) - cpu0;
    const spanMs = lastAt - t0;
    // The backlog: as many readers reading everything kept at once (seguir=0), the stream's own rate.
    for (const r of readers.splice(0)) r.destroy();
    await sleep(200);
    const b0 = performance.now();
    const backlog = await Promise.all(
      Array.from({ length: STREAM_READERS }, async () => {
        const res = await request(`${s.url}/api/eventos.php?eventos=messages.received&seguir=0`, { headers: { authorization: `Bearer ${key}` } });
        if (res.statusCode !== 200) throw new Error(`backlog stream answered ${res.statusCode}`);
        let n = 0;
        let tail = '';
        for await (const chunk of res.body) {
          // A marker split between two chunks is counted once: the previous chunk's last bytes go first.
          const text = tail + String(chunk);
          n += (text.match(/\nevent: /g) ?? []).length;
          tail = text.slice(-7);
        }
        return n;
      }),
    );
    const backlogPerS = (backlog.reduce((a, b) => a + b, 0) * 1000) / (performance.now() - b0);
    const genPerS = (gen.ok * 1000) / Math.max(1, gen.ended_at - gen.started_at);
    const perS = (delivered * 1000) / Math.max(1, spanMs);
    const pct = percentiles(lat);
    results.push({
      figure: name,
      measured: `${f0(perS)} events/s to ${STREAM_READERS} readers live (${delivered} of ${want}), latency p50 ${pct.p50.toFixed(1)} ms, p95 ${pct.p95.toFixed(1)} ms; backlog ${f0(backlogPerS)} events/s`,
      baseline: `${f0(genPerS)} events/s made (sim receive, 16 conns)`,
      ratio: ratio(perS / STREAM_READERS, genPerS),
      target: 'reported',
      met: null,
      cpu: cpuPer(cpu / Math.max(1, delivered), 'event sent'),
      detail: {
        readers: STREAM_READERS,
        events: STREAM_EVENTS,
        generation: gen,
        delivered,
        span_ms: spanMs,
        latency_ms: pct,
        server_cpu_ms: cpu,
        backlog,
        backlog_per_s: backlogPerS,
      },
    });
  } finally {
    for (const r of readers) r.destroy();
    await stopQuietly(s);
  }
}
