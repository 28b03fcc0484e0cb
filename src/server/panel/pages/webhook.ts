import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ClientPrincipal } from '../../../core/auth/auth.js';
import { AppError } from '../../../core/api/errors.js';
import { FIELD_LIMITS } from '../../../core/api/limits.js';
import { WEBHOOK_SECRET_RULE } from '../../../core/events/webhook-secret.js';
import type { EntregaView } from '../../../core/api/views.js';
import { deleteWebhook, EVENT_KINDS, getWebhook, restoreWebhook, setWebhook } from '../../../webhooks/config.js';
import { DELIVERIES_COUNT_BOUND, deliveriesPage, redeliver, sendTestEvent } from '../../../webhooks/deliveries.js';
import { refusedInWords } from '../../../core/api/expected-words.js';
import { generateSecret } from '../../../webhooks/sign.js';
import { clientScope, flash, redirect, signedIn } from '../context.js';
import { csrfField, errorText, field, formErrorsOf, formValues, generalError, NO_ERRORS, selectField, type FormErrors } from '../forms.js';
import { html, type Html } from '../html.js';
import type { PanelDeps } from '../index.js';
import { sendFragment, sendPage } from '../layout.js';
import { redirectToOnce } from '../shown-once.js';
import { timeTag } from '../time.js';
import { cidOf, cut, listTable, pager, pastEnd } from '../listing.js';

/**
 * The client's webhook (`/panel/c/:cid/webhook`): its configuration (set,
 * delete), a test event, and the deliveries with every attempt and a
 * redeliver button, refreshed in place. All through webhooks/config.ts and
 * webhooks/deliveries.ts as the API: client-wide, so a celular session gets
 * the API's 403.
 */

/** Deliveries the page shows (the newest): the API's default page. */
const DELIVERIES_SHOWN = 20;
/** How often the deliveries refresh while the page is open. */
const POLL = 'every 3s';
const EVENTOS = [...EVENT_KINDS, 'all'] as const;
const FIELDS = ['url', 'secret', 'eventos'] as const;

/** How the form's secret is chosen: the one configured (editing), a new random one (shown once), one typed, or none (unsigned deliveries). */
const SECRET_MODES = [
  ['mantener', 'Keep the current secret'],
  ['generar', 'Generate a new secret (shown once)'],
  ['propio', 'Use the secret typed below'],
  ['ninguno', 'No secret (deliveries are not signed)'],
] as const;

interface View {
  errors?: FormErrors;
  /** What was typed, on a refused save. */
  values?: Record<string, string>;
  eventos?: string[];
  /** A refused delete (its typed confirmation) or restore: its error, beside its own form. */
  del?: { values: Record<string, string>; errors: FormErrors };
  restore?: FormErrors;
  status?: number;
}

/** What the delete form asks to be typed. */
const DELETE_WORD = 'delete';

function badge(estado: string): Html {
  const tone = estado === 'fallido' ? 'bad' : estado === 'pendiente' ? 'warn' : 'ok';
  return html`<span class="badge ${tone}">${estado}</span>`;
}

/** A delivery's attempts in runs: consecutive attempts with the same answer (status and error) are one line. */
type AttemptRun = { first: IntentoView; last: IntentoView; count: number };
type IntentoView = EntregaView['intentos_detalle'][number];
function attemptRuns(list: readonly IntentoView[]): AttemptRun[] {
  const runs: AttemptRun[] = [];
  for (const a of list) {
    const prev = runs.at(-1);
    if (prev && prev.last.status === a.status && prev.last.error === a.error) {
      prev.last = a;
      prev.count++;
    } else runs.push({ first: a, last: a, count: 1 });
  }
  return runs;
}

/**
 * A delivery's attempts (status, time, answer), or when the next is due. The
 * same answer again (a receiver failing on every retry) is one line with its
 * count and the times of its first and last, not the same "HTTP 500" repeated.
 */
