import { PassThrough } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { eventBody, type LoggedEvent } from '../../../core/events/event-log.js';
import { inScope, STREAM_EVENT_KINDS, streamScope, type StreamScope } from '../../../core/events/event-stream.js';
import { watchSession } from '../../../core/auth/panel-sessions.js';
import { ERRORS } from '../../../core/api/errors.js';
import { FIELD_LIMITS } from '../../../core/api/limits.js';
import { eventosFilterProps } from '../../schemas/common.js';
import { Type } from '../../schemas/typed.js';
import { clientScope, panelOf, signedIn } from '../context.js';
import { errorText, formErrorsOf, generalError, NO_ERRORS, selectField, type FormErrors } from '../forms.js';
import { html, type Html } from '../html.js';
import type { PanelDeps } from '../index.js';
import { sendPage } from '../layout.js';
import { cidOf, queryOf, typedFilters } from '../listing.js';
import { timeTag } from '../time.js';
import { lineOptions } from '../listing-page.js';
import { streamSocket } from '../../send-queues.js';

/**
 * The live event monitor (`/panel/c/:cid/eventos`, D-102): a client's or a
 * line's events as they happen, read by the browser (assets/panel/panel.js,
 * "Event monitor") from `/panel/c/:cid/eventos/stream`. That stream is the
 * API's (`GET /api/eventos.php`): the same core start (scope, kinds, line,
 * resume by Last-Event-ID, the per-client cap) and pump, with the panel
 * session's authority instead of a key; it ends when the session does.
 */

const FILTERS = ['eventos', 'celular_id'] as const;

/** The events a monitor shows as it opens, read back from the log: the client's last ones, those its filters keep. */
export const MONITOR_RECENT = 20;

/**
 * The client's last MONITOR_RECENT events, oldest first, those in the
 * scope: a keyset walk down the client's log index to the place
 * MONITOR_RECENT back, then eventsAfter from there; each a bounded range.
 */
async function recentEvents(deps: PanelDeps, scope: StreamScope): Promise<LoggedEvent[]> {
  const store = deps.core.store;
  const from = await store.newestEventId(scope.clienteId, MONITOR_RECENT);
  return (await store.eventsAfter(scope.clienteId, from, MONITOR_RECENT)).filter((ev) => inScope(scope, ev));
}

/** The events logged before the page opened, newest first; the live list above takes over from the last of them. */
function earlier(events: LoggedEvent[]): Html {
  if (events.length === 0) return html``;
  return html`<section aria-labelledby="earlier-h">
    <h2 id="earlier-h">Before you opened this page: the last ${events.length === 1 ? 'event' : `${events.length} events`}</h2>
    <ol class="events" aria-label="Earlier events, newest first" data-earlier>
      ${[...events].reverse().map(
        (ev) => html`<li>
          <p class="event-head">
            ${timeTag(ev.fecha)} <span class="badge">${ev.evento}</span> ${ev.celular_id === null ? 'no line' : `line ${ev.celular_id}`} <code>${ev.id}</code>
          </p>
          <details>
            <summary>Body</summary>
            <pre>${eventBody(ev)}</pre>
          </details>
        </li>`,
      )}
    </ol>
  </section>`;
}

/** Bytes the stream's body buffers before a write asks to wait (as the API's stream). */
const BODY_HIGH_WATER = 16 * 1024;

/** A page's and a stream's query: the filters, the kinds as one comma list (the form's checkboxes send one value each). */
const monitorQuery = Type.Partial(Type.Object({ eventos: eventosFilterProps.eventos, celular_id: eventosFilterProps.celular_id }));
const streamQuery = Type.Partial(Type.Object(eventosFilterProps));

/** preValidation: the checkboxes' values as the API's comma list; empty fields are filters not set. */
async function oneKindList(req: FastifyRequest): Promise<void> {
  const q = req.query as Record<string, unknown> | undefined;
  if (!q) return;
  if (Array.isArray(q.eventos)) q.eventos = q.eventos.filter((k) => typeof k === 'string' && k !== '').join(',');
  for (const [k, v] of Object.entries(q)) if (v === '' || k === 'key') delete q[k];
}

function kindsField(checked: readonly string[], errors: FormErrors): Html {
  const err = errors.fields.eventos;
  return html`<fieldset class="field checks${err ? ' invalid' : ''}" ${err ? html`aria-describedby="f-eventos-error"` : ''}>
    <legend>Kinds (eventos)</legend>
    ${STREAM_EVENT_KINDS.map(
      (k) => html`<label class="check"><input type="checkbox" name="eventos" value="${k}" ${checked.includes(k) ? html`checked` : ''} /> ${k}</label>`,
    )}
    <small class="hint">None checked: every kind.</small>
    ${err ? html`<p id="f-eventos-error" class="field-error" role="alert">${errorText(err)}</p>` : ''}
  </fieldset>`;
}

/** The monitor: its controls, status, count and list; panel.js fills it from the stream named in data-stream. */
function monitor(stream: string, login: string): Html {
  return html`<section class="monitor" aria-labelledby="monitor-h" data-monitor data-stream="${stream}" data-login="${login}">
    <h2 id="monitor-h">Events, newest first</h2>
    <div class="monitor-bar">
      <button type="button" class="secondary" data-monitor-pause hidden>Pause</button>
      <p class="monitor-status" data-monitor-status role="status">
        <noscript>The monitor needs JavaScript. The same stream on the command line: <code>pasarela eventos --follow</code>.</noscript>
      </p>
    </div>
    <p class="monitor-count" data-monitor-count aria-live="polite">No events yet. New ones appear here as they happen.</p>
    <ol class="events" data-monitor-list></ol>
  </section>`;
}

