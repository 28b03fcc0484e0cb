import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Principal } from '../../../core/auth/auth.js';
import { iso } from '../../../core/time/clock.js';
import {
  CHART_ESTADOS,
  estadisticas,
  RANGOS,
  type EnviosBar,
  type Estadisticas,
  type EstadisticasQuery,
  type MuestraBar,
} from '../../../core/charts/charts.js';
import { estadisticasQuerystring } from '../../routes/admin-estadisticas.js';
import { lines, stackedBars, type ChartSpec } from '../chart-svg.js';
import { clientScope, panelOf, requireOperator, signedIn } from '../context.js';
import { field, formErrorsOf, generalError, NO_ERRORS, selectField, type FormErrors } from '../forms.js';
import { html, type Html } from '../html.js';
import type { PanelDeps } from '../index.js';
import { sendPage } from '../layout.js';
import { cidOf, type Column, dropEmptyFilters, listTable, typedFilters } from '../listing.js';
import { lineOptions } from '../listing-page.js';
import { shortTime, timeTag } from '../time.js';

/**
 * The charts (D-100, D-101): `/panel/graficas` for the operator (everyone's
 * sends, a client's or a line's, and the queue and webhook samples) and
 * `/panel/c/:cid/graficas` for a client (its sends, all lines or one). The
 * figures are GET /admin/estadisticas's, read by the same schema and core;
 * each chart is an SVG drawn here, its numbers in a table beside it.
 */

const RANGE_LABELS: Record<string, string> = { '1h': 'Last hour (per minute)', '24h': 'Last 24 hours (per quarter hour)', '7d': 'Last 7 days (per hour)' };

/** Labels under the axis: five, evenly spread, as UTC hours and minutes (with the day on the week's). */
function ticks(e: Estadisticas): Array<{ at: number; label: string }> {
  const n = e.envios.length;
  return [0, 0.25, 0.5, 0.75, 1].map((f) => {
    const at = Math.min(n - 1, Math.round(f * (n - 1)));
    const t = e.envios[at]!.desde;
    return { at, label: e.rango === '7d' ? `${t.slice(5, 10)} ${t.slice(11, 13)}h` : t.slice(11, 16) };
  });
}

const bar = (d: string) => shortTime(Date.parse(d));
const dash = (v: number | null) => (v === null ? '–' : v);

/** A bar's start or end as a `<time>`; given as ms where the caller has them. */
const at = (d: string | number) => timeTag(d);

/** A row of the sends' numbers: one bar, or a run of bars without messages (to: the end of its last bar). */
type EnviosRow = Omit<EnviosBar, 'desde'> & { desde: number; hasta: number; barras: number };

/**
 * The sends' numbers as rows: each bar with messages, and each run of bars
 * without any as one row, so the last hour is a few rows (a few cards at
 * 390 px), not 60 of zeros. Each row's end is given, so the header's "to"
 * (the last bar's end) is seen to match the table.
 */
function enviosRows(e: Estadisticas): EnviosRow[] {
  // Bars are consecutive from e.desde: each one's end is counted, not parsed from its start (a day is 96 bars).
  const start = Date.parse(e.desde);
  const step = e.paso_s * 1000;
  const rows: EnviosRow[] = [];
  e.envios.forEach((b, i) => {
    const prev = rows.at(-1);
    if (b.total === 0 && prev && prev.total === 0) {
      prev.hasta = start + (i + 1) * step;
      prev.barras++;
    } else rows.push({ ...b, desde: start + i * step, hasta: start + (i + 1) * step, barras: 1 });
  });
  return rows;
}

const ENVIOS_COLUMNS: Array<Column<EnviosRow>> = [
  { label: 'From', cls: 'nowrap', cell: (b) => at(b.desde) },
  { label: 'To', cls: 'nowrap', cell: (b) => at(b.hasta) },
  ...CHART_ESTADOS.map((s) => ({ label: s, cls: 'num', cell: (b: EnviosRow) => b[s] })),
  { label: 'total', cls: 'num', cell: (b) => b.total },
  { label: 'bars', cls: 'num', cell: (b) => b.barras },
];

/** A row of the samples' numbers: one bar, or a run of bars that read the same (to: the end of its last bar). */
type MuestraRow = MuestraBar & { hasta: string; barras: number };

const unsampled = (b: MuestraBar) => b.cola === null && b.entregas_ok + b.entregas_fallidas === 0;
const readings = (b: MuestraBar) => [b.cola, b.mas_antiguo_s, b.entregas_ok, b.entregas_fallidas, b.latencia_p50_ms, b.latencia_p95_ms].join();

/**
 * The samples as rows, as the sends': bars in a row that read the same (none
 * sampled, or an idle queue with no webhook attempt, minute after minute) are
 * one row, so a quiet hour is a few cards at 390 px, not 60 (D-130).
 */