function attemptsOf(e: EntregaView): Html {
  return e.intentos_detalle.length === 0
    ? html`<span class="empty">${e.proximo_intento_at ? html`due ${timeTag(e.proximo_intento_at)}` : 'none'}</span>`
    : html`<ol class="attempts">
        ${attemptRuns(e.intentos_detalle).map(
          ({ first, last, count }) =>
            html`<li>
              <span class="code">${last.status === null ? 'no answer' : `HTTP ${last.status}`}${count > 1 ? ` × ${count}` : ''}</span> ·
              ${count > 1 ? html`${timeTag(first.fecha)} to ${timeTag(last.fecha)} · last ${last.duracion_ms} ms` : html`${last.duracion_ms} ms · ${timeTag(last.fecha)}`}
              ${last.error && last.error !== `HTTP ${last.status}` ? html` · ${cut(last.error, 160)}` : ''}
            </li>`,
        )}
      </ol>`;
}

/** A page of deliveries as the panel shows it: which page, how many pages, and a refusal of the page asked for. */
interface DeliveriesView {
  entregas: EntregaView[];
  page: number;
  /** null past the counted bound (DELIVERIES_COUNT_BOUND). */
  total_paginas: number | null;
  refused?: AppError;
}

/** The page of deliveries `?page=` asks for (a GET's; a form's answer shows the first), its refusal in words. */
async function deliveriesOf(deps: PanelDeps, req: FastifyRequest, p: ClientPrincipal): Promise<DeliveriesView> {
  const q = req.method === 'GET' ? (req.query as Record<string, unknown> | undefined)?.page : undefined;
  // A repeated ?page= is its first value.
  const raw: unknown = Array.isArray(q) ? (q as unknown[])[0] : q;
  const given = typeof raw === 'string' && raw !== '' ? raw : typeof raw === 'number' ? String(raw) : '1';
  const ok = /^[1-9][0-9]{0,8}$/.test(given);
  const refused = ok ? undefined : new AppError('INVALID_PARAMS', refusedInWords('page', raw, { type: 'integer', minimum: 1 })!);
  const r = await deliveriesPage(deps.core, p, ok ? Number(given) : 1, DELIVERIES_SHOWN);
  return { ...r, refused };
}

/** Deliveries a phone shows before its "Show all" link (panel.css hides the rest below 600 px). */
const PHONE_ROWS = 5;

function deliveriesFragment(req: FastifyRequest, cid: number, d: DeliveriesView): Html {
  const { entregas, page, total_paginas } = d;
  const path = `/panel/c/${cid}/webhook`;
  // ?todas=1: a phone asked for the whole page ("Show all"); the section's refresh asks for it again.
  const all = req.method === 'GET' && (req.query as Record<string, unknown> | undefined)?.todas === '1';
  const params = [...(page > 1 ? [`page=${page}`] : []), ...(all ? ['todas=1'] : [])];
  const query = params.length > 0 ? `?${params.join('&')}` : '';
  // Past the counted bound the last page is unknown: the pager offers the next page while this one is full.
  const last = total_paginas ?? (entregas.length === DELIVERIES_SHOWN ? page + 1 : page);
  const body =
    entregas.length === 0 && page > 1 && total_paginas !== null && total_paginas > 0
      ? pastEnd(path, {}, total_paginas, 'deliveries')
      : entregas.length === 0 && page > 1
        ? html`<p class="empty">No deliveries on this page (past the ${DELIVERIES_COUNT_BOUND.toLocaleString('en')} counted). <a href="${path}">Back to the first page</a></p>`
        : entregas.length === 0
          ? html`<p class="empty">No deliveries yet. Set a URL above and send a test event.</p>`
          : listTable(entregas, [
              // The day and the time on two lines at 1280 px: the attempts and the id need the room (the table fits its box).
              { label: 'created_at', cell: (e) => timeTag(e.created_at) },
              { label: 'evento', cell: (e) => e.evento },
              { label: 'estado', cell: (e) => badge(e.estado) },
              { label: 'intentos', cls: 'num', cell: (e) => e.intentos },
              { label: 'Attempts (status, time, answer)', cell: attemptsOf },
              { label: 'id', cls: 'id', cell: (e) => html`<code>${e.id}</code>` },
              {
                label: 'Action',
                hiddenLabel: true,
                cell: (e) =>
                  html`<form method="post" action="/panel/c/${cid}/webhook/reenviar">
                ${csrfField(req)}<input type="hidden" name="id" value="${e.id}" />
                <button type="submit" class="secondary" aria-label="Redeliver ${e.id}">Redeliver</button>
              </form>`,
              },
            ]);
  const failed = entregas.some((e) => e.estado === 'fallido')
    ? html`<form method="post" action="/panel/c/${cid}/webhook/reenviar-fallidas" class="actions">
        ${csrfField(req)}<button type="submit" class="secondary">Redeliver all failed</button>
      </form>`
    : '';
  // Shown below 600 px only, where the rows past PHONE_ROWS are hidden until it is followed (panel.css).
  const showAll = `${path}?${page > 1 ? `page=${page}&` : ''}todas=1#entregas`;
  const more =
    !all && entregas.length > PHONE_ROWS ? html`<p class="phone-more"><a href="${showAll}">Show all ${entregas.length} deliveries of this page</a></p>` : '';
  return html`<section id="entregas" class="entregas${all ? ' all' : ''}" aria-labelledby="entregas-h" hx-get="/panel/c/${cid}/webhook/entregas${query}" hx-trigger="${POLL}" hx-swap="outerHTML">
    <h2 id="entregas-h">Deliveries</h2>
    ${d.refused ? html`<p class="error" role="alert">${errorText(d.refused)}</p>` : ''} ${failed} ${body} ${more} ${pager(path, {}, page, last)}
  </section>`;
}

