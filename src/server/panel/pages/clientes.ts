import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { addBalance, createCliente, editCliente, findClientes, rotateClienteKey, showCliente } from '../../../core/accounts/accounts.js';
import { AppError } from '../../../core/api/errors.js';
import { FIELD_LIMITS } from '../../../core/api/limits.js';
import type { ClientePatch } from '../../../core/ports/accounts.js';
import type { ClienteEstado, Plan } from '../../../core/ports/model.js';
import { flash, redirect, requireOperator, signedIn } from '../context.js';
import { csrfField, field, formErrorsOf, formValues, generalError, intField, NO_ERRORS, selectField, type FormErrors } from '../forms.js';
import { html } from '../html.js';
import type { PanelDeps } from '../index.js';
import { sendPage } from '../layout.js';
import { listTable } from '../listing.js';
import { redirectToOnce } from '../shown-once.js';
import { timeTag } from '../time.js';
import { estadoBadge as lineEstadoBadge, statusBadge } from './lines-common.js';

/** The operator's clients: search, create (the key shown once), and one client's page (estado, plan, cap, balance, key, lines). */

const LIST_SHOWN = 200;
const PLANS = [
  ['medido', 'medido (one credit a message)'],
  ['ilimitado', 'ilimitado'],
] as const;
const ESTADOS = [
  ['activo', 'activo'],
  ['suspendido', 'suspendido'],
  ['baja', 'baja'],
] as const;
const CREATE_FIELDS = ['nombre', 'email', 'plan', 'saldo', 'max_celulares'] as const;
const EDIT_FIELDS = ['nombre', 'email', 'estado', 'plan', 'max_celulares'] as const;
const BALANCE_FIELDS = ['monto', 'motivo'] as const;

/** A client id from the path: a positive whole number, else there is no such page. */
function clienteIdOf(raw: string): number {
  if (!/^[1-9]\d{0,15}$/.test(raw) || !Number.isSafeInteger(Number(raw))) throw new AppError('CLIENT_NOT_FOUND', `client ${raw.slice(0, 20)} not found`);
  return Number(raw);
}

const estadoBadge = (estado: string) => html`<span class="badge ${estado === 'activo' ? 'ok' : estado === 'baja' ? 'bad' : 'warn'}">${estado}</span>`;

/** A created or rotated key, shown once on the page the POST redirects to (shown-once.ts). */
function keyPage(core: PanelDeps['core'], req: FastifyRequest, reply: FastifyReply, title: string, clienteId: number, key: string, lead: string) {
  return redirectToOnce(
    core,
    req,
    reply,
    {
      title,
      current: 'clientes',
      clienteId,
      lead,
      secrets: [{ id: 'new-key', label: 'Client key (api_key)', value: key }],
      note: 'This key is shown once, here: a reload of this page does not show it again. The panel keeps only its hash: copy it now and hand it to the client.',
      links: [
        { href: `/panel/clientes/${clienteId}`, label: 'Go to the client' },
        { href: '/panel/clientes', label: 'All clients' },
      ],
    },
    `/panel/clientes/${clienteId}`,
  );
}

