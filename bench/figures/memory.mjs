// Figure 4, memory: 4a a 50 MB base64 document, 4b five 180 MB
// unauthenticated bodies with /health polled meanwhile, 4c 4a's document
// through the Evolution fake.
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Pool, request } from 'undici';
import http from 'node:http';
import { MB, ROOT } from '../lib/options.mjs';
import { cpuMs, log, memOf, needFlags, resetPeak, sleep, startServe, temps } from '../lib/proc.mjs';
import { call, destinatario, needPaths, nextNumeroSeq, setupClient, waitActive } from '../lib/http.mjs';
import { percentiles } from '../lib/load.mjs';
import { f0, f2, mb, results } from '../lib/results.mjs';

/**
 * One base64 document sent directly to `target` (pasarela or the bare
 * baseline), after a pause and a reset of its peak memory: the answer, its
 * time, the process's memory before and after and the CPU it spent.
 */
/** The warm-up of figures 4a and 4c: a 1 MiB document to the same route, unmeasured, before the 50 MB one. */
function warmDocument(celularId) {
  const file = randomBytes(MB);
  file.write('%PDF-1.7\n', 0, 'latin1');
  return JSON.stringify({ celular_id: celularId, destinatario: destinatario(2), directo: 1, filename: 'previo.pdf', documentBase64: file.toString('base64') });
}

async function postDocument(target, key, payload) {
  await sleep(300);
  const exact = resetPeak(target.pid);
  const before = memOf(target.pid);
  const cpu0 = cpuMs(target.pid);
  const t = performance.now();
  const res = await request(`${target.url}/api/mensaje_enviar_documento_base64.php`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) },
    body: payload,
    bodyTimeout: 120_000,
    headersTimeout: 120_000,
  });
  const text = await res.body.text();
  const ms = performance.now() - t;
  const after = memOf(target.pid);
  return { status: res.statusCode, text, ms, before, after, growth: after.hwm - before.rss, peak_reset: exact, cpu_ms: cpuMs(target.pid) - cpu0 };
}

export async function figureDocument(baseline) {
  const name = '4a. 50 MB base64 document, peak RSS';
  const size = 50 * MB;
  const file = randomBytes(size);
  file.write('%PDF-1.7\n%\u00e2\u00e3\u00cf\u00d3\n1 0 obj\n<< /Type /Catalog >>\nendobj\n', 0, 'latin1');
  const b64 = file.toString('base64');
  const s = await startServe([]);
  try {
    await needPaths(s, '/api/mensaje_enviar_documento_base64.php');
    const c = await setupClient(s, 1);
    const payload = JSON.stringify({ celular_id: c.lines[0], destinatario: destinatario(1), directo: 1, filename: 'informe.pdf', documentBase64: b64 });
    const post = (target) => postDocument(target, c.key, payload);
    log('  warm-up: a 1 MB document to each, unmeasured...');
    const warm = warmDocument(c.lines[0]);
    await postDocument(baseline, c.key, warm);
    await postDocument(s, c.key, warm);
    log('  baseline (bare Fastify)...');
    const base = await post(baseline);
    log('  pasarela...');
    const got = await post(s);
    if (got.status !== 200) throw new Error(`document send: ${got.status} ${got.text.slice(0, 300)}`);
    const leftovers = existsSync(join(s.dataDir, 'tmp')) ? readdirSync(join(s.dataDir, 'tmp')) : [];
    const x = got.growth / size;
    results.push({
      figure: name,
      measured: `+${mb(got.growth)} = ${f2(x)}x the file (${(got.ms / 1000).toFixed(2)} s${got.peak_reset ? '' : '; peak NOT reset'})`,
      baseline: `+${mb(base.growth)} = ${f2(base.growth / size)}x, bare route, same body (${(base.ms / 1000).toFixed(2)} s)`,
      ratio: x,
      ratioText: `${f2(x)}x file`,
      target: '<= 1x file (moonshot 0.1x)',
      met: x <= 1 && leftovers.length === 0,
      cpu: `${f0(got.cpu_ms)} ms/doc`,
      detail: {
        file_bytes: size,
        body_bytes: Buffer.byteLength(payload),
        temp_files_left: leftovers.length,
        pasarela: { ...got, text: undefined },
        baseline: { ...base, text: undefined },
      },
    });
  } finally {
    await s.stop();
  }
}

