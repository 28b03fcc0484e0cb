#!/usr/bin/env node
// The webhook receiver of bench/run.mjs: a bare node:http server in its own
// process that answers every POST with 204 and counts what it got.
//
//   node bench/receiver.mjs   -> prints "receiver listening on http://127.0.0.1:PORT" to stderr
//
// Control routes (not counted):
//   GET  /_stats            counts (see stats() below)
//   POST /_reset[?hold=1]   forget everything; with hold=1, keep every event request
//                           open (unanswered) until /_release
//   POST /_release          answer the held requests and stop holding
// Every other request is an event: its JSON body's `id` (webhook id), `evento`
// and, for message.status, `data.estado` and `data.msg_id` are recorded. A
// message is "done" once all four states (pendiente, enviado, entregado,
// leido) have arrived for its msg_id; the time the last one arrived is kept.
import { createServer } from 'node:http';

const ESTADOS = { pendiente: 1, enviado: 2, entregado: 4, leido: 8 };
const ALL = 15;

let s;
function reset(hold) {
  s = {
    hold,
    held: [],
    requests: 0,
    bad_json: 0,
    ids: new Set(),
    duplicates: 0,
    by_evento: {},
    by_estado: {},
    first_at: null,
    last_at: null,
    last_new_id_at: null,
    masks: new Map(),
    done: 0,
    done_first_at: null,
    done_last_at: null,
  };
}
reset(false);

function record(body) {
  const now = Date.now();
  s.requests += 1;
  s.first_at ??= now;
  s.last_at = now;
  let parsed;
  try {
    parsed = JSON.parse(body);
  } catch {
    s.bad_json += 1;
    return;
  }
  // One event per request today; a batch (an array of events) is counted event by event.
  for (const ev of Array.isArray(parsed) ? parsed : [parsed]) recordEvent(ev, now);
}

function recordEvent(ev, now) {
  if (typeof ev?.id === 'string') {
    if (s.ids.has(ev.id)) s.duplicates += 1;
    else {
      s.ids.add(ev.id);
      s.last_new_id_at = now;
    }
  }
  const evento = String(ev?.evento);
  s.by_evento[evento] = (s.by_evento[evento] ?? 0) + 1;
  if (evento === 'message.status') {
    const estado = String(ev.data?.estado);
    s.by_estado[estado] = (s.by_estado[estado] ?? 0) + 1;
    const bit = ESTADOS[estado];
    const msg = ev.data?.msg_id;
    if (bit && typeof msg === 'string') {
      const before = s.masks.get(msg) ?? 0;
      const after = before | bit;
      s.masks.set(msg, after);
      if (after === ALL && before !== ALL) {
        s.done += 1;
        s.done_first_at ??= now;
        s.done_last_at = now;
      }
    }
  }
}

function stats() {
  return {
    hold: s.hold,
    held: s.held.length,
    requests: s.requests,
    bad_json: s.bad_json,
    distinct_ids: s.ids.size,
    duplicates: s.duplicates,
    by_evento: s.by_evento,
    by_estado: s.by_estado,
    first_at: s.first_at,
    last_at: s.last_at,
    last_new_id_at: s.last_new_id_at,
    messages_seen: s.masks.size,
    messages_done: s.done,
    done_first_at: s.done_first_at,
    done_last_at: s.done_last_at,
  };
}

const server = createServer((req, res) => {
  const path = req.url ?? '/';
  if (req.method === 'GET' && path === '/_stats') {
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(stats()));
    return;
  }
  if (req.method === 'POST' && path.startsWith('/_reset')) {
    for (const r of s.held) r.writeHead(204).end();
    reset(/[?&]hold=1/.test(path));
    res.writeHead(204).end();
    return;
  }
  if (req.method === 'POST' && path === '/_release') {
    const n = s.held.length;
    s.hold = false;
    for (const r of s.held.splice(0)) r.writeHead(204).end();
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ released: n, at: Date.now() }));
    return;
  }
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    record(Buffer.concat(chunks).toString('utf8'));
    if (s.hold) s.held.push(res);
    else res.writeHead(204).end();
  });
});
server.keepAliveTimeout = 30_000;
server.listen(0, '127.0.0.1', () => {
  const a = server.address();
  process.stderr.write(`receiver listening on http://127.0.0.1:${a.port}\n`);
});
const stop = () => server.close(() => process.exit(0)) && server.closeAllConnections();
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
