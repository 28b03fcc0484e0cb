import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { celularInScope, type ClientPrincipal } from '../../../core/auth/auth.js';
import { engineHolderOf, engineHolders, type Holders } from '../../../core/engine/engine-holders.js';
import {
  celularStatus,
  createCelular,
  deleteCelular,
  editCelular,
  listCelulares,
  rotateCelularKey,
  type CelularEdit,
} from '../../../core/accounts/celulares.js';
import { AppError } from '../../../core/api/errors.js';
import { listGatewayServers, moveCelular } from '../../../core/accounts/gateway-servers.js';
import { CELULAR_LIMITS, FIELD_LIMITS, VIGENCIA_S } from '../../../core/api/limits.js';
import { mensajeById } from '../../../core/history/mensaje.js';
import { CELULAR_ESTADOS, type CelularEstado, type CelularRow } from '../../../core/ports/model.js';
import { send, type SendRequest, type SendResult } from '../../../core/sending/send.js';
import { effectiveCaps, WARMUP_PLAN_NAMES } from '../../../core/sending/warmup.js';
import { viewAt } from '../../../core/api/views.js';
import { boolish } from '../../http.js';
import { clientScope, flash, panelOf, redirect, requireOperator, signedIn } from '../context.js';
import { csrfField, field, formErrorsOf, formValues, generalError, intField, NO_ERRORS, selectField, type FormErrors } from '../forms.js';
import { html, type Html } from '../html.js';
import type { PanelDeps } from '../index.js';
import { sendFragment, sendPage } from '../layout.js';
import { redirectToOnce } from '../shown-once.js';
import { engineNodeCell, estadoBadge, lineGoneHandler, lineUrl, linesTable, pathId, statusBadge } from './lines-common.js';
import { lineProfile } from '../../../core/accounts/session-actions.js';
import { resumeLine } from '../../../core/accounts/line-brake.js';
import { sessionCard, sessionRoutes, type SessionForm } from './celular-session.js';

/**
 * /panel/c/:cid/celulares: a client's lines (list, create) and one line's
 * page (its session live, a test send, settings, delete, move). Every change
 * is the core function the celular API routes call; a refusal is shown
 * beside the field it names, with the API's status and api_codigo.
 */

const CREATE_FIELDS = ['numero', 'nombre_interno'] as const;
const EDIT_FIELDS = [
  'nombre_interno',
  'max_envios_por_minuto',
  'max_envios_por_hora',
  'max_envios_por_dia',
  'hora_inicio_permitido',
  'hora_fin_permitido',
  'estado',
  'calentamiento',
  'freno',
] as const;
const SEND_FIELDS = ['destinatario', 'mensaje', 'directo', 'vigencia', 'enviar_en'] as const;
const DELETE_FIELDS = ['confirmacion'] as const;
const MOVE_FIELDS = ['servidor'] as const;

/** A form as last sent (what was typed) and its errors; absent: the form as the line stands. */
interface FormState {
  values: Record<string, string>;
  errors: FormErrors;
}

/** What a line page shows beside the line itself: a form answered in place, or a test send's result. */
interface LineForms {
  edit?: FormState;
  send?: FormState;
  /** A test send just accepted (the page it redirected to names it): what the notice shows. */
  sent?: Pick<SendResult, 'msg_id' | 'modo' | 'estado' | 'envio_desde' | 'enviar_en'>;
  del?: FormState;
  move?: FormState;
  /** The Session card's log out or restart, refused (celular-session.ts). */
  session?: SessionForm;
  rotate?: FormState;
}

type Params = { cid: string; id: string };

/** The client's scope and the line in it (core's celularInScope: another client's line is 404, a sibling of a celular session's line 403). */
async function lineOf(core: PanelDeps['core'], req: FastifyRequest<{ Params: Params }>) {
  const cid = pathId(req.params.cid);
  const id = pathId(req.params.id);
  const p = await clientScope(core, req, cid);
  const row = await celularInScope(core, p, id);
  return { cid, id, p, row };
}

