// Figures 7 and 11: the webhook dispatcher alone (deliveries held, then
// released), and live webhooks while messages flow.
import { CONNECTIONS, DURATION_MS, LIVE_RATE, LIVE_SECONDS, WEBHOOK_EVENTS } from '../lib/options.mjs';
import { cpuMs, log, needFlags, sleep, startServe, stopQuietly } from '../lib/proc.mjs';
import { call, needPaths, setupClient, textBody, waitReceiver } from '../lib/http.mjs';
import { load, pushN, pushPaced } from '../lib/load.mjs';
import { cpuPer, f0, ratio, results } from '../lib/results.mjs';

// ---------- 7. webhook deliveries ----------

/**
 * Measures the dispatcher alone: the receiver holds (does not answer) every
 * delivery while WEBHOOK_EVENTS test events (POST /api/webhook_test.php, each
 * a row in the outbox) are generated; then it is released and the clock runs
 * from the release to the arrival of the last distinct event id. So the
 * accept path of the test events is not in the measured time. If generating
 * takes more than 8 s (a held delivery times out at 10 s), the receiver is
 * released anyway and the overlap is reported.
 */
export async function figureWebhooks(receiver) {
  const name = '7. webhook deliveries, events/s';
  needFlags('--allow-private-urls');
  const s = await startServe(['--allow-private-urls']);
  let gen;
  let rel;
  let st;
  let cpu;
  let stalled = false;
  let overlap = false;
  let base;
  let serial;
  try {
    await needPaths(s, '/api/webhook.php', '/api/webhook_test.php');
    const cli = await call(s.url, 'POST', '/admin/clientes', s.admin, { nombre: 'Bench', email: 'bench@example.com', saldo: 1000 });
    const key = cli.api_key;
    await call(receiver.url, 'POST', '/_reset');
    await call(s.url, 'POST', '/api/webhook.php', key, { url: `${receiver.url}/hooks`, secret: 'bench-secret-0123456789abcdef' });
    // Warm-up: a tenth of the events generated and delivered (receiver answering) before the measured batch.
    const warmN = Math.max(100, Math.round(WEBHOOK_EVENTS / 10));
    log(`  warm-up: ${warmN} test events delivered, unmeasured...`);
    const warm = await pushN({ origin: s.url, key, path: '/api/webhook_test.php', n: warmN, connections: 16, makeBody: () => ({}) });
    const ww = await waitReceiver(receiver, s, (x) => x.distinct_ids >= warm.ok);
    if (ww.stalled) throw new Error(`warm-up stalled: ${ww.st.distinct_ids} of ${warm.ok} delivered`);
    await call(receiver.url, 'POST', '/_reset?hold=1');
    log(`  generating ${WEBHOOK_EVENTS} test events (receiver holding deliveries)...`);
    const genP = pushN({ origin: s.url, key, path: '/api/webhook_test.php', n: WEBHOOK_EVENTS, connections: 16, makeBody: () => ({}) });
    overlap = await Promise.race([genP.then(() => false), sleep(8000).then(() => true)]);
    const cpu0 = cpuMs(s.pid);
    rel = await call(receiver.url, 'POST', '/_release');
    gen = await genP;
    log(`  released ${rel.released} held; waiting for ${gen.ok} distinct events...`);
    ({ st, stalled } = await waitReceiver(receiver, s, (x) => x.distinct_ids >= gen.ok));
    cpu = cpuMs(s.pid) - cpu0;
  } finally {
    await stopQuietly(s);
  }
  // Baseline: the same receiver taking signed-size event bodies straight from undici.
  const sample = JSON.stringify({
    id: `evt_${'0'.repeat(32)}`,
    evento: 'webhook.test',
    fecha: new Date().toISOString(),
    cliente_id: 1,
    celular_id: null,
    data: { mensaje: 'evento de prueba de pasarela' },
  });
  const hdrs = {
    'x-service-event': 'webhook.test',
    'webhook-timestamp': String(Math.floor(Date.now() / 1000)),
    'x-service-signature': `sha256=${'0'.repeat(64)}`,
  };
  const baseBody = (w, n) => sample.replace('0'.repeat(32), String(n).padStart(32, '0'));
  await call(receiver.url, 'POST', '/_reset');
  log('  baseline: undici straight to the receiver...');
  base = await load({ origin: receiver.url, pid: receiver.pid, path: '/hooks', makeBody: baseBody, extraHeaders: hdrs });
  serial = await load({
    origin: receiver.url,
    pid: receiver.pid,
    path: '/hooks',
    makeBody: baseBody,
    extraHeaders: hdrs,
    connections: 1,
    warmupMs: 300,
    durationMs: Math.min(DURATION_MS, 2000),
  });
  const spanMs = (st.last_new_id_at ?? Date.now()) - rel.at;
  const perS = (st.distinct_ids * 1000) / Math.max(1, spanMs);
  const r = ratio(perS, base.per_s);
  results.push({
    figure: name,
    measured: `${f0(perS)} events/s (${st.distinct_ids} of ${gen.ok} in ${(spanMs / 1000).toFixed(1)} s after release; ${st.duplicates} duplicates${stalled ? '; STALLED: nothing for 20 s' : ''}${overlap ? '; generation overlapped the measured time' : ''})`,
    baseline: `${f0(base.per_s)} req/s undici -> receiver, ${CONNECTIONS} conns (1 conn: ${f0(serial.per_s)}/s)`,
    ratio: r,
    target: '>= 1000 events/s',
    met: perS >= 1000 && !stalled && st.distinct_ids === WEBHOOK_EVENTS,
    cpu: cpuPer(cpu / Math.max(1, st.distinct_ids), 'event'),
    detail: {
      events: WEBHOOK_EVENTS,
      generation: gen,
      released: rel,
      receiver: st,
      span_ms: spanMs,
      server_cpu_ms: cpu,
      generation_overlapped: overlap,
      stalled,
      baseline: base,
      baseline_one_connection: serial,
    },
  });
}