/**
 * The Evolution API fake of the tests (test/fakes/evolution.ts), transpiled
 * for this run (it imports only node: modules), keeping each document's
 * SHA-256 instead of its bytes.
 */
async function startEvolutionFake() {
  const ts = (await import('typescript')).default;
  const source = readFileSync(join(ROOT, 'test', 'fakes', 'evolution.ts'), 'utf8');
  const js = ts.transpileModule(source, { compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 } }).outputText;
  const dir = mkdtempSync(join(tmpdir(), 'pasarela-bench-fake-'));
  temps.push(dir);
  writeFileSync(join(dir, 'evolution.mjs'), js);
  const { startEvolutionFake: start } = await import(join(dir, 'evolution.mjs'));
  return start({ keepMedia: false });
}

/**
 * Figure 4a's twin on a real gateway's API (issue 23 item 5): the same 50 MB
 * document, directo, with `serve --gateway evolution` in front of the
 * Evolution fake, so the answer comes once the gateway has the file. The peak
 * RSS growth covers the accept and the send, which streams the file as base64
 * inside the JSON body; the fake's SHA-256 of what it decoded must be the file's.
 */
export async function figureDocumentGateway(baseline) {
  const name = '4c. 50 MB base64 document through Evolution, peak RSS';
  const size = 50 * MB;
  const file = randomBytes(size);
  file.write('%PDF-1.7\n%\u00e2\u00e3\u00cf\u00d3\n1 0 obj\n<< /Type /Catalog >>\nendobj\n', 0, 'latin1');
  const sha = createHash('sha256').update(file).digest('hex');
  const fake = await startEvolutionFake();
  let s;
  try {
    needFlags('--gateway', '--gateway-url', '--gateway-key', '--allow-private-urls');
    s = await startServe(['--gateway', 'evolution', '--gateway-url', fake.url, '--gateway-key', fake.apiKey, '--allow-private-urls', '--health-interval', '0']);
    await needPaths(s, '/api/mensaje_enviar_documento_base64.php');
    const cli = await call(s.url, 'POST', '/admin/clientes', s.admin, { nombre: 'Bench', email: 'bench@example.com', saldo: 1000 });
    const cel = await call(s.url, 'POST', '/api/celular_crear.php', cli.api_key, { numero: `52155${String(10_000_000 + nextNumeroSeq() * 7)}` });
    const instancia = `pasarela-${cel.celular_id}`;
    for (let tries = 0; ; tries++) {
      const qr = await call(s.url, 'POST', `/api/celular_qr.php?id=${cel.celular_id}`, cli.api_key);
      if (qr?.qr) break;
      if (tries > 100) throw new Error('no QR from the Evolution fake');
      await sleep(50);
    }
    await fake.scan(instancia);
    await fake.settle();
    await waitActive(s, cli.api_key, 1);
    const payload = JSON.stringify({
      celular_id: cel.celular_id,
      destinatario: destinatario(1),
      directo: 1,
      filename: 'informe.pdf',
      documentBase64: file.toString('base64'),
    });
    const post = (target, key) => postDocument(target, key, payload);
    log('  warm-up: a 1 MB document to each, unmeasured...');
    const warm = warmDocument(cel.celular_id);
    await postDocument(baseline, undefined, warm);
    await postDocument(s, cli.api_key, warm);
    log('  baseline (bare Fastify)...');
    const base = await post(baseline);
    log('  pasarela -> Evolution fake...');
    const got = await post(s, cli.api_key);
    if (got.status !== 200) throw new Error(`document send: ${got.status} ${got.text.slice(0, 300)}`);
    const sent = fake.messages.filter((m) => m.route === 'sendMedia' && m.size === size);
    const same = sent.length === 1 && sent[0].sha256 === sha && sent[0].size === size;
    const x = got.growth / size;
    results.push({
      figure: name,
      measured: `+${mb(got.growth)} = ${f2(x)}x the file (${(got.ms / 1000).toFixed(2)} s${got.peak_reset ? '' : '; peak NOT reset'}${same ? '' : '; the gateway did NOT get the file'})`,
      baseline: `+${mb(base.growth)} = ${f2(base.growth / size)}x, bare route, same body (${(base.ms / 1000).toFixed(2)} s)`,
      ratio: x,
      ratioText: `${f2(x)}x file`,
      target: '<= 1x file (moonshot 0.1x)',
      met: x <= 1 && same,
      cpu: `${f0(got.cpu_ms)} ms/doc`,
      detail: {
        file_bytes: size,
        body_bytes: Buffer.byteLength(payload),
        gateway_sha256_matches: same,
        pasarela: { ...got, text: undefined },
        baseline: { ...base, text: undefined },
      },
    });
  } finally {
    if (s) await s.stop();
    await fake.close();
  }
}

