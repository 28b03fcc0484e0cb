import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/core/time/clock.js';
import type { MessageStatusBusEvent } from '../../src/core/events/events.js';
import type { SimGateway } from '../../src/gateways/sim.js';
import { api, startTestServer, tempDir, type TestServer } from '../helpers/server.js';
import { describeWith, postgres, schemaUrl } from '../helpers/services.js';
import { pgSchema } from '../contract/adapters.js';
import { admin, b64, editCelular, linkedLine, numeroNuevo, PNG, send, TEXT, uniqueText, waitEstado, type Line } from './send-helpers.js';
import { startReceiver, type Receiver } from './webhook-helpers.js';
import { until } from '../helpers/poll.js';

/**
 * GET /metrics (docs/metrics.md): the operator token on the API's port, none
 * on --metrics-listen; after real traffic through the real server (sends
 * queued and direct through the simulator, receipts, webhook deliveries, a
 * line linked and logged out), each counter moved by what happened, and the
 * store's gauges say what the store holds. On PostgreSQL, two nodes of one
 * store report the same store gauges and their own counters.
 */

type Labels = Record<string, string>;
interface Sample {
  name: string;
  labels: Labels;
  value: number;
}

/** The text exposition format, as Prometheus reads it: `name{label="value",...} value` lines; comments skipped. */
function parse(text: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) throw new Error(`not an exposition line: ${line}`);
    const labels: Labels = {};
    for (const l of (m[2] ?? '').matchAll(/([a-zA-Z_]\w*)="((?:[^"\\]|\\.)*)"/g))
      labels[l[1]!] = l[2]!.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
    out.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return out;
}

/** The metric families a scrape declares (`# TYPE name type`), with their types. */
function families(text: string): Map<string, string> {
  return new Map([...text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map((m) => [m[1]!, m[2]!]));
}

const doc = (path: string) => readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8');

class Scrape {
  constructor(readonly samples: Sample[]) {}
  /** The sum over the samples of `name` whose labels include `labels` (0 when none). */
  get(name: string, labels: Labels = {}): number {
    return this.samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v)).reduce((a, s) => a + s.value, 0);
  }
  has(name: string): boolean {
    return this.samples.some((s) => s.name === name);
  }
}

async function scrape(s: TestServer): Promise<Scrape> {
  const r = await api(s.url, 'GET', '/metrics', { key: s.adminToken });
  expect(r.status, r.text).toBe(200);
  return new Scrape(parse(r.text));
}

/** What moved between two scrapes, for one series (or the sum of the series matching `labels`). */
const moved = (before: Scrape, after: Scrape, name: string, labels: Labels = {}) => after.get(name, labels) - before.get(name, labels);

const sim = (s: TestServer) => s.core.gateway as unknown as SimGateway;
const HTTP_COUNT = 'pasarela_http_request_duration_seconds_count';