function eventosField(checked: readonly string[], errors: FormErrors): Html {
  const err = errors.fields.eventos;
  return html`<fieldset class="field checks${err ? ' invalid' : ''}" ${err ? html`aria-describedby="f-eventos-error"` : ''}>
    <legend>Events (eventos)</legend>
    ${EVENTOS.map(
      (e) =>
        html`<label class="check"
          ><input type="checkbox" name="eventos" value="${e}" ${checked.includes(e) ? html`checked` : ''} /> ${e === 'all' ? 'all (every kind, present and future)' : e}</label
        >`,
    )}
    <small class="hint">None checked means all, as in the API.</small>
    ${err ? html`<p id="f-eventos-error" class="field-error" role="alert">${errorText(err)}</p>` : ''}
  </fieldset>`;
}

async function renderWebhook(deps: PanelDeps, req: FastifyRequest, reply: FastifyReply, cid: number, p: ClientPrincipal, v: View = {}) {
  const cfg = await getWebhook(deps.core, p);
  const deliveries = await deliveriesOf(deps, req, p);
  const errors = v.errors ?? NO_ERRORS;
  const values = v.values ?? { url: cfg.url, secret_modo: !cfg.configurado ? 'generar' : cfg.has_secret ? 'mantener' : 'ninguno' };
  const checked = v.eventos ?? (cfg.configurado ? cfg.eventos : ['all']);
  const current = cfg.configurado
    ? html`<dl class="card facts">
        <dt>URL</dt>
        <dd><code>${cfg.url}</code></dd>
        <dt>eventos</dt>
        <dd>${cfg.eventos.join(', ')}</dd>
        <dt>activo</dt>
        <dd>${cfg.activo ? html`<span class="badge ok">yes</span>` : html`<span class="badge bad">no</span>`}</dd>
        <dt>Signed</dt>
        <dd>${cfg.has_secret ? 'yes (the secret is never shown again)' : 'no secret'}</dd>
        <dt>updated_at</dt>
        <dd>${timeTag(cfg.updated_at)}</dd>
      </dl>`
    : html`<p class="empty">No webhook yet. Set a URL below to receive this client's events.</p>`;
  const delErrors = v.del?.errors ?? NO_ERRORS;
  return sendPage(
    req,
    reply,
    { title: 'Webhook', clienteId: cid, current: 'webhook' },
    html`<h2>Configuration</h2>
      ${current}
      <form method="post" action="/panel/c/${cid}/webhook" class="card" aria-label="Set the webhook">
        ${csrfField(req)} ${generalError(errors)}
        ${field({ name: 'url', label: 'URL', type: 'url', value: values.url, required: true, maxlength: FIELD_LIMITS.url, hint: 'http:// or https://; events are POSTed here' }, errors)}
        ${selectField({ name: 'secret_modo', label: 'Signing secret', options: cfg.has_secret ? SECRET_MODES : SECRET_MODES.slice(1), value: values.secret_modo }, errors)}
        ${field(
          {
            name: 'secret',
            label: 'Your own secret',
            value: values.secret_modo === 'propio' ? values.secret : undefined,
            maxlength: FIELD_LIMITS.webhookSecret,
            autocomplete: 'off',
            hint: `Only with "Use the secret typed below": ${WEBHOOK_SECRET_RULE}`,
          },
          errors,
        )}
        ${eventosField(checked, errors)}
        <label class="check"><input type="checkbox" name="activo" value="1" ${values.activo === undefined || values.activo === '1' ? html`checked` : ''} /> Active (activo)</label>
        <p class="hint">Saving replaces the whole configuration (the secret only when you choose a new one or none); the one replaced can be restored below.</p>
        <button type="submit">Save webhook</button>
      </form>
      <div class="actions">
        <form method="post" action="/panel/c/${cid}/webhook/probar">
          ${csrfField(req)}<button type="submit" class="secondary">Send a test event</button>
        </form>
      </div>
      <h2>Restore</h2>
      ${generalError(v.restore ?? NO_ERRORS)}
      <form method="post" action="/panel/c/${cid}/webhook/restaurar" class="card narrow">
        ${csrfField(req)}
        <p>Puts back the configuration the last save or delete replaced (its URL, events and secret); the current one, if any, can then be restored in turn.</p>
        <button type="submit" class="secondary">Restore the previous configuration</button>
      </form>
      ${
        cfg.configurado
          ? html`<h2>Delete</h2>
            <form method="post" action="/panel/c/${cid}/webhook/eliminar" class="card narrow danger-zone">
              ${csrfField(req)} ${generalError(delErrors)}
              <p>No more events are delivered once it is deleted. It can be restored above.</p>
              ${field({ name: 'confirmacion', label: `Type ${DELETE_WORD} to confirm`, value: v.del?.values.confirmacion, autocomplete: 'off', confirm: DELETE_WORD }, delErrors)}
              <button type="submit" class="danger">Delete the webhook</button>
            </form>`
          : ''
      }
      ${deliveriesFragment(req, cid, deliveries)}`,
    v.status ?? 200,
  );
}