export default async function eventosPages(app: FastifyInstance, deps: PanelDeps) {
  const { core, streams } = deps;

  app.get(
    '/c/:cid/eventos',
    { preHandler: signedIn(core), preValidation: oneKindList, attachValidation: true, schema: { querystring: monitorQuery } },
    async (req: FastifyRequest, reply: FastifyReply) => {
      const cid = cidOf(req);
      const p = await clientScope(core, req, cid);
      const q = req.query as { eventos?: string; celular_id?: number };
      const lines = await lineOptions(deps, p);
      let refused: FormErrors = NO_ERRORS;
      let status = 200;
      let recent: LoggedEvent[] = [];
      try {
        if (req.validationError) throw req.validationError;
        // The stream's own rule, so a filter it would refuse is refused here, beside its field.
        recent = await recentEvents(deps, await streamScope(core, p, q));
      } catch (err) {
        const fields = FILTERS.filter((f) => f !== 'celular_id' || lines !== null);
        refused = formErrorsOf(err, fields);
        // The line's refusals (not found, a sibling's) name the line, not the field: they are the field's all the same.
        if (
          refused.general &&
          lines !== null &&
          q.celular_id !== undefined &&
          (refused.general.row === ERRORS.CELULAR_NOT_FOUND || refused.general.row === ERRORS.FORBIDDEN)
        )
          refused = { fields: { celular_id: refused.general } };
        status = (refused.general ?? Object.values(refused.fields)[0]!).status;
      }
      // As typed, refused or not (oneKindList made the checkboxes one comma list).
      const kinds = typeof q.eventos === 'string' ? q.eventos.split(',').map((k) => k.trim()) : [];
      const line = typedFilters(req).celular_id ?? '';
      const path = `/panel/c/${cid}/eventos`;
      const form = html`<form method="get" action="${path}" class="card filters" aria-label="Filters" data-monitor-filters>
        ${generalError(refused)}
        <div class="form-row">
          ${kindsField(kinds, refused)}
          ${lines ? selectField({ name: 'celular_id', label: 'Line (celular_id)', options: lines, value: line }, refused) : ''}
        </div>
        <div class="actions">
          <button type="submit">Watch</button>
          <a href="${path}">Clear filters</a>
        </div>
      </form>`;
      const title = p.kind === 'celular' ? `Events of line ${p.celular.id}` : 'Events';
      const info = { title, clienteId: cid, current: 'eventos' };
      if (status !== 200) return sendPage(req, reply, info, form, status);
      const filters = { ...(q.eventos ? { eventos: q.eventos } : {}), ...(q.celular_id ? { celular_id: String(q.celular_id) } : {}) };
      // The stream starts right after the newest event shown, so none logged meanwhile is missed.
      const last = recent.at(-1)?.id;
      const stream = `${path}/stream${queryOf({ ...filters, ...(last ? { desde_id: last } : {}) })}`;
      const login = `/panel/login?next=${encodeURIComponent(`${path}${queryOf(filters)}`)}`;
      return sendPage(req, reply, info, html`${form}${monitor(stream, login)}${earlier(recent)}`);
    },
  );

  /**
   * The monitor's stream: text/event-stream, as the API's. A refusal before
   * it starts (a line not in scope, an id not kept, the cap) is the panel's
   * error page with the API's status; the browser reads the status.
   */
  app.get(
    '/c/:cid/eventos/stream',
    {
      // A HEAD would open a stream nobody reads.
      exposeHeadRoute: false,
      preHandler: signedIn(core),
      preValidation: oneKindList,
      schema: {
        querystring: streamQuery,
        headers: Type.Object({ 'last-event-id': Type.Optional(Type.String({ maxLength: FIELD_LIMITS.webhookId })) }),
      },
    },
    async (req: FastifyRequest, reply: FastifyReply) => {
      const cid = cidOf(req);
      const p = await clientScope(core, req, cid);
      const q = req.query as { eventos?: string; celular_id?: number; desde_id?: string };
      const lastId = (req.headers['last-event-id'] as string | undefined) ?? q.desde_id;
      const out = new PassThrough({ highWaterMark: BODY_HIGH_WATER });
      const cut = () => reply.raw.destroy();
      const { done, close } = await streams.start(
        p,
        { eventos: q.eventos, celular_id: q.celular_id, follow: true, lastId },
        { out, below: () => reply.raw.writableLength, cut, ...streamSocket(reply.raw.socket) },
      );
      // The stream never outlives the session it was opened with (signed out, expired, its key rotated).
      const unwatch = watchSession(core, panelOf(req).sessionId, close);
      done
        .catch((err: unknown) => {
          req.log.error({ err }, 'panel event stream failed');
          cut();
        })
        .finally(unwatch);
      return reply.header('cache-control', 'no-store').header('x-accel-buffering', 'no').type('text/event-stream; charset=utf-8').send(out);
    },
  );
}