/** The lines page: the table (with each line's engine node when the engine runs, D-137) and the create form. */
function listPage(
  req: FastifyRequest,
  reply: FastifyReply,
  cid: number,
  rows: Awaited<ReturnType<typeof listCelulares>>,
  holders: Holders | undefined,
  form?: FormState,
  status = 200,
) {
  const errors = form?.errors ?? NO_ERRORS;
  const v = form?.values ?? {};
  return sendPage(
    req,
    reply,
    { title: 'Lines', clienteId: cid, current: 'celulares' },
    html`${linesTable(cid, rows.celulares, html`<p class="empty">No lines yet. Create one below.</p>`, holders)}
      <h2>Create a line</h2>
      <form method="post" action="/panel/c/${cid}/celulares" class="card narrow">
        ${csrfField(req)} ${generalError(errors)}
        ${field(
          {
            name: 'numero',
            label: 'numero',
            type: 'tel',
            required: true,
            value: v.numero,
            maxlength: FIELD_LIMITS.numero,
            hint: 'The phone number of the line, country code first (+, spaces and dashes are fine).',
          },
          errors,
        )}
        ${field(
          {
            name: 'nombre_interno',
            label: 'nombre_interno',
            value: v.nombre_interno,
            maxlength: CELULAR_LIMITS.nombre_interno,
            hint: 'Optional: a name for your own use.',
          },
          errors,
        )}
        <button type="submit">Create line</button>
      </form>`,
    status,
  );
}

/** The line's settings as the form shows them: what was typed after a refusal, else the line's own. */
function settingsValues(row: CelularRow, form?: FormState): Record<string, string> {
  if (form) return form.values;
  return {
    nombre_interno: row.nombre_interno ?? '',
    max_envios_por_minuto: String(row.max_envios_por_minuto),
    max_envios_por_hora: String(row.max_envios_por_hora),
    max_envios_por_dia: row.max_envios_por_dia === null ? '' : String(row.max_envios_por_dia),
    hora_inicio_permitido: row.hora_inicio_permitido,
    hora_fin_permitido: row.hora_fin_permitido,
    estado: row.estado,
    calentamiento: row.calentamiento ?? '',
    freno: String(row.freno),
  };
}

/** The caps a send meets today: the configured ones, or the warm-up plan's lower ones with its day. */
function capsToday(row: CelularRow, at: { now: number; tz: string }): Html {
  const e = effectiveCaps(row, at.now, at.tz);
  const caps = `${e.max_envios_por_minuto} a minute, ${e.max_envios_por_hora} an hour, ${e.max_envios_por_dia ?? 'no cap'} a day`;
  if (!row.calentamiento) return html`${caps}`;
  return html`${caps} (warm-up ${row.calentamiento}, ${e.dia === null ? 'done: the caps set' : `day ${e.dia}`})`;
}

const range = (k: keyof typeof CELULAR_LIMITS & `max_${string}`) => `${CELULAR_LIMITS[k][0]} to ${CELULAR_LIMITS[k][1]}`;

/** The session status, refreshed from the gateway every few seconds while the page is open. */
function sessionFragment(cid: number, id: number, status: string, estado: string): Html {
  return html`<span id="sesion" hx-get="${lineUrl(cid, id)}/sesion" hx-trigger="every 5s" hx-swap="outerHTML" aria-live="polite"
    >${statusBadge(status)} ${estadoBadge(estado)}</span
  >`;
}

/** A test send's estado, followed until it is final (leido or error). */
function envioFragment(cid: number, id: number, msgId: string, estado: string): Html {
  const done = estado === 'leido' || estado === 'error';
  return html`<span
    id="envio-estado"
    ${done ? '' : html`hx-get="${lineUrl(cid, id)}/envios/${msgId}" hx-trigger="every 2s" hx-swap="outerHTML"`}
    aria-live="polite"
    >${estado}</span
  >`;
}

/** An instant as the API writes one (what `envio_desde` may be: the link is the server's own, but anyone can write one). */
const ISO_INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{3})?(Z|[+-]\d{2}:\d{2})$/;