/** `eventos` of the form: each checked box (a repeated field). */
function eventosOf(req: FastifyRequest): string[] {
  const raw = (req.body as Record<string, unknown> | undefined)?.eventos;
  return (Array.isArray(raw) ? raw : raw === undefined ? [] : [raw]).filter((x): x is string => typeof x === 'string');
}

export default async function webhookPages(app: FastifyInstance, deps: PanelDeps) {
  const { core } = deps;
  const opts = { preHandler: signedIn(core) };
  const scope = async (req: FastifyRequest) => {
    const cid = cidOf(req);
    return { cid, p: await clientScope(core, req, cid) };
  };

  app.get('/c/:cid/webhook', opts, async (req, reply) => {
    const { cid, p } = await scope(req);
    return renderWebhook(deps, req, reply, cid, p);
  });

  app.get('/c/:cid/webhook/entregas', opts, async (req, reply) => {
    const { cid, p } = await scope(req);
    return sendFragment(reply, deliveriesFragment(req, cid, await deliveriesOf(deps, req, p)));
  });

  app.post('/c/:cid/webhook', opts, async (req, reply) => {
    const { cid, p } = await scope(req);
    const values = formValues(req);
    const eventos = eventosOf(req);
    const mode = values.secret_modo ?? 'generar';
    const secret = mode === 'generar' ? generateSecret() : mode === 'propio' ? values.secret : undefined;
    try {
      // "Use the secret typed below" with nothing typed would save an unsigned webhook without saying so.
      if (mode === 'propio' && !values.secret) throw new AppError('INVALID_PARAMS', 'secret: type the secret, or choose another option');
      // A choice the form does not offer would otherwise save the webhook unsigned.
      if (!SECRET_MODES.some(([m]) => m === mode))
        throw new AppError('INVALID_PARAMS', `secret: choose one of the form's options (${SECRET_MODES.map(([m]) => m).join(', ')})`);
      const r = await setWebhook(core, p, {
        url: values.url,
        secret,
        keepSecret: mode === 'mantener',
        eventos: eventos.length > 0 ? eventos : undefined,
        activo: values.activo === '1',
      });
      const notice = r.aviso ? `Webhook saved. Note: ${r.aviso}.` : 'Webhook saved.';
      const page = `/panel/c/${cid}/webhook`;
      // A generated secret exists in clear only now: kept for one read by the page this redirects to.
      if (mode === 'generar')
        return await redirectToOnce(
          core,
          req,
          reply,
          {
            title: 'Webhook saved',
            clienteId: cid,
            current: 'webhook',
            lead: notice,
            secrets: [{ id: 'new-key', label: 'The signing secret', value: secret! }],
            note: 'Copy it now into your receiver: it is shown once, here, and a reload does not show it again. A new save with "Generate" replaces it.',
            links: [{ href: page, label: 'Back to the webhook' }],
          },
          page,
        );
      flash(req, reply, notice);
      return redirect(req, reply, page);
    } catch (err) {
      const errors = formErrorsOf(err, FIELDS);
      const e = errors.general ?? Object.values(errors.fields)[0]!;
      return renderWebhook(deps, req, reply, cid, p, { errors, values: { ...values, activo: values.activo ?? '0' }, eventos, status: e.status });
    }
  });

  /** An action answered by the page: a notice after a redirect, or the page with the API's refusal beside the action's form. */
  const action =
    (
      run: (p: ClientPrincipal, values: Record<string, string>) => Promise<string>,
      refused: (values: Record<string, string>, errors: FormErrors) => View = (_, errors) => ({ errors }),
    ) =>
    async (req: FastifyRequest, reply: FastifyReply) => {
      const { cid, p } = await scope(req);
      const values = formValues(req);
      try {
        const notice = await run(p, values);
        flash(req, reply, notice);
        return redirect(req, reply, `/panel/c/${cid}/webhook`);
      } catch (err) {
        const errors = formErrorsOf(err, ['confirmacion']);
        return renderWebhook(deps, req, reply, cid, p, { ...refused(values, errors), status: (errors.general ?? Object.values(errors.fields)[0])!.status });
      }
    };

  app.post(
    '/c/:cid/webhook/probar',
    opts,
    action(async (p) => {
      await sendTestEvent(deps.webhooks, p);
      return 'Test event queued: it appears under Deliveries in a moment.';
    }),
  );
  app.post(
    '/c/:cid/webhook/eliminar',
    opts,
    action(
      async (p, values) => {
        // The typed confirmation is checked here too: a form sent without the page's script deletes nothing by mistake.
        if ((values.confirmacion ?? '').trim() !== DELETE_WORD) throw new AppError('INVALID_PARAMS', `confirmacion: type ${DELETE_WORD} to delete the webhook`);
        await deleteWebhook(core, p);
        return 'Webhook removed: no more events are delivered. "Restore the previous configuration" puts it back.';
      },
      (values, errors) => ({ del: { values, errors } }),
    ),
  );
  app.post(
    '/c/:cid/webhook/restaurar',
    opts,
    action(
      async (p) => {
        const r = await restoreWebhook(core, p);
        return r.configurado
          ? `Webhook restored: events go to ${r.url} again.`
          : 'Webhook restored: the earlier state had no webhook, so none is configured now.';
      },
      (_, errors) => ({ restore: errors }),
    ),
  );
  app.post(
    '/c/:cid/webhook/reenviar',
    opts,
    action(async (p, values) => {
      await redeliver(core, deps.webhooks, p, values.id ?? '');
      return 'Delivery queued again.';
    }),
  );
}
