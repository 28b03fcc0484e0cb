import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AppError, ERRORS } from '../../../core/api/errors.js';
import { detalleText, mensajeStory, nodoCorto, type StoryStep } from '../../../core/history/message-story.js';
import { clientScope, redirect, signedIn } from '../context.js';
import { field, NO_ERRORS, type FormErrors } from '../forms.js';
import { html, type Html } from '../html.js';
import type { PanelDeps } from '../index.js';
import { sendPage } from '../layout.js';
import { cidOf, type Column, listTable } from '../listing.js';
import { shortTime } from './overview.js';

/**
 * One message's page (`/panel/c/:cid/mensajes/:msgId`): its record and its
 * story (core/history/message-story.ts, what GET /api/mensaje.php?timeline=1
 * answers), under the lookup's rules: a celular session sees its own line's
 * messages only. `/panel/c/:cid/mensajes?msg_id=` finds one by its id (the
 * history's find box); an id not found is said beside the field.
 */

type Params = { cid: string; msgId: string };

/** The find box: a GET form to the message page (also on the history page). */
export function findForm(cid: number, value = '', errors: FormErrors = NO_ERRORS): Html {
  return html`<form method="get" action="/panel/c/${cid}/mensajes" class="card filters" aria-label="Find a message">
    <div class="form-row">
      ${field({ name: 'msg_id', label: 'Find a message (msg_id)', type: 'search', value, maxlength: 64, hint: 'The id a send answered' }, errors)}
    </div>
    <div class="actions"><button type="submit">Find</button></div>
  </form>`;
}

const at = (t: StoryStep) =>
  t.at === null ? html`<span class="hint">not recorded</span>` : html`<time datetime="${t.at}">${shortTime(Date.parse(t.at))}</time>`;

const STEPS: Array<Column<StoryStep>> = [
  { label: 'time', cls: 'nowrap', cell: at },
  {
    label: 'step',
    cell: (t) => html`<span class="badge ${t.paso === 'error' || (t.paso === 'webhook' && t.detalle.status !== 200) ? 'bad' : 'ok'}">${t.paso}</span>`,
  },
  { label: 'node', cell: (t) => (t.nodo === null ? '' : html`<code title="${t.nodo}">${nodoCorto(t.nodo)}</code>`) },
  { label: 'detail', cell: (t) => detalleText(t) },
];

/** A refusal a person can act on in the find box: a bad id, or one this session cannot see. */
const findable = (err: unknown): err is AppError => err instanceof AppError && (err.row === ERRORS.MENSAJE_NOT_FOUND || err.row === ERRORS.INVALID_PARAMS);

export default async function mensajePages(app: FastifyInstance, deps: PanelDeps) {
  const { core } = deps;
  const pre = { preHandler: signedIn(core) };

  const notFound = (req: FastifyRequest, reply: FastifyReply, cid: number, value: string, err: AppError) =>
    sendPage(req, reply, { title: 'Find a message', clienteId: cid, current: 'historial' }, findForm(cid, value, { fields: { msg_id: err } }), err.status);

  app.get<{ Params: Params }>('/c/:cid/mensajes/:msgId', pre, async (req, reply) => {
    const cid = cidOf(req);
    const p = await clientScope(core, req, cid);
    let story: Awaited<ReturnType<typeof mensajeStory>>;
    try {
      story = await mensajeStory(core, p, req.params.msgId);
    } catch (err) {
      if (findable(err)) return notFound(req, reply, cid, req.params.msgId, err);
      throw err;
    }
    const m = story.mensaje;
    const facts: Array<[string, Html | string | number | null]> = [
      ['msg_id', html`<code>${m.msg_id}</code>`],
      ['estado', m.estado],
      ...(m.estado === 'error' ? ([['error', `${m.error ?? ''}${m.error_clase ? ` (${m.error_clase})` : ''}`]] as Array<[string, string]>) : []),
      ['celular', m.celular_id],
      ['destinatario', m.destinatario],
      ['tipo', `${m.tipo} (${m.modo === 'cola' ? 'queued' : 'direct'})`],
      ['texto', m.texto],
      ['gateway_msg_id', m.gateway_msg_id],
      // A retry names the message it sends again (D-96).
      ...(m.reintento_de
        ? ([['reintento_de', html`<a href="/panel/c/${cid}/mensajes/${encodeURIComponent(m.reintento_de)}"><code>${m.reintento_de}</code></a>`]] as Array<
            [string, Html]
          >)
        : []),
      // A scheduled send: when it is due (D-162).
      ...(m.enviar_en ? ([['enviar_en', m.enviar_en]] as Array<[string, string]>) : []),
    ];
    return sendPage(
      req,
      reply,
      { title: 'Message', clienteId: cid, current: 'historial' },
      html`<p><a href="/panel/c/${cid}/historial">Back to the history</a></p>
        <section class="card" aria-labelledby="record">
          <h2 id="record">Record</h2>
          <dl class="facts">${facts.map(([k, v]) => html`<dt>${k}</dt><dd>${v ?? '—'}</dd>`)}</dl>
        </section>
        <section aria-labelledby="story">
          <h2 id="story">Timeline</h2>
          ${listTable(story.timeline, STEPS, 'What happened to the message, in order')}
          ${
            story.timeline_omitidos > 0
              ? html`<p class="hint">${story.timeline_omitidos} more webhook attempts are not listed; the webhook page lists every delivery.</p>`
              : ''
          }
          <p class="hint">Times in UTC. A node is the serve process that took the step (its id's first characters); an older message shows what was recorded then.</p>
        </section>`,
    );
  });

  app.get<{ Params: { cid: string }; Querystring: { msg_id?: string } }>('/c/:cid/mensajes', pre, async (req, reply) => {
    const cid = cidOf(req);
    await clientScope(core, req, cid);
    const raw = req.query.msg_id;
    const id = (typeof raw === 'string' ? raw : '').trim();
    if (id === '') return notFound(req, reply, cid, '', new AppError('INVALID_PARAMS', 'msg_id: type the id a send answered'));
    return redirect(req, reply, `/panel/c/${cid}/mensajes/${encodeURIComponent(id)}`);
  });
}