/**
 * One unauthenticated form-encoded upload of `bytes` of base64 text in the
 * documentBase64 field, a wrong key at the end of the body, streamed in 1 MiB
 * chunks with backpressure over its own connection. Stops sending once the
 * server has answered (it may refuse early) and never throws: the status, or
 * the socket error, is the result.
 */
function hostileUpload(url, bytes, chunk) {
  const prefix = Buffer.from('documentBase64=');
  const tail = Buffer.from(`&destinatario=525512345678&filename=informe.pdf&key=WAC_1_${'x'.repeat(43)}`);
  const total = prefix.length + bytes + tail.length;
  return new Promise((resolve) => {
    const u = new URL(url);
    const t0 = performance.now();
    const out = { status: null, error: null, sent_bytes: 0, total_bytes: total, answered_at_ms: null, ms: null, body: '' };
    let settled = false;
    const settle = () => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      out.ms = performance.now() - t0;
      // Answered (or failed): stop uploading and free the connection.
      req.destroy();
      resolve(out);
    };
    // A server that neither answers nor reads would hold the upload forever.
    const timer = setTimeout(() => {
      out.error ??= 'bench timeout (120 s)';
      settle();
    }, 120_000);
    const req = http.request({
      host: u.hostname,
      port: u.port,
      path: '/api/mensaje_enviar_documento_base64.php',
      method: 'POST',
      agent: false,
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'content-length': String(total) },
    });
    req.on('response', (res) => {
      out.status = res.statusCode;
      out.answered_at_ms = performance.now() - t0;
      res.setEncoding('utf8');
      res.on('data', (d) => out.body.length < 300 && (out.body += d));
      res.on('end', settle);
      res.on('error', (e) => {
        out.error ??= e.code ?? e.message;
        settle();
      });
    });
    req.on('error', (e) => {
      out.error ??= e.code ?? e.message;
      if (out.status === null) settle();
    });
    req.on('close', () => setTimeout(settle, 50).unref());
    const write = (buf) =>
      new Promise((r) => {
        if (req.destroyed || out.status !== null) return r(false);
        out.sent_bytes += buf.length;
        if (req.write(buf)) return r(true);
        const done = () => {
          req.off('drain', done);
          req.off('close', done);
          r(!req.destroyed);
        };
        req.once('drain', done);
        req.once('close', done);
      });
    void (async () => {
      if (!(await write(prefix))) return;
      for (let left = bytes; left > 0; left -= chunk.length) {
        if (!(await write(left >= chunk.length ? chunk : chunk.subarray(0, left)))) return;
      }
      if (!(await write(tail))) return;
      req.end();
    })();
  });
}