async function listPage(deps: PanelDeps, req: FastifyRequest, reply: FastifyReply, form: { values: Record<string, string>; errors: FormErrors }, status = 200) {
  const q = typeof (req.query as Record<string, unknown>).q === 'string' ? ((req.query as Record<string, string>).q ?? '') : '';
  const { clientes, mas } = await findClientes(deps.core, q, LIST_SHOWN);
  const v = form.values;
  const table =
    clientes.length === 0
      ? html`<p class="empty">${q ? 'No client matches. Try another name, email or id.' : 'No clients yet. Create one below.'}</p>`
      : html`${listTable(
          clientes,
          [
            { label: 'id', cls: 'num', cell: (c) => c.id },
            { label: 'nombre', cell: (c) => html`<a href="/panel/clientes/${c.id}">${c.nombre}</a>` },
            { label: 'email', cell: (c) => c.email },
            { label: 'plan', cell: (c) => c.plan },
            { label: 'estado', cell: (c) => estadoBadge(c.estado) },
            { label: 'saldo global', cls: 'num', cell: (c) => c.saldo_global },
          ],
          'Clients',
        )}
        ${mas ? html`<p class="hint">Showing the first ${LIST_SHOWN}: narrow the search to find the rest.</p>` : ''}`;
  return sendPage(
    req,
    reply,
    { title: 'Clients', current: 'clientes' },
    html`<form method="get" action="/panel/clientes" class="form-row" role="search">
        ${field({ name: 'q', label: 'Search by name, email or id', type: 'search', value: q })}
        <div class="field"><button type="submit">Search</button></div>
      </form>
      ${table}
      <h2 id="crear">Create a client</h2>
      ${generalError(form.errors)}
      <form method="post" action="/panel/clientes" class="card">
        ${csrfField(req)}
        <div class="form-row">
          ${field({ name: 'nombre', label: 'nombre', value: v.nombre, maxlength: FIELD_LIMITS.clienteNombre, autocomplete: 'off' }, form.errors)}
          ${field({ name: 'email', label: 'email', type: 'email', value: v.email, maxlength: FIELD_LIMITS.email, autocomplete: 'off' }, form.errors)}
        </div>
        <div class="form-row">
          ${selectField({ name: 'plan', label: 'plan', options: PLANS, value: v.plan ?? 'medido' }, form.errors)}
          ${field({ name: 'saldo', label: 'saldo (initial global balance)', type: 'number', value: v.saldo, hint: 'Credits; empty is 0.' }, form.errors)}
          ${field({ name: 'max_celulares', label: 'max_celulares', type: 'number', value: v.max_celulares, hint: 'Lines it may have; empty is no cap.' }, form.errors)}
        </div>
        <button type="submit">Create client</button>
      </form>`,
    status,
  );
}

interface ClienteForms {
  edit?: { values: Record<string, string>; errors: FormErrors };
  saldo?: { values: Record<string, string>; errors: FormErrors };
  rotate?: { values: Record<string, string>; errors: FormErrors };
}