function muestraRows(e: Estadisticas, m: MuestraBar[]): MuestraRow[] {
  const end = (b: MuestraBar) => new Date(Date.parse(b.desde) + e.paso_s * 1000).toISOString();
  const rows: MuestraRow[] = [];
  for (const b of m) {
    const prev = rows.at(-1);
    if (prev && readings(prev) === readings(b)) {
      prev.hasta = end(b);
      prev.barras++;
    } else rows.push({ ...b, hasta: end(b), barras: 1 });
  }
  return rows;
}

const MUESTRA_COLUMNS: Array<Column<MuestraRow>> = [
  { label: 'From', cls: 'nowrap', cell: (b) => at(b.desde) },
  { label: 'To', cls: 'nowrap', cell: (b) => at(b.hasta) },
  { label: 'Queued', cls: 'num', cell: (b) => dash(b.cola) },
  { label: 'Oldest (s)', cls: 'num', cell: (b) => dash(b.mas_antiguo_s) },
  { label: 'Webhooks 2xx', cls: 'num', cell: (b) => b.entregas_ok },
  { label: 'Failed', cls: 'num', cell: (b) => b.entregas_fallidas },
  { label: 'p50 (ms)', cls: 'num', cell: (b) => dash(b.latencia_p50_ms) },
  { label: 'p95 (ms)', cls: 'num', cell: (b) => dash(b.latencia_p95_ms) },
  { label: 'bars', cls: 'num', cell: (b) => b.barras },
];

function sendsChart(e: Estadisticas, who: string): Html {
  const total = e.envios.reduce((a, b) => a + b.total, 0);
  const busiest = Math.max(0, ...e.envios.map((b) => b.total));
  const spec: ChartSpec = {
    id: 'c-envios',
    title: `Messages created per ${e.paso_s / 60 >= 60 ? 'hour' : e.paso_s === 60 ? 'minute' : 'quarter hour'}, by estado now`,
    desc: `${who}: ${total} messages created from ${bar(e.desde)} to ${bar(e.hasta)}; at most ${busiest} in one bar. The numbers are in the table below.`,
    series: CHART_ESTADOS.map((s) => ({ key: s, label: s })),
    bars: e.envios.map((b) => CHART_ESTADOS.map((s) => b[s])),
    ticks: ticks(e),
    unit: 'messages',
  };
  // Every bar is listed, empty ones too: the table is the chart in words, and its cost follows the range, never the traffic.
  const busy = e.envios.filter((b) => b.total > 0).length;
  return html`<section aria-labelledby="h-envios">
    <h2 id="h-envios">Sends</h2>
    ${stackedBars(spec)}
    <details>
      <summary>The numbers (${busy} of ${e.envios.length} bars had messages)</summary>
      ${busy === 0 ? html`<p class="empty">No messages were created in this range.</p>` : ''}
      <div id="t-envios">${listTable(enviosRows(e), ENVIOS_COLUMNS, 'Messages created per bar, by the estado they are in now; bars without messages in a row are one row')}</div>
    </details>
  </section>`;
}

function samplesCharts(e: Estadisticas, m: MuestraBar[]): Html {
  const t = ticks(e);
  const max = (f: (b: MuestraBar) => number | null) => Math.max(0, ...m.map((b) => f(b) ?? 0));
  const attempts = m.reduce((a, b) => a + b.entregas_ok + b.entregas_fallidas, 0);
  const failed = m.reduce((a, b) => a + b.entregas_fallidas, 0);
  const charts = [
    lines({
      id: 'c-cola',
      title: 'Queue depth',
      desc: `The most messages waiting in the queue in any bar: ${max((b) => b.cola)}.`,
      series: [{ key: 'cola', label: 'queued messages (largest reading)' }],
      bars: m.map((b) => [b.cola]),
      ticks: t,
      unit: 'messages',
    }),
    lines({
      id: 'c-antiguo',
      title: 'Oldest queued message',
      desc: `The oldest queued message's age at its largest: ${max((b) => b.mas_antiguo_s)} seconds.`,
      series: [{ key: 'antiguo', label: 'age of the oldest (largest reading)' }],
      bars: m.map((b) => [b.mas_antiguo_s]),
      ticks: t,
      unit: 'seconds',
    }),
    stackedBars({
      id: 'c-webhooks',
      title: 'Webhook attempts',
      desc: `${attempts} webhook attempts in this range, ${failed} of them not answered with 2xx.`,
      series: [
        { key: 'ok', label: 'answered 2xx' },
        { key: 'fallidas', label: 'failed' },
      ],
      bars: m.map((b) => [b.entregas_ok, b.entregas_fallidas]),
      ticks: t,
      unit: 'attempts',
    }),
    lines({
      id: 'c-latencia',
      title: 'Webhook latency',
      desc: `The slowest bar's 95th percentile: ${max((b) => b.latencia_p95_ms)} ms (bucket bounds).`,
      series: [
        { key: 'p50', label: 'p50' },
        { key: 'p95', label: 'p95' },
      ],
      bars: m.map((b) => [b.latencia_p50_ms, b.latencia_p95_ms]),
      ticks: t,
      unit: 'ms, as latency bucket bounds',
    }),
  ];
  const sampled = m.filter((b) => !unsampled(b)).length;
  return html`<section aria-labelledby="h-muestras">
    <h2 id="h-muestras">Queue and webhooks</h2>
    <p class="hint">Sampled by every node twice a minute: the queue's largest reading and every node's webhook attempts per bar. A gap is a bar no node sampled.</p>
    ${charts}
    <details>
      <summary>The numbers (${sampled} of ${m.length} bars sampled)</summary>
      ${sampled === 0 ? html`<p class="empty">No node has sampled this range yet.</p>` : ''}
      <div id="t-muestras">${listTable(muestraRows(e, m), MUESTRA_COLUMNS, 'Samples per bar (a dash: no node sampled it); bars in a row that read the same are one row')}</div>
    </details>
  </section>`;
}

