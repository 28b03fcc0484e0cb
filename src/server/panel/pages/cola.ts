import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { API } from '../../../core/api/api-routes.js';
import type { ClientPrincipal } from '../../../core/auth/auth.js';
import { celularInScope } from '../../../core/auth/auth.js';
import { cancelCola, listCola, retryMensajes, type ColaItem, type ColaPage } from '../../../core/queue/cola.js';
import { AppError } from '../../../core/api/errors.js';
import type { CelularRow } from '../../../core/ports/model.js';
import { redeliverFailed } from '../../../webhooks/deliveries.js';
import { clientScope, flash, redirect, signedIn } from '../context.js';
import { csrfField, field, formErrorsOf, formValues, generalError, intField, NO_ERRORS, selectField, type FormErrors } from '../forms.js';
import { html, type Html } from '../html.js';
import type { PanelDeps } from '../index.js';
import { sendPage } from '../layout.js';
import { cidOf, type Column, cut, listTable } from '../listing.js';
import { lineOptions } from '../listing-page.js';
import { shortTime } from './overview.js';

/**
 * The queue (`/panel/c/:cid/cola`, issue 36): a line's (or every line's)
 * pending queued messages in order, with when each is due and why it waits;
 * cancel a selection, or all of a line after typing its numero. Also the
 * actions other pages offer as one button: retry a failed message (history),
 * redeliver every failed delivery (webhook). Each a POST answered by a
 * redirect and a notice with the counts, through the core the API calls.
 */

/** The words beside each reason (the API's `motivo` is shown too, for people who script against it). */
const MOTIVO_TEXT: Record<string, string> = {
  enviando: 'being sent now',
  desconectado: 'the line is not active or not connected',
  fuera_de_horario: 'outside the allowed hours',
  reintento: 'waiting to try again after a failed attempt',
  cupo_minuto: 'the per-minute cap is full',
  cupo_hora: 'the per-hour cap is full',
  cupo_dia: 'the per-day cap is full',
  pausa_humana: 'the pause after the last send',
  en_turno: 'behind older messages',
  listo: 'due now',
};

const when = (isoText: string | null): Html =>
  isoText === null ? html`<span class="empty">unknown</span>` : html`<time datetime="${isoText}">${shortTime(Date.parse(isoText))}</time>`;

/** Where a form's answer sends the browser back: the queue page, of the same line when it had one. */
const colaUrl = (cid: number, celularId?: number) => `/panel/c/${cid}/cola${celularId !== undefined ? `?celular_id=${celularId}` : ''}`;

interface View {
  celularId?: number;
  despues?: number;
  /** The cancel-all form's typed value and its refusal. */
  all?: { values: Record<string, string>; errors: FormErrors };
  /** A refused filter: shown beside its field. */
  filterErrors?: FormErrors;
  status?: number;
}

function table(req: FastifyRequest, cid: number, page: ColaPage, celularId: number | undefined): Html {
  if (page.mensajes.length === 0) return html`<p class="empty">Nothing waits in this queue.</p>`;
  const columns: Array<Column<ColaItem>> = [
    {
      label: 'Select',
      cell: (m) => html`<input type="checkbox" name="msg_ids" value="${m.msg_id}" form="cancelar" aria-label="Select ${m.msg_id}" />`,
    },
    { label: 'Due (estimated)', cell: (m) => when(m.due_at) },
    // One element per cell: a stacked row (phone width) keeps it beside its label.
    { label: 'Why it waits', cell: (m) => html`<span>${MOTIVO_TEXT[m.motivo] ?? m.motivo} <code>${m.motivo}</code></span>` },
    ...(celularId === undefined ? [{ label: 'celular', cls: 'num', cell: (m: ColaItem) => m.celular_id }] : []),
    { label: 'destinatario', cell: (m) => m.destinatario },
    { label: 'texto', cell: (m) => cut(m.texto ?? `(${m.tipo})`) },
    { label: 'Queued at', cell: (m) => when(m.created_at) },
    // Its story (the message's page): why it was queued, charged, and each step so far.
    { label: 'msg_id', cls: 'id', cell: (m) => html`<a href="/panel/c/${cid}/mensajes/${encodeURIComponent(m.msg_id)}"><code>${m.msg_id}</code></a>` },
  ];
  const rows = listTable<ColaItem>(page.mensajes, columns, 'Queued messages, in the order they go');
  return html`<form id="cancelar" method="post" action="/panel/c/${cid}/cola/cancelar">
      ${csrfField(req)} ${celularId !== undefined ? html`<input type="hidden" name="celular_id" value="${celularId}" />` : ''}
    </form>
    ${rows}
    <p class="actions">
      <button type="submit" form="cancelar" class="secondary">Cancel the selected messages</button>
      ${
        page.siguiente !== null
          ? html`<a href="/panel/c/${cid}/cola?${celularId !== undefined ? `celular_id=${celularId}&` : ''}despues=${page.siguiente}">Next page</a>`
          : ''
      }
    </p>`;
}