/** The test send a line's page was sent to after its POST (`?enviado=msg_id`), read afresh; one of another line shows nothing. */
async function sentOf(core: PanelDeps['core'], p: ClientPrincipal, id: number, q: Record<string, unknown>): Promise<Pick<LineForms, 'sent'>> {
  if (typeof q.enviado !== 'string') return {};
  const m = await mensajeById(core, p, q.enviado).catch(() => null);
  if (!m || m.celular_id !== id) return {};
  return {
    sent: {
      msg_id: m.msg_id,
      modo: m.modo,
      estado: m.estado,
      ...(typeof q.envio_desde === 'string' && ISO_INSTANT.test(q.envio_desde) ? { envio_desde: q.envio_desde } : {}),
      ...(m.enviar_en ? { enviar_en: m.enviar_en } : {}),
    },
  };
}

async function linePage(
  deps: PanelDeps,
  req: FastifyRequest,
  reply: FastifyReply,
  p: ClientPrincipal,
  cid: number,
  row: CelularRow,
  forms: LineForms = {},
  status = 200,
) {
  const operator = panelOf(req).principal.kind === 'operator';
  const clientKey = p.kind === 'client';
  const url = lineUrl(cid, row.id);
  const servers = operator ? (await listGatewayServers(deps.core)).servidores : [];
  const s = settingsValues(row, forms.edit);
  const editErrors = forms.edit?.errors ?? NO_ERRORS;
  const sendErrors = forms.send?.errors ?? NO_ERRORS;
  const sv = forms.send?.values ?? {};
  const sent = forms.sent;
  const num = (name: (typeof EDIT_FIELDS)[number], label: string, hint: string) => field({ name, label, type: 'number', value: s[name], hint }, editErrors);
  const [perfil, holder] = await Promise.all([lineProfile(deps.core, row), engineHolderOf(deps.core, row.gateway_instancia)]);
  return sendPage(
    req,
    reply,
    { title: `Line ${row.numero}`, clienteId: cid, current: 'celulares' },
    html`<dl class="facts">
        <dt>nombre_interno</dt>
        <dd>${row.nombre_interno ?? html`<span class="empty">none</span>`}</dd>
        <dt>Session</dt>
        <dd>${sessionFragment(cid, row.id, row.last_status ?? 'unknown', row.estado)}</dd>
        <dt>saldo</dt>
        <dd>${row.saldo_actual}</dd>
        <dt>Caps today</dt>
        <dd>${capsToday(row, viewAt(deps.core))}</dd>
        <dt>celular id</dt>
        <dd>${row.id}</dd>
        <dt>gateway_instancia</dt>
        <dd>${row.gateway_instancia ?? html`<span class="empty">none yet (made when the line is linked)</span>`}</dd>
        ${holder === undefined ? '' : html`<dt>Engine node</dt><dd>${engineNodeCell(holder)}</dd>`}
        <dt>Brake</dt>
        <dd>
          ${
            row.frenado === 1
              ? html`<span class="badge bad">braked</span> ${row.frenado_motivo ?? ''}: its queue waits for a resume`
              : html`${row.freno === 1 ? 'on' : 'off'}: a crossed health threshold ${row.freno === 1 ? 'pauses its queue' : 'only alerts'}`
          }
        </dd>
      </dl>
      ${
        row.frenado === 1
          ? html`<form method="post" action="${url}/reanudar" class="actions">
              ${csrfField(req)}<button type="submit">Resume this line</button>
            </form>`
          : ''
      }
      <p class="actions">
        ${
          row.last_status === 'connected'
            ? html`<a class="button secondary" href="${url}/vincular">Link it again</a>`
            : html`<a class="button" href="${url}/vincular">Link this line</a>`
        }
        <a class="button secondary" href="/panel/c/${cid}/historial?celular_id=${row.id}">History of this line</a>
        <a class="button secondary" href="/panel/c/${cid}/eventos?celular_id=${row.id}">Live events of this line</a>
        <a class="button secondary" href="/panel/c/${cid}/cola?celular_id=${row.id}">Queue of this line</a>
      </p>
      ${sessionCard(req, row, perfil, forms.session)}

      <h2>Send a test text</h2>
      ${
        sent
          ? html`<div class="card" role="status">
            <p>
              Accepted: msg_id <code>${sent.msg_id}</code>, modo ${sent.modo}, estado
              ${envioFragment(cid, row.id, sent.msg_id, sent.estado)}${sent.envio_desde ? html`, sent from ${sent.envio_desde}` : ''}${sent.enviar_en ? html`, scheduled for ${sent.enviar_en}` : ''}.
            </p>
            <p><a href="/panel/c/${cid}/historial?celular_id=${row.id}">See it in the history of this line</a></p>
          </div>`
          : ''
      }
      <form method="post" action="${url}/enviar" class="card narrow">
        ${csrfField(req)} ${generalError(sendErrors)}
        ${field(
          {
            name: 'destinatario',
            label: 'destinatario',
            type: 'tel',
            required: true,
            value: sv.destinatario,
            maxlength: FIELD_LIMITS.destinatario,
            hint: "Country code first; a national number of the line's country works too.",
          },
          sendErrors,
        )}
        ${field({ name: 'mensaje', label: 'mensaje', required: true, value: sv.mensaje, maxlength: FIELD_LIMITS.mensaje }, sendErrors)}
        ${selectField(
          {
            name: 'directo',
            label: 'How to send',
            value: sv.directo ?? '0',
            options: [
              ['0', 'Queue it: within caps and hours'],
              ['1', 'Directly: now'],
            ],
            hint: "Queued, the worker sends it within the line's caps and hours; directly, it is sent now and the answer waits for the gateway.",
          },
          sendErrors,
        )}
        ${field(
          {
            // Text, not a number (a browser refuses an instant in one), and the text keyboard: an instant needs its T and zone.
            name: 'vigencia',
            label: 'vigencia (optional)',
            value: sv.vigencia,
            maxlength: 64,
            autocomplete: 'off',
            placeholder: '300 or 2026-12-01T09:35:00-03:00',
            hint: `Seconds (${VIGENCIA_S.min} to ${VIGENCIA_S.max}) a queued text may wait, or the RFC 3339 instant it must be handed over by (${VIGENCIA_S.min} s to ${VIGENCIA_S.max / 3600} h after the send starts: now, or Send at); past it, it ends caducado and is refunded. Ignored when sent directly.`,
          },
          sendErrors,
        )}
        ${field(
          {
            name: 'enviar_en',
            label: 'Send at (optional)',
            value: sv.enviar_en,
            maxlength: 64,
            placeholder: '2026-12-01T09:30:00-03:00',
            hint: 'An RFC 3339 instant with its zone, at most 30 days ahead; empty: now. Queued sends only.',
          },
          sendErrors,
        )}
        <button type="submit">Send test text</button>
      </form>

      <h2>Settings</h2>
      <form method="post" action="${url}" class="card">
        ${csrfField(req)} ${generalError(editErrors)}
        ${field({ name: 'nombre_interno', label: 'nombre_interno', value: s.nombre_interno, maxlength: CELULAR_LIMITS.nombre_interno }, editErrors)}
        <div class="form-row">
          ${num('max_envios_por_minuto', 'max_envios_por_minuto', `Sends a minute: ${range('max_envios_por_minuto')}.`)}
          ${num('max_envios_por_hora', 'max_envios_por_hora', `Sends an hour: ${range('max_envios_por_hora')}.`)}
          ${num('max_envios_por_dia', 'max_envios_por_dia', `Sends a day: ${range('max_envios_por_dia')}; empty for no daily cap.`)}
        </div>
        <div class="form-row">
          ${field({ name: 'hora_inicio_permitido', label: 'hora_inicio_permitido', value: s.hora_inicio_permitido, placeholder: 'HH:MM', hint: 'Sends may start at (HH:MM, server time).' }, editErrors)}
          ${field({ name: 'hora_fin_permitido', label: 'hora_fin_permitido', value: s.hora_fin_permitido, placeholder: 'HH:MM', hint: 'Sends end at (HH:MM).' }, editErrors)}
        </div>
        ${selectField(
          {
            name: 'calentamiento',
            label: 'calentamiento',
            value: s.calentamiento ?? '',
            options: [['', 'none: the caps above from now'] as const, ...WARMUP_PLAN_NAMES.map((n) => [n, n] as const)],
            hint: 'A warm-up plan: the caps rise day by day to the ones above (a new number that sends too much too soon gets banned). Choosing a plan starts it today.',
          },
          editErrors,
        )}
        ${selectField(
          {
            name: 'freno',
            label: 'freno',
            value: s.freno ?? '0',
            options: [
              ['0', 'off: alert only'],
              ['1', 'on: pause the queue'],
            ] as const,
            hint: "The brake: when too many of this line's recent sends fail or are refused, its queued messages wait for an operator.",
          },
          editErrors,
        )}
        ${
          clientKey
            ? selectField(
                {
                  name: 'estado',
                  label: 'estado',
                  value: s.estado,
                  options: CELULAR_ESTADOS.map((e) => [e, e] as const),
                  hint: 'suspendido stops every send of the line; the session sets activo or desconectado.',
                },
                editErrors,
              )
            : ''
        }
        <button type="submit">Save settings</button>
      </form>

      ${operator ? moveSection(req, row, servers, forms.move) : ''} ${operator ? rotateSection(req, row, url, forms.rotate) : ''}
      ${clientKey ? deleteSection(req, row, url, forms.del) : ''}`,
    status,
  );
}