const FIELDS = ['rango', 'cliente_id', 'celular_id'] as const;

function form(action: string, values: Record<string, string>, own: Html, errors: FormErrors): Html {
  return html`<form method="get" action="${action}" class="card filters" aria-label="Chart">
    ${generalError(errors)}
    <div class="form-row">
      ${selectField({ name: 'rango', label: 'Range', options: RANGOS.map((r) => [r, RANGE_LABELS[r]!] as const), value: values.rango ?? '1h' }, errors)} ${own}
    </div>
    <div class="actions"><button type="submit">Show</button> <a href="${action}">Everything, last hour</a></div>
  </form>`;
}

export default async function graficasPages(app: FastifyInstance, deps: PanelDeps) {
  const { core } = deps;
  const route = { preHandler: signedIn(core), preValidation: dropEmptyFilters, attachValidation: true, schema: { querystring: estadisticasQuerystring } };

  /** Reads the chart; a refusal goes beside its field, with the status the API would give. */
  async function read(req: FastifyRequest, p: Principal, q: EstadisticasQuery): Promise<{ e: Estadisticas | null; errors: FormErrors; status: number }> {
    try {
      if (req.validationError) throw req.validationError;
      return { e: await estadisticas(core, p, q), errors: NO_ERRORS, status: 200 };
    } catch (err) {
      const errors = formErrorsOf(err, FIELDS);
      return { e: null, errors, status: (errors.general ?? Object.values(errors.fields)[0]!).status };
    }
  }

  function body(e: Estadisticas | null, who: string, top: Html): Html {
    if (!e) return top;
    return html`${top}
      <p role="status">${who} · ${RANGE_LABELS[e.rango]} · from <time datetime="${e.desde}">${bar(e.desde)}</time> to <time datetime="${e.hasta}">${bar(e.hasta)}</time></p>
      <p class="hint">A message counts in the bar of its creation, under the estado it is in now: a bar's colours change as its messages are sent, delivered and read.</p>
      ${sendsChart(e, who)} ${e.muestras ? samplesCharts(e, e.muestras) : ''}
      <p class="hint">Read at <time datetime="${iso(core.clock.now())}">${shortTime(core.clock.now())}</time>. The same figures as JSON: GET /admin/estadisticas (operator token), or <code>pasarela admin stats</code>.</p>`;
  }

  app.get('/graficas', route, async (req: FastifyRequest, reply: FastifyReply) => {
    requireOperator(req);
    const values = typedFilters(req);
    const q = req.query as EstadisticasQuery;
    const { e, errors, status } = await read(req, panelOf(req).principal, q);
    const own = html`${field({ name: 'cliente_id', label: 'Client (cliente_id)', type: 'number', min: 1, value: values.cliente_id, hint: 'Empty: every client' }, errors)}
    ${field({ name: 'celular_id', label: 'Line (celular_id)', type: 'number', min: 1, value: values.celular_id, hint: 'Any line id; empty: every line' }, errors)}`;
    const who = !e
      ? ''
      : e.celular_id !== null
        ? `Line ${e.celular_id} of client ${e.cliente_id}`
        : e.cliente_id !== null
          ? `Client ${e.cliente_id}`
          : 'Every client';
    return sendPage(req, reply, { title: 'Charts', current: 'graficas' }, body(e, who, form('/panel/graficas', values, own, errors)), status);
  });

  app.get('/c/:cid/graficas', route, async (req: FastifyRequest, reply: FastifyReply) => {
    const cid = cidOf(req);
    const p = await clientScope(core, req, cid);
    const values = typedFilters(req);
    const { cliente_id: _ignored, ...q } = req.query as EstadisticasQuery;
    const { e, errors, status } = await read(req, p, q);
    const options = await lineOptions(deps, p);
    const own = options ? selectField({ name: 'celular_id', label: 'Line', options, value: values.celular_id ?? '' }, errors) : html``;
    const who = !e ? '' : e.celular_id !== null ? `Line ${e.celular_id}` : 'Every line';
    return sendPage(
      req,
      reply,
      { title: 'Charts', clienteId: cid, current: 'graficas' },
      body(e, who, form(`/panel/c/${cid}/graficas`, values, own, errors)),
      status,
    );
  });
}