function cancelAllSection(req: FastifyRequest, cid: number, row: CelularRow, view: View): Html {
  const errors = view.all?.errors ?? NO_ERRORS;
  return html`<h2>Cancel all of this line</h2>
    <form method="post" action="/panel/c/${cid}/cola/cancelar-todo" class="card narrow danger-zone">
      ${csrfField(req)} ${generalError(errors)}
      <input type="hidden" name="celular_id" value="${row.id}" />
      <p>Every message of this line's queue pending now ends in error (cancelado) and is refunded. One being sent is left alone.</p>
      ${field(
        {
          name: 'confirmacion',
          label: `Type the line's numero (${row.numero}) to confirm`,
          value: view.all?.values.confirmacion,
          autocomplete: 'off',
          confirm: row.numero,
        },
        errors,
      )}
      <button type="submit" class="danger">Cancel all of this line</button>
    </form>`;
}

async function colaPage(deps: PanelDeps, req: FastifyRequest, reply: FastifyReply, cid: number, p: ClientPrincipal, view: View) {
  const { core } = deps;
  const info = { title: 'Queue', clienteId: cid, current: 'cola' };
  const lines = await lineOptions(deps, p);
  let filterErrors = view.filterErrors ?? NO_ERRORS;
  let page: ColaPage | null = null;
  let row: CelularRow | null = null;
  let status = view.status ?? 200;
  try {
    if (view.celularId !== undefined) row = await celularInScope(core, p, view.celularId);
    page = await listCola(core, p, { celular_id: view.celularId, despues: view.despues });
  } catch (err) {
    filterErrors = formErrorsOf(err, ['celular_id']);
    status = (filterErrors.general ?? Object.values(filterErrors.fields)[0]!).status;
  }
  const filter = lines
    ? html`<form method="get" action="/panel/c/${cid}/cola" class="card filters" aria-label="Line">
        ${generalError(filterErrors)}
        <div class="form-row">
          ${selectField({ name: 'celular_id', label: 'Line (celular_id)', options: lines, value: view.celularId !== undefined ? String(view.celularId) : '' }, filterErrors)}
        </div>
        <div class="actions"><button type="submit">Show</button></div>
      </form>`
    : generalError(filterErrors);
  if (!page) return sendPage(req, reply, info, filter, status);
  return sendPage(
    req,
    reply,
    info,
    html`${filter}
      <p role="status">${page.total} ${page.total === 1 ? 'message waits' : 'messages wait'}${row ? ` on line ${row.numero}` : ''}. Due times are estimates.</p>
      ${page.lineas
        .filter((l) => l.calentamiento_dia !== null)
        .map(
          (l) =>
            html`<p class="hint">
              Line ${l.celular_id}: caps now ${l.max_envios_por_minuto_efectivo} a minute, ${l.max_envios_por_hora_efectivo} an hour,
              ${l.max_envios_por_dia_efectivo ?? 'no cap'} a day (warm-up ${l.calentamiento}, day ${l.calentamiento_dia}).
            </p>`,
        )}
      ${table(req, cid, page, view.celularId)}
      ${
        row && page.total > 0
          ? cancelAllSection(req, cid, row, view)
          : // Cancel all is one line's: with every line shown, the way to it was nowhere on the page (the walk).
            !row && page.total > 0
            ? html`<p class="hint">To cancel every message of one line, choose the line above and press Show.</p>`
            : ''
      }`,
    status,
  );
}

/** A notice's counts in words. */
const plural = (n: number, one: string, many: string) => `${n} ${n === 1 ? one : many}`;

export default async function colaPages(app: FastifyInstance, deps: PanelDeps) {
  const { core } = deps;
  const pre = { preHandler: signedIn(core) };

  app.get('/c/:cid/cola', pre, async (req, reply) => {
    const cid = cidOf(req);
    const p = await clientScope(core, req, cid);
    const q = req.query as Record<string, string | undefined>;
    const values: Record<string, string> = {};
    for (const k of ['celular_id', 'despues'] as const) if (typeof q[k] === 'string' && q[k] !== '') values[k] = q[k];
    let view: View = {};
    try {
      view = { celularId: intField(values, 'celular_id'), despues: intField(values, 'despues') };
    } catch (err) {
      const filterErrors = formErrorsOf(err, ['celular_id']);
      view = { filterErrors, status: 400 };
    }
    return colaPage(deps, req, reply, cid, p, view);
  });

  app.post('/c/:cid/cola/cancelar', pre, async (req, reply) => {
    const cid = cidOf(req);
    const p = await clientScope(core, req, cid);
    const body = (req.body ?? {}) as Record<string, unknown>;
    const raw = body.msg_ids;
    const ids = (Array.isArray(raw) ? raw : raw === undefined ? [] : [raw]).filter((v): v is string => typeof v === 'string');
    const celularId = intField(formValues(req), 'celular_id');
    if (ids.length === 0) {
      flash(req, reply, 'Nothing cancelled: select the messages first.');
      return redirect(req, reply, colaUrl(cid, celularId));
    }
    const r = await cancelCola(core, deps.send.media, p, { msg_ids: ids });
    const left = r.no_cancelados > 0 ? ` ${plural(r.no_cancelados, 'was', 'were')} not (being sent, or no longer pending).` : '';
    flash(req, reply, `${plural(r.cancelados, 'message', 'messages')} cancelled, ${plural(r.reembolso, 'credit', 'credits')} refunded.${left}`);
    return redirect(req, reply, colaUrl(cid, celularId));
  });

  app.post('/c/:cid/cola/cancelar-todo', pre, async (req, reply) => {
    const cid = cidOf(req);
    const p = await clientScope(core, req, cid);
    const values = formValues(req);
    const celularId = intField(values, 'celular_id');
    if (celularId === undefined) throw new AppError('INVALID_PARAMS', 'celular_id: choose the line whose queue is cancelled');
    const row = await celularInScope(core, p, celularId);
    try {
      // The typed confirmation is checked here too: a form sent without the page's script cancels nothing by mistake.
      if ((values.confirmacion ?? '').trim() !== row.numero)
        throw new AppError('INVALID_PARAMS', `confirmacion: type the line's numero, ${row.numero}, to cancel its whole queue`);
    } catch (err) {
      const errors = formErrorsOf(err, ['confirmacion']);
      return colaPage(deps, req, reply, cid, p, { celularId, all: { values, errors }, status: 400 });
    }
    const r = await cancelCola(core, deps.send.media, p, { celular_id: celularId, todos: true });
    const left = r.no_cancelados > 0 ? ` ${plural(r.no_cancelados, 'was', 'were')} being sent and left alone.` : '';
    flash(
      req,
      reply,
      `Queue of line ${row.numero}: ${plural(r.cancelados, 'message', 'messages')} cancelled, ${plural(r.reembolso, 'credit', 'credits')} refunded.${left}`,
    );
    return redirect(req, reply, colaUrl(cid, celularId));
  });

  /** The history's retry button: one failed message sent again as a new queued send. */
  app.post('/c/:cid/historial/reintentar', pre, async (req, reply) => {
    const cid = cidOf(req);
    const p = await clientScope(core, req, cid);
    const values = formValues(req);
    const back = `/panel/c/${cid}/historial${values.celular_id && /^\d{1,15}$/.test(values.celular_id) ? `?celular_id=${values.celular_id}` : ''}`;
    try {
      const r = await retryMensajes(core, deps.send, p, [values.msg_id ?? ''], API.mensajeReintentar);
      const done = r.resultados[0]!;
      flash(req, reply, 'nuevo_msg_id' in done ? `Retried: the new message is ${done.nuevo_msg_id} (queued, charged as a send).` : 'Not retried.');
      // To the new message's page, not back to the history: its story answers the next question (did it go?) and
      // links the message it retries; the history would need the new row found among the others.
      if ('nuevo_msg_id' in done) return redirect(req, reply, `/panel/c/${cid}/mensajes/${encodeURIComponent(done.nuevo_msg_id)}`);
    } catch (err) {
      const e = formErrorsOf(err, []).general!;
      // Our own words only: an unknown id is not echoed back.
      flash(req, reply, e.row.codigo === 611 ? 'Not retried: no such message of this client.' : `Not retried: ${e.message}`);
    }
    return redirect(req, reply, back);
  });

  /** The webhook page's "Redeliver all failed": a batch due again now. */
  app.post('/c/:cid/webhook/reenviar-fallidas', pre, async (req, reply) => {
    const cid = cidOf(req);
    const p = await clientScope(core, req, cid);
    const r = await redeliverFailed(core, deps.webhooks, p, { estado: 'fallido' });
    flash(
      req,
      reply,
      r.reprogramadas === 0
        ? 'No failed deliveries to redeliver.'
        : `${plural(r.reprogramadas, 'failed delivery', 'failed deliveries')} queued again.${r.quedan ? ' More remain: press it again for the next batch.' : ''}`,
    );
    return redirect(req, reply, `/panel/c/${cid}/webhook`);
  });
}