function moveSection(req: FastifyRequest, row: CelularRow, servers: Array<{ id: number; nombre: string; estado: string }>, form?: FormState): Html {
  const errors = form?.errors ?? NO_ERRORS;
  const here = servers.find((g) => g.id === row.servidor_id);
  const others = servers.filter((g) => g.id !== row.servidor_id);
  const head = html`<h2>Gateway server</h2>
    ${generalError(errors)}`;
  if (others.length === 0)
    return html`${head}
      <p class="empty">
        ${
          servers.length === 0
            ? 'This deployment has no gateway servers to move the line between (the simulator, or one gateway URL).'
            : 'There is no other gateway server to move the line to: add one on the Gateway servers page.'
        }
      </p>`;
  return html`${head}
    <p>On ${here ? here.nombre : html`<span class="empty">none yet</span>`}. A moved line is logged out and must be linked again.</p>
    <form method="post" action="${lineUrl(row.cliente_id, row.id)}/mover" class="card narrow">
      ${csrfField(req)}
      ${selectField(
        {
          name: 'servidor',
          label: 'Move to',
          value: form?.values.servidor,
          options: others.map((g) => [g.nombre, g.estado === 'activo' ? g.nombre : `${g.nombre} (${g.estado})`] as const),
        },
        errors,
      )}
      <button type="submit">Move line</button>
    </form>`;
}

