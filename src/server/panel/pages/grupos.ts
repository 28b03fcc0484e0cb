import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ClientPrincipal } from '../../../core/auth/auth.js';
import { listCelulares } from '../../../core/accounts/celulares.js';
import { createGrupo, deleteGrupo, editGrupo, listGrupos, type GrupoInput } from '../../../core/accounts/grupos.js';
import { AppError, ERRORS } from '../../../core/api/errors.js';
import { GRUPO_LIMITS } from '../../../core/api/limits.js';
import type { GrupoRow } from '../../../core/ports/grupos.js';
import { clientScope, flash, redirect, signedIn } from '../context.js';
import { csrfField, errorText, field, formErrorsOf, formValues, generalError, NO_ERRORS, type FormErrors } from '../forms.js';
import { html, type Html } from '../html.js';
import type { PanelDeps } from '../index.js';
import { sendPage } from '../layout.js';
import { listTable } from '../listing.js';
import { lineUrl, pathId } from './lines-common.js';

/**
 * /panel/c/:cid/grupos: a client's pools of lines (docs/pools.md): the list
 * and a create form, and one pool's page (edit its name, lines and failover
 * wait; delete it after typing its name). Every change is the core function
 * the grupo API routes call; a refusal is shown beside the field it names.
 */

const FIELDS = ['nombre', 'celulares', 'conmutacion_s'] as const;
const DELETE_FIELDS = ['confirmacion'] as const;

type Lines = Awaited<ReturnType<typeof listCelulares>>['celulares'];

/** A form as last sent (what was typed, the lines ticked) and its errors. */
interface FormState {
  values: Record<string, string>;
  celulares: number[];
  errors: FormErrors;
}

export const gruposUrl = (cid: number) => `/panel/c/${cid}/grupos`;
const grupoUrl = (cid: number, id: number) => `${gruposUrl(cid)}/${id}`;

const waitText = (s: number | null): string => (s === null ? 'never' : `${s} s`);

/** The lines a form ticked, as sent (one value, several, or none), for core to read as the API's `celulares`. */
function tickedOf(req: FastifyRequest): string | string[] {
  const raw = (req.body as Record<string, unknown> | undefined)?.celulares;
  if (typeof raw === 'string') return raw;
  return Array.isArray(raw) ? raw.filter((x): x is string => typeof x === 'string') : '';
}

/** Ids to tick again when a refused form is shown back (only the well-formed ones; core said what was wrong). */
const idsOf = (raw: string | string[]): number[] => (Array.isArray(raw) ? raw : raw.split(/[\s,]+/)).filter((x) => /^[1-9]\d{0,14}$/.test(x)).map(Number);

/** What a form sends to core: the API's fields, as a form of the API would send them. */
const inputOf = (values: Record<string, string>, ticked: string | string[]): GrupoInput => ({
  nombre: values.nombre ?? '',
  celulares: ticked,
  conmutacion_s: values.conmutacion_s ?? '',
});

/** A refusal beside its field: a taken name beside the name, another client's line beside the lines. */
function refusal(err: unknown, fields: readonly string[]): FormErrors {
  if (err instanceof AppError && err.row === ERRORS.GROUP_NAME_TAKEN && fields.includes('nombre')) return { fields: { nombre: err } };
  if (err instanceof AppError && err.row === ERRORS.CELULAR_NOT_FOUND && fields.includes('celulares')) return { fields: { celulares: err } };
  return formErrorsOf(err, fields);
}

const statusOf = (errors: FormErrors): number => (errors.general ?? Object.values(errors.fields)[0])!.status;

/** The client's lines as checkboxes, those of the pool ticked. */
function linesField(cid: number, lines: Lines, ticked: readonly number[], errors: FormErrors): Html {
  const err = errors.fields.celulares;
  return html`<fieldset class="field checks${err ? ' invalid' : ''}" ${err ? html`aria-describedby="f-celulares-error"` : ''}>
    <legend>Lines (celulares)</legend>
    ${
      lines.length === 0
        ? html`<p class="empty">This client has no lines yet: <a href="/panel/c/${cid}/celulares">create one</a> first.</p>`
        : lines.map(
            (l) =>
              html`<label class="check"
                ><input type="checkbox" name="celulares" value="${l.id}" ${ticked.includes(l.id) ? html`checked` : ''} /> ${l.numero}${
                  l.nombre_interno ? ` (${l.nombre_interno})` : ''
                } <span class="hint">id ${l.id}, ${l.estado}</span></label
              >`,
          )
    }
    <small class="hint">A send to the pool goes from one of these; at most ${GRUPO_LIMITS.celulares}.</small>
    ${err ? html`<p id="f-celulares-error" class="field-error" role="alert">${errorText(err)}</p>` : ''}
  </fieldset>`;
}