describe('GET /metrics on one SQLite node', () => {
  let s: TestServer;
  let receiver: Receiver;
  beforeAll(async () => {
    receiver = await startReceiver(200);
    s = await startTestServer({
      allowPrivateUrls: true,
      queue: { gapMinMs: 0, gapMaxMs: 0 },
      simDeliveryMs: 30,
      simReadMs: 60,
      healthIntervalMs: 0,
      metricsCacheMs: 0,
      metricsListen: { host: '127.0.0.1', port: 0 },
    });
  });
  afterAll(async () => {
    await s?.stop();
    await receiver?.close();
  });

  it('needs the operator token: 401 JSON without it or with a client key; with it, the text format and the process metrics', async () => {
    const none = await api(s.url, 'GET', '/metrics');
    expect(none.status).toBe(401);
    expect(none.headers.get('content-type')).toMatch(/^application\/json/);
    expect(none.body).toMatchObject({ ok: false, api_codigo: expect.any(Number) });
    const line = await linkedLine(s, { link: false });
    expect((await api(s.url, 'GET', '/metrics', { key: line.clientKey })).status).toBe(401);
    expect((await api(s.url, 'GET', '/metrics', { key: 'x'.repeat(64) })).status).toBe(401);

    const r = await api(s.url, 'GET', '/metrics', { key: s.adminToken });
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
    const m = new Scrape(parse(r.text));
    expect(m.get('pasarela_info', { store: 'sqlite', gateway: 'sim' })).toBe(1);
    expect(m.get('pasarela_store_stats_up')).toBe(1);
    for (const name of ['process_cpu_user_seconds_total', 'process_resident_memory_bytes', 'nodejs_heap_size_used_bytes', 'nodejs_eventloop_lag_seconds'])
      expect(m.has(name), name).toBe(true);
    // Every known label value is there from the start, at 0.
    expect(m.samples.filter((x) => x.name === 'pasarela_sends_accepted_total')).toHaveLength(12);
    // Not part of the JSON API: left out of the OpenAPI document.
    expect((await api(s.url, 'GET', '/openapi.json')).body.paths).not.toHaveProperty(['/metrics']);
  });

  it('sends, receipts, gateway calls, webhook deliveries and HTTP requests move their counters by what happened', async () => {
    const line = await linkedLine(s, { saldo: 100 });
    const cfg = await api(s.url, 'POST', '/api/webhook.php', { key: line.clientKey, json: { url: `${receiver.url}/hooks`, eventos: ['message.status'] } });
    expect(cfg.status, cfg.text).toBe(200);
    const events: MessageStatusBusEvent[] = [];
    const unsub = s.core.bus.subscribe('message.status', (e) => events.push(e));
    const before = await scrape(s);

    const ids: string[] = [];
    for (let i = 0; i < 2; i++) {
      const r = await send(s, line, TEXT, { destinatario: numeroNuevo(), mensaje: uniqueText('cola') });
      expect(r.status, r.text).toBe(200);
      ids.push(r.body.msg_id);
    }
    const direct = await send(s, line, TEXT, { destinatario: numeroNuevo(), mensaje: uniqueText('directo'), directo: 1 });
    expect(direct.status, direct.text).toBe(200);
    ids.push(direct.body.msg_id);
    const image = await send(s, line, '/api/mensaje_enviar_imagen_base64.php', { destinatario: numeroNuevo(), imageBase64: b64(PNG), directo: 1 });
    expect(image.status, image.text).toBe(200);
    ids.push(image.body.msg_id);
    // Refused for good by the network: 502/704, a send finished in error.
    const refused = numeroNuevo();
    expect((await admin(s, 'POST', '/admin/sim/fail', { numero: refused, motivo: 'not on the network' })).status).toBe(200);
    const failed = await send(s, line, TEXT, { destinatario: refused, mensaje: uniqueText('falla'), directo: 1 });
    expect(failed.status, failed.text).toBe(502);
    expect((await api(s.url, 'GET', '/no/such/route')).status).toBe(404);
    for (const id of ids) await waitEstado(s, id, 'leido', 15_000);
    // Every message.status event of the client delivered (5 accepted, 4 sent, 1 failed, 4 delivered, 4 read), and recorded.
    await until(() => receiver.hits.length >= 18, { what: 'the webhook deliveries', timeoutMs: 15_000 });
    await until(async () => moved(before, await scrape(s), 'pasarela_webhook_attempts_total', { estado: 'entregado' }) === receiver.hits.length, {
      what: 'the attempts recorded',
      timeoutMs: 15_000,
    });
    unsub();
    const after = await scrape(s);
    const d = (name: string, labels: Labels = {}) => moved(before, after, name, labels);

    expect(d('pasarela_sends_accepted_total', { tipo: 'texto', modo: 'cola' })).toBe(2);
    expect(d('pasarela_sends_accepted_total', { tipo: 'texto', modo: 'directo' })).toBe(2);
    expect(d('pasarela_sends_accepted_total', { tipo: 'imagen', modo: 'directo' })).toBe(1);
    expect(d('pasarela_sends_accepted_total')).toBe(5);
    expect(d('pasarela_sends_finished_total', { tipo: 'texto', modo: 'cola', estado: 'enviado' })).toBe(2);
    expect(d('pasarela_sends_finished_total', { tipo: 'texto', modo: 'directo', estado: 'enviado' })).toBe(1);
    expect(d('pasarela_sends_finished_total', { tipo: 'imagen', modo: 'directo', estado: 'enviado' })).toBe(1);
    expect(d('pasarela_sends_finished_total', { tipo: 'texto', modo: 'directo', estado: 'error' })).toBe(1);
    expect(d('pasarela_sends_finished_total')).toBe(5);
    expect(d('pasarela_message_receipts_total', { estado: 'leido' })).toBe(4);
    expect(d('pasarela_message_receipts_total', { tipo: 'texto', modo: 'cola', estado: 'leido' })).toBe(2);
    // One per entregado on the bus, whether it came after the send's record or landed with it (pendiente -> entregado);
    // receipts that both beat the record land as one change to leido, so the bus, not the count of messages, says how many.
    const entregados = events.filter((e) => e.estado === 'entregado').length;
    expect(entregados).toBeGreaterThanOrEqual(1);
    expect(d('pasarela_message_receipts_total', { estado: 'entregado' })).toBe(entregados);

    expect(d('pasarela_gateway_calls_total', { operation: 'send', outcome: 'ok' })).toBe(4);
    expect(d('pasarela_gateway_calls_total', { operation: 'send', outcome: 'permanent' })).toBe(1);
    expect(d('pasarela_gateway_call_duration_seconds_count', { operation: 'send' })).toBe(5);

    expect(d(HTTP_COUNT, { route: TEXT, method: 'POST', status: '200' })).toBe(3);
    expect(d(HTTP_COUNT, { route: TEXT, method: 'POST', status: '502' })).toBe(1);
    expect(d(HTTP_COUNT, { route: '/api/mensaje_enviar_imagen_base64.php', method: 'POST', status: '200' })).toBe(1);
    expect(d(HTTP_COUNT, { route: 'unmatched', method: 'GET', status: '404' })).toBe(1);
    // The raw path of a 404 never becomes a label.
    expect(after.samples.some((x) => x.labels.route === '/no/such/route')).toBe(false);
    expect(d(HTTP_COUNT, { route: '/metrics', method: 'GET', status: '200' })).toBeGreaterThanOrEqual(1);

    expect(receiver.hits.length).toBe(18);
    expect(d('pasarela_webhook_attempts_total', { estado: 'entregado' })).toBe(18);
    expect(d('pasarela_webhook_attempts_total', { estado: 'pendiente' })).toBe(0);
    expect(d('pasarela_webhook_attempt_duration_seconds_count')).toBe(18);
    expect(d('pasarela_webhook_delivery_latency_seconds_count')).toBe(18);
    expect(after.get('pasarela_webhook_backlog')).toBe(0);
    expect(after.get('pasarela_queue_pending')).toBe(0);
    expect(after.get('pasarela_queue_oldest_pending_age_seconds')).toBe(0);
  });

  it('the webhook backlog counts a delivery waiting for its retry; queue depth and the oldest pending age come from the store', async () => {
    const failing = await startReceiver(500);
    try {
      const line = await linkedLine(s, { saldo: 10 });
      await api(s.url, 'POST', '/api/webhook.php', { key: line.clientKey, json: { url: `${failing.url}/hooks`, eventos: ['session.status'] } });
      const before = await scrape(s);
      expect((await api(s.url, 'POST', '/api/webhook_test.php', { key: line.clientKey })).status).toBe(200);
      await until(async () => moved(before, await scrape(s), 'pasarela_webhook_attempts_total', { estado: 'pendiente' }) === 1, { what: 'the failed attempt' });
      let now = await scrape(s);
      expect(failing.hits).toHaveLength(1);
      // Retried 5 s later by the server's clock, which only the test moves.
      expect(now.get('pasarela_webhook_backlog', { state: 'scheduled' })).toBe(1);
      expect(now.get('pasarela_webhook_backlog', { state: 'due' })).toBe(0);
      expect(moved(before, now, 'pasarela_webhook_delivery_latency_seconds_count')).toBe(0);
      await api(s.url, 'DELETE', '/api/webhook.php', { key: line.clientKey });

      // The gateway down: a queued send stays pendiente, retried later.
      sim(s).setOutage(true);
      const r = await send(s, line, TEXT, { destinatario: numeroNuevo(), mensaje: uniqueText('espera') });
      expect(r.status, r.text).toBe(200);
      await until(async () => moved(before, await scrape(s), 'pasarela_gateway_calls_total', { operation: 'send', outcome: 'transient' }) >= 1, {
        what: 'a transient failure',
      });
      now = await scrape(s);
      expect(now.get('pasarela_queue_pending')).toBe(1);
      expect(now.get('pasarela_queue_oldest_pending_age_seconds')).toBe(0);
      expect(moved(before, now, 'pasarela_sends_finished_total')).toBe(0);
      (s.clock as ManualClock).advance(90_000);
      expect((await scrape(s)).get('pasarela_queue_oldest_pending_age_seconds')).toBe(90);

      sim(s).setOutage(false);
      await waitEstado(s, r.body.msg_id, ['enviado', 'entregado', 'leido'], 15_000);
      now = await scrape(s);
      expect(now.get('pasarela_queue_pending')).toBe(0);
      expect(now.get('pasarela_queue_oldest_pending_age_seconds')).toBe(0);
      expect(moved(before, now, 'pasarela_sends_finished_total', { tipo: 'texto', modo: 'cola', estado: 'enviado' })).toBe(1);
    } finally {
      sim(s).setOutage(false);
      await failing.close();
    }
  });

  it('lines by estado and session status, and session changes, follow a linking and a logout', async () => {
    const before = await scrape(s);
    const line = await linkedLine(s, { link: false });
    let now = await scrape(s);
    expect(moved(before, now, 'pasarela_lines', { estado: 'desconectado', session: 'unknown' })).toBe(1);
    expect(moved(before, now, 'pasarela_lines')).toBe(1);

    const qr = await api(s.url, 'POST', `/api/celular_qr.php?id=${line.celularId}`, { key: line.clientKey });
    expect(qr.status, qr.text).toBe(200);
    expect((await admin(s, 'POST', '/admin/sim/scan', { celular_id: line.celularId })).status).toBe(200);
    await until(async () => (await s.core.store.getCelular(line.celularId))?.estado === 'activo', { what: 'the line activo' });
    now = await scrape(s);
    expect(moved(before, now, 'pasarela_lines', { estado: 'activo', session: 'connected' })).toBe(1);
    expect(moved(before, now, 'pasarela_lines', { estado: 'desconectado' })).toBe(0);
    expect(moved(before, now, 'pasarela_session_changes_total', { status: 'need_scan' })).toBe(1);
    expect(moved(before, now, 'pasarela_session_changes_total', { status: 'connected' })).toBe(1);
    expect(moved(before, now, 'pasarela_gateway_calls_total', { operation: 'connect', outcome: 'ok' })).toBe(1);

    expect((await admin(s, 'POST', '/admin/sim/logout', { celular_id: line.celularId })).status).toBe(200);
    await until(async () => (await s.core.store.getCelular(line.celularId))?.last_status === 'logged_out', { what: 'the line logged out' });
    now = await scrape(s);
    expect(moved(before, now, 'pasarela_lines', { estado: 'desconectado', session: 'logged_out' })).toBe(1);
    expect(moved(before, now, 'pasarela_lines', { estado: 'activo', session: 'connected' })).toBe(0);
    expect(moved(before, now, 'pasarela_session_changes_total', { status: 'logged_out' })).toBe(1);
  });

  it('docs/metrics.md documents every pasarela_ family with its type; the Grafana dashboard queries only metrics that exist', async () => {
    const text = (await api(s.url, 'GET', '/metrics', { key: s.adminToken })).text;
    const declared = [...families(text)].filter(([name]) => name.startsWith('pasarela_'));
    expect(declared.length).toBe(25);
    const reference = doc('docs/metrics.md');
    for (const [name, type] of declared) expect(reference, name).toMatch(new RegExp(`^\\| \`${name}\` \\| ${type}`, 'm'));

    const dashboard = JSON.parse(doc('docs/grafana-dashboard.json'));
    expect(dashboard.__inputs).toEqual([expect.objectContaining({ name: 'DS_PROMETHEUS', type: 'datasource', pluginId: 'prometheus' })]);
    const panels = dashboard.panels.filter((p: { type: string }) => p.type !== 'row');
    expect(panels.length).toBeGreaterThan(10);
    const exprs: string[] = panels.flatMap((p: { datasource: { uid: string }; targets: Array<{ expr: string }> }) => {
      expect(p.datasource.uid).toBe('${DS_PROMETHEUS}');
      return p.targets.map((t) => t.expr);
    });
    const names = new Set(declared.map(([name]) => name));
    for (const used of new Set(exprs.flatMap((e) => e.match(/\bpasarela_\w+/g) ?? []))) {
      expect(names.has(used.replace(/_(bucket|count|sum)$/, '')), used).toBe(true);
    }
    // Store gauges are the store's: never summed across nodes.
    for (const e of exprs) expect(e).not.toMatch(/sum\((?:rate\()?pasarela_(queue|webhook_backlog|lines)/);
  });

  it('--metrics-listen serves /metrics without credentials, the same registry, and nothing else', async () => {
    expect(s.metricsUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
    const r = await fetch(s.metricsUrl!);
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
    const open = new Scrape(parse(await r.text()));
    const main = await scrape(s);
    expect(open.get('pasarela_sends_accepted_total')).toBe(main.get('pasarela_sends_accepted_total'));
    expect(open.get('pasarela_info', { gateway: 'sim' })).toBe(1);
    const base = s.metricsUrl!.replace(/\/metrics$/, '');
    expect((await fetch(`${base}/health`)).status).toBe(404);
    expect((await fetch(`${base}/admin/clientes`)).status).toBe(404);
    expect((await fetch(s.metricsUrl!, { method: 'POST' })).status).toBe(404);
    // The API's port still wants the token.
    expect((await api(s.url, 'GET', '/metrics')).status).toBe(401);
  });
});

describeWith(postgres, 'GET /metrics on two nodes of one PostgreSQL store', () => {
  const servers: TestServer[] = [];
  let drop: () => Promise<void> = async () => {};
  afterAll(async () => {
    for (const x of servers) await x.stop().catch(() => undefined);
    await drop();
  });

  it("store gauges are the store's, the same on every node; counters are each node's own", async () => {
    const schema = await pgSchema();
    drop = schema.drop;
    const u = new URL(schemaUrl(schema.schema));
    // Noon UTC, the line's window 13:00-14:00: what is queued waits, on whichever node.
    const t = Date.UTC(2026, 0, 5, 12, 0);
    const common = { store: u.toString(), tz: 'UTC', healthIntervalMs: 0, metricsCacheMs: 0, queue: { gapMinMs: 0, gapMaxMs: 0 } };
    const a = await startTestServer({ ...common, clock: new ManualClock(t) });
    servers.push(a);
    const b = await startTestServer({ ...common, clock: new ManualClock(t), dataDir: tempDir() });
    servers.push(b);
    const line: Line = await linkedLine(a, { saldo: 10 });
    await editCelular(a, line, { hora_inicio_permitido: '13:00', hora_fin_permitido: '14:00' });
    const [beforeA, beforeB] = [await scrape(a), await scrape(b)];
    for (const [node, n] of [
      [a, 2],
      [b, 1],
    ] as const) {
      for (let i = 0; i < n; i++) expect((await send(node, line, TEXT, { destinatario: numeroNuevo(), mensaje: uniqueText('pg') })).status).toBe(200);
    }
    (a.clock as ManualClock).advance(60_000);
    (b.clock as ManualClock).advance(60_000);
    const [ma, mb] = [await scrape(a), await scrape(b)];
    for (const m of [ma, mb]) {
      expect(m.get('pasarela_info', { store: 'postgres' })).toBe(1);
      expect(m.get('pasarela_store_stats_up')).toBe(1);
      expect(m.get('pasarela_queue_pending')).toBe(3);
      expect(m.get('pasarela_queue_oldest_pending_age_seconds')).toBe(60);
      expect(m.get('pasarela_lines', { estado: 'activo', session: 'connected' })).toBe(1);
      expect(m.get('pasarela_webhook_backlog')).toBe(0);
    }
    expect(moved(beforeA, ma, 'pasarela_sends_accepted_total', { tipo: 'texto', modo: 'cola' })).toBe(2);
    expect(moved(beforeB, mb, 'pasarela_sends_accepted_total', { tipo: 'texto', modo: 'cola' })).toBe(1);
  });
});