/** The operator's rotation of the line's key: asked for with a typed confirmation, as a delete is. */
function rotateSection(req: FastifyRequest, row: CelularRow, url: string, form?: FormState): Html {
  const errors = form?.errors ?? NO_ERRORS;
  return html`<h2>Line key</h2>
    <form method="post" action="${url}/rotar-key" class="card narrow danger-zone">
      ${csrfField(req)} ${generalError(errors)}
      <p>A new api_key replaces the line's at once: the old one stops working and the panel sessions opened with it end.</p>
      ${field({ name: 'confirmacion', label: `Type the line's numero (${row.numero}) to confirm`, value: form?.values.confirmacion, autocomplete: 'off', confirm: row.numero }, errors)}
      <button type="submit" class="danger">Rotate line key</button>
    </form>`;
}

function deleteSection(req: FastifyRequest, row: CelularRow, url: string, form?: FormState): Html {
  const errors = form?.errors ?? NO_ERRORS;
  return html`<h2>Delete this line</h2>
    <form method="post" action="${url}/eliminar" class="card narrow danger-zone">
      ${csrfField(req)} ${generalError(errors)}
      <p>Deleting removes the line, its key and its gateway session for good.</p>
      ${field({ name: 'confirmacion', label: `Type the line's numero (${row.numero}) to confirm`, value: form?.values.confirmacion, autocomplete: 'off', confirm: row.numero }, errors)}
      <button type="submit" class="danger">Delete line</button>
    </form>`;
}

/**
 * The changes the settings form asks for: only the fields it sent that differ
 * from the line (so the audit records what changed; a field left out changes
 * nothing).
 */
function editOf(values: Record<string, string>, row: CelularRow, withEstado: boolean): CelularEdit {
  const edit: CelularEdit = {};
  if (values.nombre_interno !== undefined) {
    const nombre = values.nombre_interno.trim();
    if (nombre !== (row.nombre_interno ?? '')) edit.nombre_interno = nombre === '' ? null : nombre;
  }
  for (const k of ['max_envios_por_minuto', 'max_envios_por_hora', 'max_envios_por_dia'] as const) {
    if (values[k] === undefined) continue;
    // An emptied cap is null: no daily cap, and for the others the API's own refusal of null.
    const v = intField(values, k) ?? null;
    if (v !== row[k]) edit[k] = v as number;
  }
  for (const k of ['hora_inicio_permitido', 'hora_fin_permitido'] as const) {
    const v = values[k]?.trim();
    if (v !== undefined && v !== row[k]) edit[k] = v;
  }
  if (withEstado && values.estado !== undefined && values.estado !== row.estado) edit.estado = values.estado as CelularEstado;
  const plan = values.calentamiento?.trim();
  if (plan !== undefined && plan !== (row.calentamiento ?? '')) edit.calentamiento = plan === '' ? null : plan;
  // Anything but 0 or 1 is not a choice the form offers: refused beside the field, never read as "unchanged".
  if (values.freno !== undefined && values.freno !== '0' && values.freno !== '1') throw new AppError('INVALID_PARAMS', 'freno must be 0 (off) or 1 (on)');
  if (values.freno !== undefined && Number(values.freno) !== row.freno) edit.freno = values.freno === '1';
  return edit;
}

/** A refusal of a form: beside its field, or above the form; the gateway's own refusals (502, 503) are the API's answers too, not server faults. */
function refusal(err: unknown, fields: readonly string[]): FormErrors {
  if (err instanceof AppError && err.status > 500) return { fields: {}, general: err };
  return formErrorsOf(err, fields);
}

export default async function celularesPages(app: FastifyInstance, deps: PanelDeps) {
  lineGoneHandler(app);
  const { core } = deps;
  const pre = { preHandler: signedIn(core) };

  app.get<{ Params: { cid: string } }>('/c/:cid/celulares', pre, async (req, reply) => {
    const cid = pathId(req.params.cid);
    const p = await clientScope(core, req, cid);
    // A line's session sees its own line, never a list of its siblings.
    if (p.kind === 'celular') return redirect(req, reply, lineUrl(cid, p.celular.id));
    const [rows, holders] = await Promise.all([listCelulares(core, p), engineHolders(core)]);
    return listPage(req, reply, cid, rows, holders);
  });

  /**
   * The walk: 5215512345678 typed, "Line 525512345678 is created" shown, and
   * nothing said why the number changed (Mexico's mobile 1 is dropped).
   */
  const writtenAs = (typed: string, stored: string) => {
    const digits = typed.replace(/\D/g, '');
    return digits === stored ? '' : ` You typed ${typed.trim()}: this is the same number in the international form pasarela stores and sends from.`;
  };

  app.post<{ Params: { cid: string } }>('/c/:cid/celulares', pre, async (req, reply) => {
    const cid = pathId(req.params.cid);
    const p = await clientScope(core, req, cid);
    const values = formValues(req);
    try {
      const r = await createCelular(core, p, { numero: values.numero ?? '', nombre_interno: values.nombre_interno ?? null }, (err) =>
        req.log.warn({ err }, 'gateway instance creation failed; it will be created when the line is linked'),
      );
      // The keys exist in clear only now: kept for one read by the page this redirects to (a reload shows them no more).
      const line = lineUrl(cid, r.celular.id);
      return await redirectToOnce(
        core,
        req,
        reply,
        {
          title: 'Line created',
          clienteId: cid,
          current: 'celulares',
          lead: `Line ${r.celular.numero} is created (estado ${r.celular.estado}).${writtenAs(values.numero ?? '', r.celular.numero)} Link it to WhatsApp next.`,
          secrets: [
            { id: 'new-key', label: 'api_key (sends and reads as this line only)', value: r.api_key },
            { id: 'new-token', label: 'gateway_token (for the legacy endpoint /panel/api_wa.php)', value: r.gateway_token },
          ],
          note: 'They are shown only on this page, once: pasarela keeps no copy, so a lost key can only be replaced (the operator rotates it).',
          links: [
            { href: `${line}/vincular`, label: 'Link this line' },
            { href: line, label: 'Line page' },
            { href: `/panel/c/${cid}/celulares`, label: 'Back to the lines' },
          ],
        },
        line,
      );
    } catch (err) {
      // A line's session may not create (core refuses it): the refusal page, not the list of siblings.
      if (p.kind === 'celular') throw err;
      const errors = refusal(err, CREATE_FIELDS);
      const [rows, holders] = await Promise.all([listCelulares(core, p), engineHolders(core)]);
      return listPage(req, reply, cid, rows, holders, { values, errors }, (errors.general ?? Object.values(errors.fields)[0])!.status);
    }
  });

  app.get<{ Params: Params }>('/c/:cid/celulares/:id', pre, async (req, reply) => {
    const { cid, id, p, row } = await lineOf(core, req);
    return linePage(deps, req, reply, p, cid, row, { ...(await sentOf(core, p, id, req.query as Record<string, unknown>)) });
  });

  app.post<{ Params: Params }>('/c/:cid/celulares/:id', pre, async (req, reply) => {
    const { cid, id, p, row } = await lineOf(core, req);
    const values = formValues(req);
    let changed = true;
    try {
      const edit = editOf(values, row, p.kind === 'client');
      // editOf keeps only what differs from the line, so a form sent again or unchanged is known here, before core is
      // asked: nothing is written or audited, and no refusal is matched by its words (core's "nothing to change" 400
      // stays the API's and the CLI's answer).
      changed = Object.keys(edit).length > 0;
      if (changed) await editCelular(core, p, id, edit);
    } catch (err) {
      const errors = refusal(err, EDIT_FIELDS);
      return linePage(deps, req, reply, p, cid, row, { edit: { values, errors } }, statusOf(errors));
    }
    flash(req, reply, changed ? 'Settings saved.' : 'Nothing changed: the settings were already these.');
    return redirect(req, reply, lineUrl(cid, id));
  });

  app.post<{ Params: Params }>('/c/:cid/celulares/:id/enviar', pre, async (req, reply) => {
    const { cid, id, p, row } = await lineOf(core, req);
    const values = formValues(req);
    try {
      // The text route's request (routes/send.ts), from the form's fields.
      const sreq: SendRequest = {
        tipo: 'texto',
        destinatario: values.destinatario ?? '',
        directo: boolish(values.directo, 'directo'),
        celular_id: id,
        texto: values.mensaje ?? '',
        // As the API's form body gives it: digits are seconds, anything else an instant; core's checkVigencia and validityEnd judge both.
        ...(values.vigencia?.trim() ? { vigencia: values.vigencia.trim() } : {}),
        ...(values.enviar_en ? { enviar_en: values.enviar_en } : {}),
      };
      // Without an Idempotency-Key nothing is replayed: the answer is always rendered from this send's result.
      let result: SendResult | undefined;
      await send(core, deps.send, p, sreq, (r) => {
        result = r;
        return { msg_id: r.msg_id };
      });
      // Post/redirect/get: a reload of the page shows the send again, it does not make it again.
      const q = new URLSearchParams({ enviado: result!.msg_id, ...(result!.envio_desde ? { envio_desde: result!.envio_desde } : {}) });
      return redirect(req, reply, `${lineUrl(cid, id)}?${q.toString()}`);
    } catch (err) {
      const errors = refusal(err, SEND_FIELDS);
      return linePage(deps, req, reply, p, cid, row, { send: { values, errors } }, statusOf(errors));
    }
  });

  // A braked line resumed (core/accounts/line-brake.ts), as POST /api/celular_reanudar.php does.
  app.post<{ Params: Params }>('/c/:cid/celulares/:id/reanudar', pre, async (req, reply) => {
    const { cid, id, p, row } = await lineOf(core, req);
    const r = await resumeLine(core, p, id);
    flash(req, reply, r.reanudado ? `Line ${row.numero} resumed: its queue goes on.` : `Line ${row.numero} was not braked.`);
    return redirect(req, reply, lineUrl(cid, id));
  });

  app.post<{ Params: Params }>('/c/:cid/celulares/:id/eliminar', pre, async (req, reply) => {
    const { cid, id, p, row } = await lineOf(core, req);
    const values = formValues(req);
    try {
      // The typed confirmation is checked here too: a form sent without the page's script deletes nothing by mistake.
      if ((values.confirmacion ?? '').trim() !== row.numero)
        throw new AppError('INVALID_PARAMS', `confirmacion: type the line's numero, ${row.numero}, to delete it`);
      await deleteCelular(core, p, id, (err) => req.log.warn({ err }, 'gateway instance removal failed; the celular is deleted'));
    } catch (err) {
      const errors = refusal(err, DELETE_FIELDS);
      return linePage(deps, req, reply, p, cid, row, { del: { values, errors } }, statusOf(errors));
    }
    flash(req, reply, `Line ${row.numero} deleted.`);
    return redirect(req, reply, `/panel/c/${cid}/celulares`);
  });

  app.post<{ Params: Params }>('/c/:cid/celulares/:id/rotar-key', pre, async (req, reply) => {
    requireOperator(req);
    const { cid, id, p, row } = await lineOf(core, req);
    const values = formValues(req);
    let key: string;
    try {
      if ((values.confirmacion ?? '').trim() !== row.numero)
        throw new AppError('INVALID_PARAMS', `confirmacion: type the line's numero, ${row.numero}, to rotate its key`);
      key = (await rotateCelularKey(core, id)).api_key;
    } catch (err) {
      const errors = refusal(err, ['confirmacion']);
      return linePage(deps, req, reply, p, cid, row, { rotate: { values, errors } }, statusOf(errors));
    }
    const url = lineUrl(cid, id);
    return redirectToOnce(
      core,
      req,
      reply,
      {
        title: 'New line key',
        clienteId: cid,
        current: 'celulares',
        lead: `The old api_key of line ${row.numero} no longer works. The new one:`,
        secrets: [{ id: 'new-key', label: 'api_key (sends and reads as this line only)', value: key }],
        note: 'It is shown once, here: a reload of this page does not show it again. pasarela keeps only its hash.',
        links: [
          { href: url, label: 'Line page' },
          { href: `/panel/c/${cid}/celulares`, label: 'Back to the lines' },
        ],
      },
      url,
    );
  });

  app.post<{ Params: Params }>('/c/:cid/celulares/:id/mover', pre, async (req, reply) => {
    requireOperator(req);
    const { cid, id, p, row } = await lineOf(core, req);
    const values = formValues(req);
    let aviso: string | undefined;
    try {
      aviso = (await moveCelular(core, id, values.servidor ?? '')).aviso;
    } catch (err) {
      const errors = refusal(err, MOVE_FIELDS);
      return linePage(deps, req, reply, p, cid, row, { move: { values, errors } }, statusOf(errors));
    }
    flash(req, reply, `Line moved to ${values.servidor}: link it again.${aviso ? ` Note: ${aviso}` : ''}`);
    return redirect(req, reply, lineUrl(cid, id));
  });

  sessionRoutes(app, deps, (req, reply, p, cid, row, session, status) => linePage(deps, req, reply, p, cid, row, { session }, status));

  app.get<{ Params: Params }>('/c/:cid/celulares/:id/sesion', pre, async (req, reply) => {
    const { cid, id, p } = await lineOf(core, req);
    const st = await celularStatus(core, p, id);
    return sendFragment(reply, sessionFragment(cid, id, st.status, st.estado));
  });

  app.get<{ Params: Params & { msgId: string } }>('/c/:cid/celulares/:id/envios/:msgId', pre, async (req, reply) => {
    const { cid, id, p } = await lineOf(core, req);
    const m = await mensajeById(core, p, req.params.msgId);
    if (m.celular_id !== id) throw new AppError('MENSAJE_NOT_FOUND', `message ${m.msg_id} is not of celular ${id}`);
    return sendFragment(reply, envioFragment(cid, id, m.msg_id, m.estado));
  });
}

const statusOf = (errors: FormErrors): number => (errors.general ?? Object.values(errors.fields)[0])!.status;
