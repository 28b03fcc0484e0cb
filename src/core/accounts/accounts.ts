import { actorOf, celularInScope, type ClientPrincipal, type Principal } from '../auth/auth.js';
import { engineHolders } from '../engine/engine-holders.js';
import { invalidateCredentials } from '../auth/credential-invalidate.js';
import type { Core } from '../context.js';
import { fail } from '../api/errors.js';
import { clientKey, hashSecret, newSecret } from '../auth/keys.js';
import type { ClientePatch } from '../ports/accounts.js';
import type { ClienteEstado, ClienteRow, Plan } from '../ports/model.js';
import { celularView, clienteView, DAY_MS, viewAt } from '../api/views.js';
import { startOfMonth } from '../history/historial.js';
import { FIELD_LIMITS } from '../api/limits.js';
import { balanceAudit, beforeAfter } from '../auth/audit.js';

/** Client accounts and balances: the operator's side and the client's read side. */

export interface NewClienteInput {
  nombre: string;
  email: string;
  plan?: Plan;
  estado?: ClienteEstado;
  max_celulares?: number | null;
  saldo?: number;
}

async function consumoMes(core: Pick<Core, 'store' | 'clock' | 'config'>, clienteId: number) {
  const now = core.clock.now();
  // Calendar months in the server's zone (--tz), like allowed hours and history dates.
  return core.store.messageStats(clienteId, startOfMonth(now, core.config.tz), now - 30 * DAY_MS);
}

/**
 * A client's cap as stored. Before integer fields refused "Infinity"
 * (server/schemas/safe-integers.ts) an operator could store one (SQLite keeps
 * the REAL Inf), and every listing of the client failed on it. It is read as
 * what line creation made of it, no cap (null), until the operator writes a
 * cap again.
 */
export function storedCap(max: number | null): number | null {
  return max !== null && Number.isSafeInteger(max) && max >= 0 ? max : null;
}