export async function figureHostileUploads() {
  const name = '4b. 5 x 180 MB unauthenticated bodies';
  const N = 5;
  const BYTES = 180 * MB;
  // 1 MiB of base64 text ('+' and '/' replaced so the form needs no escaping), sent again and again.
  const chunk = Buffer.from(
    randomBytes((MB / 4) * 3)
      .toString('base64')
      .replace(/[+/]/g, 'A'),
  );
  const s = await startServe([]);
  let died = null;
  try {
    await needPaths(s, '/api/mensaje_enviar_documento_base64.php');
    await call(s.url, 'GET', '/health');
    await sleep(300);
    const exact = resetPeak(s.pid);
    const before = memOf(s.pid);
    const cpu0 = cpuMs(s.pid);
    // The sixth client: GET /health every 20 ms for the whole time, one at a time.
    const loop = monitorEventLoopDelay({ resolution: 10 });
    loop.enable();
    const health = { n: 0, failed: 0, statuses: {}, samples: [], max_ms: 0, max_at_ms: 0 };
    let polling = true;
    const t0 = performance.now();
    const pool = new Pool(s.url, { connections: 1, keepAliveTimeout: 30_000 });
    const poller = (async () => {
      while (polling) {
        const t = performance.now();
        let status = 0;
        try {
          const res = await pool.request({ path: '/health', method: 'GET', headersTimeout: 60_000, bodyTimeout: 60_000 });
          status = res.statusCode;
          await res.body.dump();
        } catch (err) {
          status = err.code ?? 'error';
        }
        const ms = performance.now() - t;
        health.n += 1;
        health.statuses[status] = (health.statuses[status] ?? 0) + 1;
        if (status !== 200) health.failed += 1;
        health.samples.push(ms);
        if (ms > health.max_ms) {
          health.max_ms = ms;
          health.max_at_ms = t - t0;
        }
        await sleep(20);
      }
    })();
    await sleep(200);
    log(`  ${N} uploads of ${BYTES / MB} MB at once, /health every 20 ms...`);
    const uploads = await Promise.all(Array.from({ length: N }, () => hostileUpload(s.url, BYTES, chunk)));
    await sleep(500);
    polling = false;
    await poller;
    await pool.close().catch(() => {});
    loop.disable();
    const alive = s.alive();
    const after = alive ? memOf(s.pid) : null;
    const cpu = alive ? cpuMs(s.pid) - cpu0 : NaN;
    if (!alive) died = s.exit();
    const growth = after ? after.hwm - before.rss : NaN;
    const statusCounts = {};
    for (const u of uploads) {
      const k = u.status ?? `no answer (${u.error})`;
      statusCounts[k] = (statusCounts[k] ?? 0) + 1;
    }
    const pct = percentiles(health.samples);
    const met = alive && growth <= 100 * MB && health.max_ms <= 100;
    results.push({
      figure: name,
      measured:
        `${alive ? `peak RSS +${mb(growth)}` : `SERVER DIED (${died.code ?? died.signal})`}, /health max ${f0(health.max_ms)} ms (p95 ${f0(pct.p95)}, ${health.failed} failed of ${health.n}); ` +
        `answers ${Object.entries(statusCounts)
          .map(([k, v]) => `${v}x ${k}`)
          .join(', ')}${exact ? '' : '; peak NOT reset'}`,
      baseline: '- (absolute targets)',
      ratio: NaN,
      target: 'RSS <= +100 MB, /health <= 100 ms',
      met,
      cpu: Number.isFinite(cpu) ? `${f0(cpu)} ms for ${N} bodies` : '?',
      detail: {
        uploads: uploads.map((u) => ({ ...u, body: u.body.slice(0, 200) })),
        body_bytes: uploads[0]?.total_bytes,
        rss_before: before.rss,
        after,
        growth,
        peak_reset: exact,
        health: {
          n: health.n,
          failed: health.failed,
          statuses: health.statuses,
          max_ms: health.max_ms,
          max_at_ms: health.max_at_ms,
          ...pct,
          samples: undefined,
        },
        bench_event_loop_delay_max_ms: loop.max / 1e6,
        server_alive: alive,
        server_exit: died,
        server_stderr_tail: alive ? undefined : s.stderrTail().slice(-2000),
        server_cpu_ms: cpu,
      },
    });
  } finally {
    if (s.alive()) await s.stop();
  }
}