/** The fields of the create and the edit forms. */
function grupoFields(cid: number, lines: Lines, v: Record<string, string>, ticked: readonly number[], errors: FormErrors): Html {
  const [min, max] = GRUPO_LIMITS.conmutacion_s;
  return html`${field(
    {
      name: 'nombre',
      label: 'nombre',
      required: true,
      value: v.nombre,
      maxlength: GRUPO_LIMITS.nombre,
      hint: 'The name a send gives as grupo; unique among your pools.',
    },
    errors,
  )}
  ${linesField(cid, lines, ticked, errors)}
  ${field(
    {
      name: 'conmutacion_s',
      label: 'conmutacion_s (failover wait)',
      type: 'number',
      value: v.conmutacion_s,
      hint: `Seconds a line may stay unable to send before its queued messages move to another line of the pool: ${min} to ${max}. Empty: never.`,
    },
    errors,
  )}`;
}

function listPage(req: FastifyRequest, reply: FastifyReply, cid: number, grupos: GrupoRow[], lines: Lines, form?: FormState, status = 200) {
  const errors = form?.errors ?? NO_ERRORS;
  const numero = new Map(lines.map((l) => [l.id, l.numero]));
  const table =
    grupos.length === 0
      ? html`<p class="empty">No pools yet. Create one below.</p>`
      : listTable(
          grupos,
          [
            { label: 'nombre', cell: (g) => html`<a href="${grupoUrl(cid, g.id)}">${g.nombre}</a>` },
            {
              label: 'lines',
              cell: (g) => g.celulares.map((id, i) => html`${i > 0 ? ', ' : ''}<a href="${lineUrl(cid, id)}">${numero.get(id) ?? `line ${id}`}</a>`),
            },
            { label: 'conmutacion_s', cls: 'num', cell: (g) => waitText(g.conmutacion_s) },
            { label: 'id', cls: 'num', cell: (g) => g.id },
          ],
          'Pools of lines',
        );
  return sendPage(
    req,
    reply,
    { title: 'Pools', clienteId: cid, current: 'grupos' },
    html`<p class="hint">A send naming a pool (<code>grupo</code>) instead of a line goes from one of its lines: the one that last wrote to
      that recipient while it can send, else the one with the most room under its caps. When a line stays down longer than its
      pool's <code>conmutacion_s</code>, its queued messages move to another line of the pool (a braked or suspended line is skipped).</p>
      ${table}
      <h2>Create a pool</h2>
      <form method="post" action="${gruposUrl(cid)}" class="card narrow">
        ${csrfField(req)} ${generalError(errors)} ${grupoFields(cid, lines, form?.values ?? {}, form?.celulares ?? [], errors)}
        <button type="submit">Create pool</button>
      </form>`,
    status,
  );
}

interface PoolForms {
  edit?: FormState;
  del?: { values: Record<string, string>; errors: FormErrors };
}

