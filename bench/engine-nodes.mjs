// Figure 17: the engine (`serve --gateway baileys`) on three nodes sharing a
// PostgreSQL schema and a Redis prefix (issue 38, D-136), against the fake
// network run as figure 16 runs it. Two rows: how long a SIGKILLed holder's
// lines take to be connected again on the survivors, and what a direct send
// costs when it arrives at a node that does not hold its line (forwarded to
// the holder) against the same send arriving at the holder. Imported by
// run.mjs, which passes its helpers.
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Pool } from 'undici';
import { buildFake, control, cpuMs, startFake } from './engine.mjs';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const LINES = 30;
/** 17b: each of the holder's lines sends this many texts a block; blocks alternate local and routed. */
const PER_LINE = 6;
const ROUNDS = 4;

/** Polls `fn` every `stepMs` until it returns something other than null/undefined. */
async function until(fn, what, timeoutMs, stepMs = 500) {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== null && v !== undefined) return v;
    if (Date.now() > end) throw new Error(`${what}: not after ${timeoutMs / 1000} s`);
    await sleep(stepMs);
  }
}

export async function figureEngineNodes(h) {
  const { root, log, results, startServe, stopQuietly, call, percentiles, children, postgresSchema, benchRedis, dropRedisPrefix } = h;
  const { f0, f2, cpuPer, ratio } = h.fmt;
  const redisUrl = await benchRedis();
  const pg = (await import('pg')).default;
  buildFake(root, log);
  const store = await postgresSchema();
  const prefix = `pasarela-bench17:${Date.now().toString(36)}:`;
  const fake = await startFake(root, children).catch(async (err) => {
    await store.drop();
    throw err;
  });
  const db = new pg.Client({ connectionString: store.store });
  const token = randomBytes(24).toString('hex');
  const nodes = [];
  const lines = [];
  let keyFile;
  let clientKey;
  const t0 = performance.now();
  const q = async (sql, params = []) => (await db.query(sql, params)).rows;
  const alive = () => nodes.filter((n) => n.alive());

  /** A node of the three; the first makes the engine key file every other node is given. */
  async function startNode() {
    const flags = ['--gateway', 'baileys', '--baileys-ws-url', fake.wsUrl, '--store', store.store, '--counters', redisUrl, '--counters-prefix', prefix];
    flags.push('--engine-settle', '2s', '--drain-delay', '0', ...(keyFile ? ['--engine-key-file', keyFile] : []));
    const s = await startServe(flags, undefined, { PASARELA_ADMIN_TOKEN: token }, ['--import', fake.preload]);
    nodes.push(s);
    if (!keyFile) {
      keyFile = join(s.dataDir, 'engine.key');
      await until(() => (existsSync(keyFile) ? true : null), 'the first node writing engine.key', 30_000, 100);
    }
    // The store's id of the node: its label names its pid.
    s.id = await until(async () => (await q('SELECT id FROM nodos WHERE etiqueta LIKE $1', [`%pid ${s.pid} %`]))[0]?.id, 'the node in nodos', 30_000, 200);
    return s;
  }
  const holders = () =>
    q(`SELECT s.instancia, s.nodo, EXISTS (SELECT 1 FROM nodos d WHERE d.id = s.nodo
         AND d.heartbeat_at + d.margen_ms > (EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::bigint) AS presente
       FROM motor_sesiones s`);
  /** A line's live status; when the engine call fails (a dead holder) the API answers the stored one, flagged: not counted. */
  const status = async (s, id) => {
    const st = await call(s.url, 'GET', `/api/celular_status.php?id=${id}`, clientKey).catch(() => null);
    return st?.status_actualizado_desde_gateway ? st.status : undefined;
  };

  /** Every line held by a present node, none over its share, each connected (asked of its holder). */
  async function spread(what, liveCount) {
    return until(
      async () => {
        const hs = await holders();
        if (hs.length !== LINES || hs.some((x) => !x.nodo || !x.presente)) return null;
        const per = new Map();
        for (const x of hs) per.set(x.nodo, [...(per.get(x.nodo) ?? []), x.instancia]);
        if (per.size !== liveCount || Math.max(...[...per.values()].map((v) => v.length)) > Math.ceil(LINES / liveCount)) return null;
        const byId = new Map(alive().map((n) => [n.id, n]));
        for (const x of hs)
          if (!byId.has(x.nodo) || (await status(byId.get(x.nodo), lines.find((l) => l.instancia === x.instancia).id)) !== 'connected') return null;
        return per;
      },
      what,
      180_000,
    );
  }

  /** Until the live nodes use under 5% of a core each for 3 s in a row (a line just linked or taken uploads its pre-keys). */
  async function settled() {
    const end = Date.now() + 90_000;
    let quiet = 0;
    let last = alive().map((n) => cpuMs(n.pid));
    while (quiet < 3 && Date.now() < end) {
      await sleep(1000);
      const now = alive().map((n) => cpuMs(n.pid));
      quiet = now.every((c, i) => c - last[i] < 50) ? quiet + 1 : 0;
      last = now;
    }
    if (quiet < 3) log('  the nodes were still busy after 90 s; going on');
  }

  let routedRow;
  const kills = [];
  try {
    await db.connect();
    log('  three nodes...');
    await startNode();
    await Promise.all([startNode(), startNode()]);
    const a = nodes[0];
    clientKey = (await call(a.url, 'POST', '/admin/clientes', token, { nombre: 'Bench nodes', email: 'nodes@example.com', saldo: 1_000_000_000 })).api_key;
    log(`  linking ${LINES} lines through the first node...`);
    const tl = performance.now();
    let seq = 0;
    await Promise.all(
      Array.from({ length: 4 }, async () => {
        while (seq < LINES) {
          const numero = `5255${String(50_000_000 + seq++)}`;
          const c = await call(a.url, 'POST', '/api/celular_crear.php', clientKey, { numero });
          const qr = await call(a.url, 'POST', `/api/celular_qr.php?id=${c.celular_id}`, clientKey, {});
          await control(fake, 'POST', '/scan', { qr: qr.qr, numero });
          await call(a.url, 'POST', `/api/celular_editar.php?id=${c.celular_id}`, clientKey, {
            max_envios_por_minuto: 1000,
            max_envios_por_hora: 50_000,
            max_envios_por_dia: null,
          });
          lines.push({ id: c.celular_id, numero: c.celular.numero, instancia: c.celular.gateway_instancia });
        }
      }),
    );
    let per = await spread('the lines spread over three nodes', 3);
    log(`  linked and spread (${[...per.values()].map((v) => v.length).join('/')}) in ${f0((performance.now() - tl) / 1000)} s; settling...`);
    await settled();

    // ---- 17b: direct texts to the lines one node holds, through it and through another ----
    const [A, B] = [...alive()].sort((x, y) => (per.get(y.id)?.length ?? 0) - (per.get(x.id)?.length ?? 0));
    const held = lines.filter((l) => per.get(A.id).includes(l.instancia));
    const contacts = held.map((_, i) => `5255${String(31_000_000 + i)}`);
    // Asking a contact's received list registers it on the network (with its keys).
    for (const n of contacts) await control(fake, 'GET', `/contacts/${n}/received`);
    const pools = new Map([A, B].map((n) => [n, new Pool(n.url, { connections: held.length, keepAliveTimeout: 30_000 })]));
    let msg = 0;
    /** Each of A's lines sends `n` texts to its own contact, one after another, all lines at once, through `via`. */
    const block = async (via, n) => {
      const lat = [];
      let errors = 0;
      const c0 = [cpuMs(A.pid), cpuMs(B.pid)];
      const w0 = performance.now();
      await Promise.all(
        held.map(async (l, w) => {
          for (let i = 0; i < n; i++) {
            const body = JSON.stringify({ celular_id: l.id, destinatario: contacts[w], mensaje: `Hola, su pedido ${msg++} está en camino.`, directo: 1 });
            const s0 = performance.now();
            const res = await pools.get(via).request({
              path: '/api/mensaje_enviar_texto.php',
              method: 'POST',
              headers: { 'content-type': 'application/json', authorization: `Bearer ${clientKey}` },
              body,
            });
            const out = await res.body.json().catch(() => ({}));
            if (res.statusCode === 200 && out.estado === 'enviado') lat.push(performance.now() - s0);
            else errors += 1;
          }
        }),
      );
      return { ok: lat.length, errors, lat, ms: performance.now() - w0, cpu_a: cpuMs(A.pid) - c0[0], cpu_b: cpuMs(B.pid) - c0[1] };
    };
    log(`  17b: ${held.length} lines held by one node, warm-up (each line's first send sets up its Signal session)...`);
    await block(A, 2);
    await block(B, 2);
    const local = [];
    const routed = [];
    for (let r = 0; r < ROUNDS; r++) {
      // Alternating which goes first, so a drift of the machine falls on both alike.
      for (const kind of r % 2 === 0 ? ['local', 'routed'] : ['routed', 'local']) {
        const b = await block(kind === 'local' ? A : B, PER_LINE);
        (kind === 'local' ? local : routed).push(b);
        log(`    ${kind}: ${b.ok} sent (${b.errors} errors) in ${f2(b.ms / 1000)} s`);
      }
    }
    for (const p of pools.values()) await p.close();
    const sum = (bs, k) => bs.reduce((x, b) => x + b[k], 0);
    const side = (bs, withB) => {
      const ok = sum(bs, 'ok');
      const cpu = sum(bs, 'cpu_a') + (withB ? sum(bs, 'cpu_b') : 0);
      return {
        ok,
        errors: sum(bs, 'errors'),
        cpu_ms_per_msg: cpu / Math.max(1, ok),
        holder_cpu_ms_per_msg: sum(bs, 'cpu_a') / Math.max(1, ok),
        other_cpu_ms_per_msg: sum(bs, 'cpu_b') / Math.max(1, ok),
        per_s: (ok * 1000) / sum(bs, 'ms'),
        latency_ms: percentiles(bs.flatMap((b) => b.lat)),
      };
    };
    routedRow = { lines: held.length, per_line_per_block: PER_LINE, rounds: ROUNDS, local: side(local, false), routed: side(routed, true) };

    // ---- 17a: SIGKILL of the node holding the most; each of its lines until connected on a survivor ----
    for (let k = 0; k < 2; k++) {
      if (k === 1) {
        // A second kill only while the figure stays within its few minutes.
        if (performance.now() - t0 > 150_000) break;
        log('  a third node again...');
        await startNode();
        per = await spread('three nodes again', 3);
        await settled();
      }
      per = new Map();
      for (const x of await holders()) per.set(x.nodo, [...(per.get(x.nodo) ?? []), x.instancia]);
      const live = alive();
      const victim = live.reduce((x, y) => ((per.get(y.id)?.length ?? 0) > (per.get(x.id)?.length ?? 0) ? y : x));
      const survivors = live.filter((n) => n !== victim);
      const its = lines.filter((l) => per.get(victim.id).includes(l.instancia));
      log(`  17a: SIGKILL of a node holding ${its.length} lines...`);
      process.kill(victim.pid, 'SIGKILL');
      const tKill = performance.now();
      await until(() => (victim.alive() ? null : true), 'the killed node gone', 10_000, 20);
      // Its last beat, read once no beat of it can still land: it counts as gone at heartbeat_at + margen_ms (the database's clock).
      await sleep(500);
      const tq = performance.now();
      const [row] = await q(
        `SELECT heartbeat_at + margen_ms AS gone_at, margen_ms, (EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::bigint AS db_now FROM nodos WHERE id = $1`,
        [victim.id],
      );
      const goneMs = Number(row.gone_at) - Number(row.db_now) + ((tq + performance.now()) / 2 - tKill);
      const at = new Map();
      let polls = 0;
      await until(
        async () => {
          const left = its.filter((l) => !at.has(l.id));
          await Promise.all(
            left.map(async (l, i) => {
              polls += 1;
              if ((await status(survivors[i % survivors.length], l.id)) === 'connected' && !at.has(l.id)) at.set(l.id, performance.now() - tKill);
            }),
          );
          return at.size === its.length ? true : null;
        },
        `the killed node's ${its.length} lines connected on the survivors`,
        90_000,
        100,
      );
      const hs = await holders();
      const onSurvivors = hs.filter((x) => its.some((l) => l.instancia === x.instancia) && survivors.some((s) => s.id === x.nodo)).length;
      const concurrent = [];
      for (const l of its) concurrent.push((await control(fake, 'GET', `/lines/${l.numero}`)).maxConcurrent);
      const ms = its.map((l) => at.get(l.id));
      kills.push({
        lines: its.length,
        gone_ms: goneMs,
        margen_ms: Number(row.margen_ms),
        from_kill_ms: ms,
        held_by_survivors: onSurvivors,
        max_concurrent_sockets: Math.max(...concurrent),
        polls,
      });
      log(`    all ${its.length} connected again by ${f2(Math.max(...ms) / 1000)} s after the kill (gone at ${f2(goneMs / 1000)} s)`);
    }
  } finally {
    await Promise.all(alive().map((n) => stopQuietly(n)));
    await fake.stop();
    await db.end().catch(() => {});
    await store.drop();
    await dropRedisPrefix(redisUrl, prefix);
  }

  const fromKill = kills.flatMap((k) => k.from_kill_ms);
  const afterGone = kills.flatMap((k) => k.from_kill_ms.map((x) => x - k.gone_ms));
  const pk = percentiles(fromKill);
  const pg1 = percentiles(afterGone);
  const s = (x) => `${f2(x / 1000)} s`;
  results.push({
    figure: `17a. engine takeover after a SIGKILL, 3 nodes, ${LINES} lines`,
    measured: `after counting as gone p50 ${s(pg1.p50)}, p95 ${s(pg1.p95)}, max ${s(pg1.max)}; from the kill p50 ${s(pk.p50)}, p95 ${s(pk.p95)} (${fromKill.length} lines over ${kills.length} kills, gone at ${kills.map((k) => s(k.gone_ms)).join(', ')})`,
    baseline: 'the moment the node counts as gone (last beat + margin)',
    ratio: NaN,
    target: '<= 15 s after gone',
    met: afterGone.length > 0 && pg1.max <= 15_000,
    cpu: '-',
    detail: { lines: LINES, from_kill_ms: pk, after_gone_ms: pg1, kills },
  });
  const r = routedRow;
  results.push({
    figure: `17b. engine direct text through a node not holding the line`,
    measured: `${cpuPer(r.routed.cpu_ms_per_msg)} both nodes (${f2(r.routed.other_cpu_ms_per_msg)} + holder ${f2(r.routed.holder_cpu_ms_per_msg)}), p50 ${f0(r.routed.latency_ms.p50)} ms (${r.routed.ok} sent, ${r.routed.errors} errors)`,
    baseline: `${cpuPer(r.local.cpu_ms_per_msg)} through the holder, p50 ${f0(r.local.latency_ms.p50)} ms (${r.local.ok} sent, ${r.local.errors} errors)`,
    ratio: ratio(r.routed.cpu_ms_per_msg, r.local.cpu_ms_per_msg),
    target: 'reported',
    met: null,
    cpu: cpuPer(r.routed.cpu_ms_per_msg),
    detail: r,
  });
}