// ---------- 11. live webhooks while messages flow ----------

/**
 * One client, one instant receiver (answers at once), the flags of figure 2,
 * 50 lines, the client's webhook on message.status (four events a message).
 * (a) LIVE_SECONDS of directo sends at LIVE_RATE/2 per second and queued
 * ones at LIVE_RATE/2 beside them (open loop), after two seconds of the same
 * unmeasured: events/s delivered while sending (the receiver's distinct
 * events between the first and the last send). (b) Queued sends at
 * LIVE_RATE/s for LIVE_SECONDS: the share of their events the receiver has
 * 5 s after the last send, and when the last arrived.
 */
export async function figureLive(receiver) {
  needFlags('--queue-gap-ms', '--sim-delivery-ms', '--sim-read-ms', '--allow-private-urls');
  const s = await startServe(['--queue-gap-ms', '0-0', '--sim-delivery-ms', '1', '--sim-read-ms', '1', '--allow-private-urls']);
  let a;
  let b;
  try {
    await needPaths(s, '/api/webhook.php');
    const c = await setupClient(s, 50);
    await call(receiver.url, 'POST', '/_reset');
    await call(s.url, 'POST', '/api/webhook.php', c.key, { url: `${receiver.url}/hooks`, secret: 'bench-secret-0123456789abcdef', eventos: 'message.status' });
    let seq = 1_000_000;
    const send = (perS, seconds, directo) =>
      pushPaced({
        origins: [s.url],
        key: c.key,
        path: '/api/mensaje_enviar_texto.php',
        n: Math.round(perS * seconds),
        perS,
        connections: 50,
        makeBody: () => textBody(c.lines, seq, seq++, directo),
      });
    const mixed = (seconds) => Promise.all([send(LIVE_RATE / 2, seconds, true), send(LIVE_RATE / 2, seconds, false)]);
    const allDone = async (pushes) => {
      const ok = pushes.reduce((x, p) => x + p.ok, 0);
      return { ok, ...(await waitReceiver(receiver, s, (x) => x.messages_done >= ok)) };
    };
    log(`  warm-up: 2 s of ${LIVE_RATE / 2}/s directo + ${LIVE_RATE / 2}/s queued, unmeasured...`);
    const warm = await allDone(await mixed(2));
    if (warm.stalled) throw new Error(`warm-up stalled: ${warm.st.messages_done} of ${warm.ok} done`);
    await call(receiver.url, 'POST', '/_reset');

    log(`  (a) ${LIVE_SECONDS} s of ${LIVE_RATE / 2}/s directo + ${LIVE_RATE / 2}/s queued...`);
    const cpu0 = cpuMs(s.pid);
    const pushes = mixed(LIVE_SECONDS);
    const at0 = Date.now();
    const st0 = await call(receiver.url, 'GET', '/_stats');
    const [dir, que] = await pushes;
    const lastSent = Math.max(dir.last_sent_at, que.last_sent_at);
    // The receiver's count when the last request went out (the answers may still be in flight).
    await sleep(Math.max(0, lastSent - Date.now()));
    const st1 = await call(receiver.url, 'GET', '/_stats');
    const at1 = Date.now();
    const cpu1 = cpuMs(s.pid);
    const fin = await allDone([dir, que]);
    const cpu2 = cpuMs(s.pid);
    a = {
      directo: dir,
      queued: que,
      window_ms: at1 - at0,
      events_in_window: st1.distinct_ids - st0.distinct_ids,
      events_per_s: ((st1.distinct_ids - st0.distinct_ids) * 1000) / Math.max(1, at1 - at0),
      events_by_estado_in_window: Object.fromEntries(Object.entries(st1.by_estado).map(([k, v]) => [k, v - (st0.by_estado[k] ?? 0)])),
      server_cpu_ms_sending: cpu1 - cpu0,
      // Sends, receipts and deliveries of the window's messages, up to their last event.
      server_cpu_ms_per_msg: (cpu2 - cpu0) / Math.max(1, fin.st.messages_done),
      messages_done: fin.st.messages_done,
      events_total: fin.st.distinct_ids,
      last_event_after_last_send_ms: (fin.st.last_new_id_at ?? Date.now()) - lastSent,
      stalled: fin.stalled,
      duplicates: fin.st.duplicates,
    };
    await call(receiver.url, 'POST', '/_reset');

    log(`  (b) ${LIVE_SECONDS} s of ${LIVE_RATE}/s queued...`);
    const q = await send(LIVE_RATE, LIVE_SECONDS, false);
    await sleep(Math.max(0, q.last_sent_at + 5000 - Date.now()));
    const at5 = await call(receiver.url, 'GET', '/_stats');
    const lateBy = Date.now() - (q.last_sent_at + 5000);
    const fin2 = await allDone([q]);
    const expected = 4 * q.ok;
    b = {
      queued: q,
      expected_events: expected,
      events_at_5s: at5.distinct_ids,
      share_within_5s: at5.distinct_ids / Math.max(1, expected),
      read_late_ms: lateBy,
      messages_done: fin2.st.messages_done,
      events_total: fin2.st.distinct_ids,
      last_event_after_last_send_ms: (fin2.st.last_new_id_at ?? Date.now()) - q.last_sent_at,
      stalled: fin2.stalled,
      duplicates: fin2.st.duplicates,
    };
  } finally {
    await stopQuietly(s);
  }
  const sendRate = (p) => `${f0(p.accepted_per_s)}/s`;
  results.push({
    figure: '11a. live webhooks while sending, events/s',
    measured:
      `${f0(a.events_per_s)} events/s over ${(a.window_ms / 1000).toFixed(1)} s of sending (directo ${sendRate(a.directo)}, queued ${sendRate(a.queued)} accepted;` +
      ` ${a.messages_done} of ${a.directo.ok + a.queued.ok} done, the last event ${(a.last_event_after_last_send_ms / 1000).toFixed(1)} s after the last send${a.stalled ? ' STALLED' : ''})`,
    baseline: '- (absolute target)',
    ratio: NaN,
    target: '>= 1000 events/s',
    met: a.events_per_s >= 1000 && !a.stalled,
    cpu: cpuPer(a.server_cpu_ms_per_msg),
    detail: { rate_per_s: LIVE_RATE, seconds: LIVE_SECONDS, ...a },
  });
  results.push({
    figure: `11b. ${LIVE_RATE} queued sends/s, events within 5 s of the last send`,
    measured: `${(b.share_within_5s * 100).toFixed(1)}% (${b.events_at_5s} of ${b.expected_events}; ${sendRate(b.queued)} accepted; all ${b.events_total} by ${(b.last_event_after_last_send_ms / 1000).toFixed(1)} s after the last send${b.stalled ? ' STALLED' : ''})`,
    baseline: '- (absolute)',
    ratio: b.share_within_5s,
    target: 'reported',
    met: null,
    cpu: '-',
    detail: { rate_per_s: LIVE_RATE, seconds: LIVE_SECONDS, ...b },
  });
}