function poolPage(req: FastifyRequest, reply: FastifyReply, cid: number, g: GrupoRow, lines: Lines, forms: PoolForms = {}, status = 200) {
  const url = grupoUrl(cid, g.id);
  const errors = forms.edit?.errors ?? NO_ERRORS;
  const v = forms.edit?.values ?? { nombre: g.nombre, conmutacion_s: g.conmutacion_s === null ? '' : String(g.conmutacion_s) };
  const ticked = forms.edit?.celulares ?? g.celulares;
  const delErrors = forms.del?.errors ?? NO_ERRORS;
  return sendPage(
    req,
    reply,
    { title: `Pool ${g.nombre}`, clienteId: cid, current: 'grupos' },
    html`<dl class="facts">
        <dt>id</dt>
        <dd>${g.id}</dd>
        <dt>conmutacion_s</dt>
        <dd>${waitText(g.conmutacion_s)}</dd>
      </dl>
      <p class="actions"><a class="button secondary" href="${gruposUrl(cid)}">Back to the pools</a></p>
      <h2>Edit</h2>
      <form method="post" action="${url}" class="card narrow">
        ${csrfField(req)} ${generalError(errors)} ${grupoFields(cid, lines, v, ticked, errors)}
        <p class="hint">Saving replaces the pool's lines with those ticked.</p>
        <button type="submit">Save pool</button>
      </form>
      <h2>Delete this pool</h2>
      <form method="post" action="${url}/eliminar" class="card narrow danger-zone">
        ${csrfField(req)} ${generalError(delErrors)}
        <p>Deleting removes the pool only: its lines stay, and sends naming it are refused.</p>
        ${field(
          {
            name: 'confirmacion',
            label: `Type the pool's name (${g.nombre}) to confirm`,
            value: forms.del?.values.confirmacion,
            autocomplete: 'off',
            confirm: g.nombre,
          },
          delErrors,
        )}
        <button type="submit" class="danger">Delete pool</button>
      </form>`,
    status,
  );
}

/** The pool `id` of the client, as core lists them; another client's or a deleted one is the API's 404. */
async function poolOf(core: PanelDeps['core'], p: ClientPrincipal, id: number): Promise<GrupoRow> {
  const g = (await listGrupos(core, p)).find((x) => x.id === id);
  if (!g) throw new AppError('GROUP_NOT_FOUND', `pool ${id} not found`);
  return g;
}

export default async function gruposPages(app: FastifyInstance, deps: PanelDeps) {
  const { core } = deps;
  const pre = { preHandler: signedIn(core) };
  const linesOf = async (p: ClientPrincipal) => (await listCelulares(core, p)).celulares;

  app.get<{ Params: { cid: string } }>('/c/:cid/grupos', pre, async (req, reply) => {
    const cid = pathId(req.params.cid);
    const p = await clientScope(core, req, cid);
    // A line's session has its line only, never the client's pools.
    if (p.kind === 'celular') return redirect(req, reply, lineUrl(cid, p.celular.id));
    const [grupos, lines] = await Promise.all([listGrupos(core, p), linesOf(p)]);
    return listPage(req, reply, cid, grupos, lines);
  });

  app.post<{ Params: { cid: string } }>('/c/:cid/grupos', pre, async (req, reply) => {
    const cid = pathId(req.params.cid);
    const p = await clientScope(core, req, cid);
    const values = formValues(req);
    const ticked = tickedOf(req);
    try {
      const g = await createGrupo(core, p, inputOf(values, ticked));
      flash(req, reply, `Pool ${g.nombre} created.`);
      return redirect(req, reply, gruposUrl(cid));
    } catch (err) {
      if (p.kind === 'celular') throw err;
      const errors = refusal(err, FIELDS);
      const [grupos, lines] = await Promise.all([listGrupos(core, p), linesOf(p)]);
      return listPage(req, reply, cid, grupos, lines, { values, celulares: idsOf(ticked), errors }, statusOf(errors));
    }
  });

  app.get<{ Params: { cid: string; id: string } }>('/c/:cid/grupos/:id', pre, async (req, reply) => {
    const cid = pathId(req.params.cid);
    const id = pathId(req.params.id);
    const p = await clientScope(core, req, cid);
    if (p.kind === 'celular') return redirect(req, reply, lineUrl(cid, p.celular.id));
    const [g, lines] = await Promise.all([poolOf(core, p, id), linesOf(p)]);
    return poolPage(req, reply, cid, g, lines);
  });

  app.post<{ Params: { cid: string; id: string } }>('/c/:cid/grupos/:id', pre, async (req, reply) => {
    const cid = pathId(req.params.cid);
    const id = pathId(req.params.id);
    const p = await clientScope(core, req, cid);
    const values = formValues(req);
    const ticked = tickedOf(req);
    try {
      const g = await editGrupo(core, p, { id }, inputOf(values, ticked));
      flash(req, reply, `Pool ${g.nombre} saved.`);
      return redirect(req, reply, grupoUrl(cid, id));
    } catch (err) {
      if (p.kind === 'celular') throw err;
      const errors = refusal(err, FIELDS);
      const [g, lines] = await Promise.all([poolOf(core, p, id), linesOf(p)]);
      return poolPage(req, reply, cid, g, lines, { edit: { values, celulares: idsOf(ticked), errors } }, statusOf(errors));
    }
  });

  app.post<{ Params: { cid: string; id: string } }>('/c/:cid/grupos/:id/eliminar', pre, async (req, reply) => {
    const cid = pathId(req.params.cid);
    const id = pathId(req.params.id);
    const p = await clientScope(core, req, cid);
    const g = await poolOf(core, p, id);
    const values = formValues(req);
    try {
      // The typed confirmation is checked here too: a form sent without the page's script deletes nothing by mistake.
      if ((values.confirmacion ?? '').trim() !== g.nombre)
        throw new AppError('INVALID_PARAMS', `confirmacion: type the pool's name, ${g.nombre}, to delete it`);
      await deleteGrupo(core, p, { id });
    } catch (err) {
      if (p.kind === 'celular') throw err;
      const errors = refusal(err, DELETE_FIELDS);
      const lines = await linesOf(p);
      return poolPage(req, reply, cid, g, lines, { del: { values, errors } }, statusOf(errors));
    }
    flash(req, reply, `Pool ${g.nombre} deleted; its lines stay.`);
    return redirect(req, reply, gruposUrl(cid));
  });
}