/** The API schema's `format: email` (ajv-formats, full mode), so the panel's form refuses what the API refuses. */
const EMAIL = /^[a-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[a-z0-9!#$%&'*+/=?^_`{|}~-]+)*@(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$/i;

/** The API's schema refuses these already; a caller without it (the panel) gets the same refusal here. */
function checkClienteText(input: { nombre?: string; email?: string }): void {
  const { nombre, email } = input;
  if (nombre !== undefined && (nombre.trim() === '' || nombre.length > FIELD_LIMITS.clienteNombre))
    fail('INVALID_PARAMS', `nombre: 1 to ${FIELD_LIMITS.clienteNombre} characters, not only spaces`);
  if (email !== undefined && (email.length > FIELD_LIMITS.email || !EMAIL.test(email))) fail('INVALID_PARAMS', 'email: must be an email address');
}

/** The schemas refuse these already; the store must never be handed one, whoever calls. */
function checkAccountNumbers(input: { max_celulares?: number | null; saldo?: number }): void {
  const m = input.max_celulares;
  if (m !== undefined && m !== null && !(Number.isSafeInteger(m) && m >= 0 && m <= FIELD_LIMITS.maxCelulares)) {
    fail('INVALID_PARAMS', `max_celulares must be an integer from 0 to ${FIELD_LIMITS.maxCelulares}, or null`);
  }
  const s = input.saldo;
  if (s !== undefined && !(Number.isSafeInteger(s) && s >= 0 && s <= FIELD_LIMITS.saldo))
    fail('INVALID_PARAMS', `saldo must be an integer from 0 to ${FIELD_LIMITS.saldo}`);
}

export async function clienteSummary(core: Pick<Core, 'store' | 'clock' | 'config'>, cliente: ClienteRow) {
  const stats = await consumoMes(core, cliente.id);
  const celulares = await core.store.listCelulares(cliente.id);
  return {
    cliente: clienteView({ ...cliente, max_celulares: storedCap(cliente.max_celulares) }, stats.consumo_mes),
    saldo_global: cliente.saldo_global,
    num_celulares: celulares.length,
    num_celulares_activos: celulares.filter((c) => c.estado === 'activo').length,
    mensajes_30d: stats.mensajes_30d,
  };
}

export async function createCliente(core: Pick<Core, 'store' | 'clock' | 'config'>, input: NewClienteInput) {
  checkClienteText(input);
  checkAccountNumbers(input);
  const now = core.clock.now();
  const secret = newSecret();
  // The row, its first credit and its audit record in one transaction: a store that fills up
  // meanwhile leaves no client whose key was never shown, so a retry makes one client, not two.
  const row = await core.store.createCliente(
    {
      nombre: input.nombre,
      email: input.email,
      plan: input.plan ?? 'medido',
      estado: input.estado ?? 'activo',
      max_celulares: input.max_celulares ?? null,
      saldo_global: 0,
      key_hash: hashSecret(secret),
    },
    now,
    {
      ...(input.saldo && input.saldo > 0 ? { saldo: { monto: input.saldo, motivo: 'saldo inicial', actor: 'operator' } } : {}),
      audit: (c) => ({
        actor: 'operator',
        accion: 'cliente.crear',
        objeto_tipo: 'cliente',
        objeto_id: c.id,
        cliente_id: c.id,
        detalle: { nombre: c.nombre, plan: c.plan, saldo_global: c.saldo_global },
      }),
    },
  );
  const fresh = (await core.store.getCliente(row.id))!;
  return { ...(await clienteSummary(core, fresh)), api_key: clientKey(row.id, secret) };
}

export async function getClienteOrFail(core: Pick<Core, 'store'>, id: number): Promise<ClienteRow> {
  return (await core.store.getCliente(id)) ?? fail('CLIENT_NOT_FOUND', `client ${id} not found`);
}

export async function listClientes(core: Pick<Core, 'store' | 'clock' | 'config'>) {
  const rows = await core.store.listClientes();
  return Promise.all(rows.map((r) => clienteSummary(core, r)));
}

/**
 * The operator's search of clients (the panel): by id when the text is a
 * number, else by a part of the name or the email, any case; in id order, at
 * most `limit`. Rows only: a summary per client would read each one's month.
 */
export async function findClientes(core: Pick<Core, 'store'>, text: string, limit: number): Promise<{ clientes: ClienteRow[]; mas: boolean }> {
  const q = text.trim().toLowerCase();
  const rows = await core.store.listClientes();
  const found = q === '' ? rows : rows.filter((c) => String(c.id) === q || c.nombre.toLowerCase().includes(q) || c.email.toLowerCase().includes(q));
  return { clientes: found.slice(0, limit), mas: found.length > limit };
}

/** The operator's view of one client: its lines, each with the gateway server it is on (by name; null before it is placed). */
export async function showCliente(core: Pick<Core, 'store' | 'gateway' | 'clock' | 'config'>, id: number) {
  const cliente = await getClienteOrFail(core, id);
  const [celulares, gateways, holders] = await Promise.all([core.store.listCelulares(id), core.store.listGatewayServers(), engineHolders(core)]);
  const servers = new Map(gateways.map((g) => [g.id, g.nombre]));
  return {
    ...(await clienteSummary(core, cliente)),
    celulares: celulares.map((c) => ({
      ...celularView(c, viewAt(core)),
      servidor: c.servidor_id === null ? null : (servers.get(c.servidor_id) ?? null),
      // Only with the in-process engine (D-137), read once for every line.
      ...(holders ? { motor_nodo: holders.of(c.gateway_instancia) } : {}),
    })),
  };
}

export async function editCliente(core: Pick<Core, 'store' | 'clock' | 'config' | 'signals'>, id: number, patch: Omit<ClientePatch, 'key_hash'>) {
  await getClienteOrFail(core, id);
  if (Object.values(patch).every((v) => v === undefined)) fail('INVALID_PARAMS', 'nothing to change: give at least one field');
  checkClienteText(patch);
  checkAccountNumbers(patch);
  const now = core.clock.now();
  // The change and its record (each patched field before and after) in one transaction.
  const fields = (Object.keys(patch) as Array<keyof typeof patch>).filter((k) => patch[k] !== undefined);
  const row = await core.store.updateCliente(id, patch, now, (antes, despues) => ({
    actor: 'operator',
    accion: 'cliente.editar',
    objeto_tipo: 'cliente',
    objeto_id: id,
    cliente_id: id,
    detalle: beforeAfter(antes, despues, fields),
  }));
  if (!row) fail('CLIENT_NOT_FOUND', `client ${id} not found`);
  await invalidateCredentials(core, { cliente: id });
  return clienteSummary(core, row);
}

export async function rotateClienteKey(core: Pick<Core, 'store' | 'clock' | 'signals'>, id: number) {
  await getClienteOrFail(core, id);
  const secret = newSecret();
  const now = core.clock.now();
  await core.store.updateCliente(id, { key_hash: hashSecret(secret) }, now);
  await invalidateCredentials(core, { cliente: id });
  await core.store.audit({ actor: 'operator', accion: 'cliente.rotar_key', objeto_tipo: 'cliente', objeto_id: id, cliente_id: id, detalle: {} }, now);
  return { cliente_id: id, api_key: clientKey(id, secret) };
}

export interface BalanceInput {
  cliente_id: number;
  celular_id?: number | null;
  monto: number;
  motivo?: string;
}

/** Adds (or, with a negative amount, removes) credit; a balance never goes below zero. */
export async function addBalance(core: Pick<Core, 'store' | 'clock'>, actor: Principal, input: BalanceInput) {
  if (!Number.isSafeInteger(input.monto) || input.monto === 0) fail('INVALID_PARAMS', 'monto must be a non-zero integer');
  // The API's schema bounds these; the panel's form has no schema in front of it.
  if (Math.abs(input.monto) > FIELD_LIMITS.saldo) fail('INVALID_PARAMS', `monto must be from -${FIELD_LIMITS.saldo} to ${FIELD_LIMITS.saldo}`);
  if (input.motivo !== undefined && input.motivo.length > FIELD_LIMITS.motivo) fail('INVALID_PARAMS', `motivo: at most ${FIELD_LIMITS.motivo} characters`);
  const change = {
    cliente_id: input.cliente_id,
    celular_id: input.celular_id ?? null,
    monto: input.monto,
    motivo: input.motivo?.trim() || (input.monto > 0 ? 'recarga' : 'ajuste'),
    actor: actorOf(actor),
  };
  // The audit record is written with the change and its ledger row, in one transaction.
  const res = await core.store.changeBalance(change, core.clock.now(), balanceAudit(change));
  if (!res.ok) {
    if (res.reason === 'cliente') fail('CLIENT_NOT_FOUND', `client ${input.cliente_id} not found`);
    if (res.reason === 'celular') fail('CELULAR_NOT_FOUND', `celular ${input.celular_id} not found for client ${input.cliente_id}`);
    if (res.reason === 'desborde') fail('CONFLICT', `the change of ${input.monto} would take the balance past the largest exact integer`);
    fail('CONFLICT', `the change of ${input.monto} would leave the balance below zero`);
  }
  return {
    cliente_id: input.cliente_id,
    celular_id: input.celular_id ?? null,
    saldo_global: res.saldo_global,
    saldo_celular: res.saldo_celular,
    movimiento_id: res.movimiento_id,
  };
}

/** Balances are read afresh: the principal may come from the credential cache, which does not follow charges (D-67). */
export async function info(core: Pick<Core, 'store' | 'clock' | 'config'>, p: ClientPrincipal) {
  return clienteSummary(core, (await core.store.getCliente(p.cliente.id)) ?? p.cliente);
}

/**
 * The balance as one line sees it. A celular credential names its line; a
 * client key names one with `celular_id`, or none (then `celular_id` and
 * `saldo_celular` are null).
 */
export async function saldo(core: Pick<Core, 'store' | 'clock' | 'config'>, p: ClientPrincipal, celularId: number | undefined) {
  const cel = celularId !== undefined ? await celularInScope(core, p, celularId) : p.kind === 'celular' ? await core.store.getCelular(p.celular.id) : null;
  const stats = await consumoMes(core, p.cliente.id);
  const cliente = (await core.store.getCliente(p.cliente.id)) ?? p.cliente;
  return {
    cliente_id: p.cliente.id,
    celular_id: cel?.id ?? null,
    saldo_global: cliente.saldo_global,
    saldo_celular: cel?.saldo_actual ?? null,
    plan: cliente.plan,
    ilimitado: cliente.plan === 'ilimitado',
    consumo_mes: stats.consumo_mes,
  };
}