async function clientePage(deps: PanelDeps, req: FastifyRequest, reply: FastifyReply, id: number, forms: ClienteForms = {}, status = 200) {
  const c = await showCliente(deps.core, id);
  const cli = c.cliente;
  const ev = forms.edit?.values;
  const editErrors = forms.edit?.errors ?? NO_ERRORS;
  const bv = forms.saldo?.values ?? {};
  const balanceErrors = forms.saldo?.errors ?? NO_ERRORS;
  const rotateErrors = forms.rotate?.errors ?? NO_ERRORS;
  const base = `/panel/c/${id}`;
  const lines =
    c.celulares.length === 0
      ? html`<p class="empty">No lines yet. The client (or you, from <a href="${base}/celulares">its lines page</a>) creates them.</p>`
      : listTable(
          c.celulares,
          [
            { label: 'id', cls: 'num', cell: (l) => l.id },
            { label: 'numero', cell: (l) => html`<a href="${base}/celulares/${l.id}">${l.numero}</a>` },
            { label: 'nombre', cell: (l) => l.nombre_interno ?? '' },
            { label: 'estado', cell: (l) => lineEstadoBadge(l.estado) },
            { label: 'session', cell: (l) => statusBadge(l.last_status) },
            { label: 'gateway server', cell: (l) => l.servidor ?? html`<span class="hint">none yet</span>` },
            { label: 'saldo', cls: 'num', cell: (l) => l.saldo_actual },
          ],
          'Its lines',
        );
  return sendPage(
    req,
    reply,
    { title: `Client ${cli.nombre}`, current: 'clientes', clienteId: id },
    html`<div class="grid">
        <div class="stat"><span class="n">${c.saldo_global}</span><span class="l">saldo global</span></div>
        <div class="stat"><span class="n">${cli.consumo_mes_actual}</span><span class="l">messages this month</span></div>
        <div class="stat"><span class="n">${c.mensajes_30d}</span><span class="l">messages in 30 days</span></div>
        <div class="stat"><span class="n">${c.num_celulares}</span><span class="l">lines (${c.num_celulares_activos} activo)</span></div>
      </div>
      <p>
        id ${cli.id} · ${cli.email} · plan ${cli.plan} · estado ${estadoBadge(cli.estado)} · max_celulares ${cli.max_celulares ?? 'no cap'} · since
        ${timeTag(cli.created_at)}
      </p>
      <p class="actions">
        Its own pages: <a href="${base}/">Account</a> <a href="${base}/celulares">Lines</a> <a href="${base}/historial">History</a>
        <a href="${base}/recibidos">Inbox</a> <a href="${base}/webhook">Webhook</a> <a href="${base}/movimientos">Balance movements</a>
      </p>

      <h2>Lines</h2>
      ${lines}

      <h2 id="editar">Edit</h2>
      ${generalError(editErrors)}
      <form method="post" action="/panel/clientes/${id}" class="card">
        ${csrfField(req)}
        <div class="form-row">
          ${field({ name: 'nombre', label: 'nombre', value: ev?.nombre ?? cli.nombre, maxlength: FIELD_LIMITS.clienteNombre }, editErrors)}
          ${field({ name: 'email', label: 'email', type: 'email', value: ev?.email ?? cli.email, maxlength: FIELD_LIMITS.email }, editErrors)}
        </div>
        <div class="form-row">
          ${selectField({ name: 'estado', label: 'estado', options: ESTADOS, value: ev?.estado ?? cli.estado, hint: 'suspendido and baja refuse its sends.' }, editErrors)}
          ${selectField({ name: 'plan', label: 'plan', options: PLANS, value: ev?.plan ?? cli.plan }, editErrors)}
          ${field(
            {
              name: 'max_celulares',
              label: 'max_celulares',
              type: 'number',
              value: ev?.max_celulares ?? (cli.max_celulares === null ? '' : String(cli.max_celulares)),
              hint: 'Empty is no cap.',
            },
            editErrors,
          )}
        </div>
        <button type="submit">Save changes</button>
      </form>

      <h2 id="saldo">Add balance</h2>
      ${generalError(balanceErrors)}
      <form method="post" action="/panel/clientes/${id}/saldo" class="card">
        ${csrfField(req)}
        <div class="form-row">
          ${field({ name: 'monto', label: 'monto', type: 'number', value: bv.monto, hint: 'Credits to the global balance; a negative amount removes them, never below zero.' }, balanceErrors)}
          ${field({ name: 'motivo', label: 'motivo', value: bv.motivo, maxlength: FIELD_LIMITS.motivo, placeholder: 'recarga' }, balanceErrors)}
        </div>
        <button type="submit">Add balance</button>
      </form>

      <h2 id="key">Client key</h2>
      <form method="post" action="/panel/clientes/${id}/rotar-key" class="card narrow danger-zone">
        ${csrfField(req)} ${generalError(rotateErrors)}
        <p>A new key replaces the old one at once: the old key stops working and its panel sessions end.</p>
        ${field(
          {
            name: 'confirmacion',
            label: `Type the client's id (${id}) to confirm`,
            value: forms.rotate?.values.confirmacion,
            autocomplete: 'off',
            confirm: String(id),
          },
          rotateErrors,
        )}
        <button type="submit" class="danger">Rotate key</button>
      </form>`,
    status,
  );
}

/** What an edit form changes: only the fields whose value differs from the client's (the audit names what changed). */
function editPatch(values: Record<string, string>, current: { nombre: string; email: string; estado: string; plan: string; max_celulares: number | null }) {
  const patch: Omit<ClientePatch, 'key_hash'> = {};
  if (values.nombre !== undefined && values.nombre !== current.nombre) patch.nombre = values.nombre;
  if (values.email !== undefined && values.email !== current.email) patch.email = values.email;
  if (values.estado !== undefined && values.estado !== current.estado) patch.estado = values.estado as ClienteEstado;
  if (values.plan !== undefined && values.plan !== current.plan) patch.plan = values.plan as Plan;
  if (values.max_celulares !== undefined) {
    const max = intField(values, 'max_celulares') ?? null;
    if (max !== current.max_celulares) patch.max_celulares = max;
  }
  return patch;
}

/** The status a refused form answers with: its error's, as the API would. */
const statusOf = (e: FormErrors): number => (e.general ?? Object.values(e.fields)[0])?.status ?? 400;

/** A select's value the API would refuse is refused here with its words. */
function oneOf(values: Record<string, string>, name: string, allowed: ReadonlyArray<readonly [string, string]>): void {
  const v = values[name];
  if (v !== undefined && !allowed.some(([a]) => a === v)) throw new AppError('INVALID_PARAMS', `${name}: must be one of ${allowed.map(([a]) => a).join(', ')}`);
}

export default async function clientesPages(app: FastifyInstance, deps: PanelDeps) {
  const { core } = deps;
  const pre = { preHandler: signedIn(core) };

  app.get('/clientes', pre, async (req, reply) => {
    requireOperator(req);
    return listPage(deps, req, reply, { values: {}, errors: NO_ERRORS });
  });

  app.post('/clientes', pre, async (req, reply) => {
    requireOperator(req);
    const values = formValues(req);
    try {
      oneOf(values, 'plan', PLANS);
      const saldo = intField(values, 'saldo');
      const max = intField(values, 'max_celulares');
      const r = await createCliente(core, {
        nombre: values.nombre ?? '',
        email: values.email ?? '',
        ...(values.plan ? { plan: values.plan as Plan } : {}),
        ...(saldo !== undefined ? { saldo } : {}),
        ...(max !== undefined ? { max_celulares: max } : {}),
      });
      return await keyPage(
        core,
        req,
        reply,
        `Client ${r.cliente.nombre} created`,
        r.cliente.id,
        r.api_key,
        `Client ${r.cliente.nombre} (id ${r.cliente.id}) is created with a global balance of ${r.saldo_global}. Its key:`,
      );
    } catch (err) {
      const e = formErrorsOf(err, CREATE_FIELDS);
      return listPage(deps, req, reply, { values, errors: e }, statusOf(e));
    }
  });

  app.get<{ Params: { id: string } }>('/clientes/:id', pre, async (req, reply) => {
    requireOperator(req);
    return clientePage(deps, req, reply, clienteIdOf(req.params.id));
  });

  app.post<{ Params: { id: string } }>('/clientes/:id', pre, async (req, reply) => {
    requireOperator(req);
    const id = clienteIdOf(req.params.id);
    const values = formValues(req);
    try {
      const { cliente } = await showCliente(core, id);
      oneOf(values, 'estado', ESTADOS);
      oneOf(values, 'plan', PLANS);
      await editCliente(core, id, editPatch(values, cliente));
      flash(req, reply, 'Saved.');
      return redirect(req, reply, `/panel/clientes/${id}`);
    } catch (err) {
      const e = formErrorsOf(err, EDIT_FIELDS);
      return clientePage(deps, req, reply, id, { edit: { values, errors: e } }, statusOf(e));
    }
  });

  app.post<{ Params: { id: string } }>('/clientes/:id/saldo', pre, async (req, reply) => {
    requireOperator(req);
    const id = clienteIdOf(req.params.id);
    const values = formValues(req);
    try {
      const motivo = values.motivo?.trim();
      // An empty amount is no amount: the API's refusal of a zero one names the field.
      const r = await addBalance(core, { kind: 'operator' }, { cliente_id: id, monto: intField(values, 'monto') ?? 0, ...(motivo ? { motivo } : {}) });
      flash(req, reply, `Balance changed: the global balance is now ${r.saldo_global}.`);
      return redirect(req, reply, `/panel/clientes/${id}`);
    } catch (err) {
      const e = formErrorsOf(err, BALANCE_FIELDS);
      return clientePage(deps, req, reply, id, { saldo: { values, errors: e } }, statusOf(e));
    }
  });

  app.post<{ Params: { id: string } }>('/clientes/:id/rotar-key', pre, async (req, reply) => {
    requireOperator(req);
    const id = clienteIdOf(req.params.id);
    const values = formValues(req);
    let key: string;
    try {
      // A typed confirmation, checked here too: a form sent without the page's script rotates nothing by mistake.
      if ((values.confirmacion ?? '').trim() !== String(id))
        throw new AppError('INVALID_PARAMS', `confirmacion: type the client's id, ${id}, to rotate its key`);
      key = (await rotateClienteKey(core, id)).api_key;
    } catch (err) {
      const e = formErrorsOf(err, ['confirmacion']);
      return clientePage(deps, req, reply, id, { rotate: { values, errors: e } }, statusOf(e));
    }
    return keyPage(core, req, reply, 'New client key', id, key, `The old key of client ${id} no longer works. The new key:`);
  });
}
