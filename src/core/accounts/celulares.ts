import { actorOf, celularInScope, requireActiveClient, requireClientKey, type ClientPrincipal } from '../auth/auth.js';
import { invalidateCredentials } from '../auth/credential-invalidate.js';
import { iso } from '../time/clock.js';
import type { Core } from '../context.js';
import { forgetEngineLine } from '../engine/engine-lines.js';
import { AppError, ERRORS, fail } from '../api/errors.js';
import { celularKey, hashSecret, LEGACY_TOKEN_RE, newGatewayToken, newSecret, parseKey } from '../auth/keys.js';
import { CELULAR_LIMITS, HORA_PATTERN } from '../api/limits.js';
import { normalizeNumero } from './phone.js';
import type { CelularPatch, LineProtection, StatusCheck } from '../ports/accounts.js';
import { beforeAfter } from '../auth/audit.js';
import { GatewayFailure } from '../ports/gateway.js';
import { CELULAR_ESTADOS, type CelularEstado, type CelularRow, type SessionStatus } from '../ports/model.js';
import { celularView, viewAt } from '../api/views.js';
import { isWarmupPlan, WARMUP_PLAN_NAMES } from '../sending/warmup.js';

/** Defaults of a new line (docs/design.md §4): one message every 5 s, a whole-day window. */
export const CELULAR_DEFAULTS = {
  max_envios_por_minuto: 12,
  max_envios_por_hora: 500,
  max_envios_por_dia: null,
  hora_inicio_permitido: '00:00',
  hora_fin_permitido: '23:59',
} as const;

export async function listCelulares(core: Pick<Core, 'store' | 'clock' | 'config'>, p: ClientPrincipal) {
  const rows = await core.store.listCelulares(p.cliente.id);
  const at = viewAt(core);
  return { cliente_id: p.cliente.id, total: rows.length, celulares: rows.map((c) => celularView(c, at)) };
}

function parseNumero(raw: string): string {
  const r = normalizeNumero(raw);
  if (!r.ok) fail('INVALID_PARAMS', `numero: ${r.reason}`);
  return r.numero;
}

function cleanNombre(nombre: string | null | undefined): string | null {
  if (nombre === undefined || nombre === null) return null;
  const t = nombre.trim();
  if (t.length > CELULAR_LIMITS.nombre_interno) fail('INVALID_PARAMS', `nombre_interno: at most ${CELULAR_LIMITS.nombre_interno} characters`);
  return t === '' ? null : t;
}

/**
 * Inserts the line, names its gateway instance and creates (or adopts) that
 * instance with the line's gateway token. The line exists even when the
 * gateway cannot be reached now: the instance is then made when the line is
 * first linked (connect creates it), without the token, which only this call
 * knows in clear.
 */
async function insertCelular(
  core: Pick<Core, 'store' | 'gateway' | 'clock'>,
  p: ClientPrincipal,
  numero: string,
  nombre: string | null,
  onGatewayError: (err: unknown) => void,
  protection: LineProtection = {},
) {
  const gatewayToken = newGatewayToken();
  const secret = newSecret();
  const now = core.clock.now();
  // The row, its instance's name and its audit record in one transaction: a store that fills up
  // meanwhile leaves no line whose key was never shown, and a retry can take the number.
  const res = await core.store.insertCelular(
    {
      cliente_id: p.cliente.id,
      numero,
      nombre_interno: nombre,
      estado: 'desconectado',
      ...CELULAR_DEFAULTS,
      ...protection,
      key_hash: hashSecret(secret),
      gateway_token_hash: hashSecret(gatewayToken),
    },
    now,
    {
      instancia: (id) => instanceName({ id }),
      audit: (c) => ({
        actor: actorOf(p),
        accion: 'celular.crear',
        objeto_tipo: 'celular',
        objeto_id: c.id,
        cliente_id: p.cliente.id,
        detalle: {
          numero,
          gateway_instancia: c.gateway_instancia,
          ...(c.calentamiento ? { calentamiento: c.calentamiento } : {}),
          ...(c.freno ? { freno: true } : {}),
        },
      }),
    },
  );
  if (!res.ok) {
    if (res.reason === 'taken') fail('NUMBER_TAKEN', `the number ${numero} is already registered`);
    if (res.reason === 'cap') fail('CELULAR_CAP', `the client has reached its cap of ${p.cliente.max_celulares} celulares`);
    fail('CLIENT_NOT_FOUND', 'client not found');
  }
  const celular = res.celular;
  const instancia = celular.gateway_instancia ?? instanceName(celular);
  await core.gateway.ensureInstance(instancia, { numero, token: gatewayToken }).catch(onGatewayError);
  return { celular, api_key: celularKey(celular.id, secret), gateway_token: gatewayToken };
}

/** Creates a line (estado `desconectado`); its key and gateway token are returned once. */
export async function createCelular(
  core: Pick<Core, 'store' | 'gateway' | 'clock' | 'config'>,
  p: ClientPrincipal,
  input: { numero: string; nombre_interno?: string | null; calentamiento?: string | null; freno?: boolean },
  onGatewayError: (err: unknown) => void = () => undefined,
) {
  requireClientKey(p, 'creating a celular');
  requireActiveClient(p);
  const numero = parseNumero(input.numero);
  const nombre = cleanNombre(input.nombre_interno);
  // A new number's warm-up starts with it (D-168: only when asked); checked before the row is written.
  const protection: LineProtection = {
    ...(input.calentamiento == null ? {} : warmupPatch({ calentamiento: null, calentamiento_desde: null }, input.calentamiento, core.clock.now())),
    ...(input.freno === undefined ? {} : { freno: input.freno ? 1 : 0 }),
  };
  const created = await insertCelular(core, p, numero, nombre, onGatewayError, protection);
  return { ...created, view: celularView(created.celular, viewAt(core)) };
}

export interface CelularEdit {
  estado?: CelularEstado;
  nombre_interno?: string | null;
  max_envios_por_minuto?: number;
  max_envios_por_hora?: number;
  max_envios_por_dia?: number | null;
  hora_inicio_permitido?: string;
  hora_fin_permitido?: string;
  /** A warm-up plan's name (core/sending/warmup.ts), or null for none. */
  calentamiento?: string | null;
  /** The line's brake (core/accounts/line-brake.ts): on, a health threshold crossed pauses its queue. */
  freno?: boolean;
}

/** `HH:MM:SS` with zero seconds is stored as `HH:MM`, the celular's documented form. */
function normHora(h: string): string {
  return h.length === 8 && h.endsWith(':00') ? h.slice(0, 5) : h;
}

export async function editCelular(core: Pick<Core, 'store' | 'clock' | 'signals'>, p: ClientPrincipal, id: number, edit: CelularEdit) {
  const celular = await celularInScope(core, p, id);
  requireActiveClient(p);
  if (edit.estado !== undefined) requireClientKey(p, 'changing estado');
  const patch: CelularPatch = {};
  // The API's schema refuses any other estado first; the panel's forms reach this check.
  if (edit.estado !== undefined && !CELULAR_ESTADOS.includes(edit.estado)) fail('INVALID_PARAMS', `estado must be one of ${CELULAR_ESTADOS.join(', ')}`);
  if (edit.estado !== undefined) patch.estado = edit.estado;
  if (edit.nombre_interno !== undefined) patch.nombre_interno = cleanNombre(edit.nombre_interno);
  for (const k of ['max_envios_por_minuto', 'max_envios_por_hora', 'max_envios_por_dia'] as const) {
    const v = edit[k];
    if (v === undefined) continue;
    if (v === null) {
      if (k !== 'max_envios_por_dia') fail('INVALID_PARAMS', `${k} may not be null`);
      patch[k] = null;
      continue;
    }
    const [min, max] = CELULAR_LIMITS[k];
    if (!Number.isInteger(v) || v < min || v > max) fail('INVALID_PARAMS', `${k} must be an integer from ${min} to ${max}`);
    patch[k] = v;
  }
  const re = new RegExp(HORA_PATTERN);
  for (const k of ['hora_inicio_permitido', 'hora_fin_permitido'] as const) {
    const v = edit[k];
    if (v === undefined) continue;
    if (!re.test(v)) fail('INVALID_PARAMS', `${k} must be HH:MM or HH:MM:SS (00:00 to 23:59:59)`);
    patch[k] = normHora(v);
  }
  if (edit.freno !== undefined) patch.freno = edit.freno ? 1 : 0;
  const now = core.clock.now();
  if (edit.calentamiento !== undefined) Object.assign(patch, warmupPatch(celular, edit.calentamiento, now));
  if (Object.keys(patch).length === 0) fail('INVALID_PARAMS', 'nothing to change: give at least one field');
  // The change and its record (each patched field before and after) in one transaction.
  const row = await core.store.updateCelular(id, patch, now, undefined, (antes, despues) => ({
    actor: actorOf(p),
    accion: 'celular.editar',
    objeto_tipo: 'celular',
    objeto_id: id,
    cliente_id: celular.cliente_id,
    detalle: beforeAfter(antes, despues, Object.keys(patch) as Array<keyof CelularPatch>),
  }));
  if (!row) fail('CELULAR_NOT_FOUND', `celular ${id} not found`);
  await invalidateCredentials(core, { celular: id });
  return row;
}

/**
 * Setting a warm-up plan starts it today (its day 1); the plan the line
 * already follows keeps its start (a form sent again changes nothing); null
 * ends it (D-166).
 */
function warmupPatch(c: Pick<CelularRow, 'calentamiento' | 'calentamiento_desde'>, plan: string | null, now: number): CelularPatch {
  if (plan === null) return { calentamiento: null, calentamiento_desde: null };
  if (!isWarmupPlan(plan)) fail('INVALID_PARAMS', `calentamiento must be one of ${WARMUP_PLAN_NAMES.join(', ')}, or null for none`);
  if (plan === c.calentamiento && c.calentamiento_desde !== null) return { calentamiento: plan };
  return { calentamiento: plan, calentamiento_desde: now };
}

/** Hard delete with an audit record; the gateway instance goes too (best effort, logged). */
export async function deleteCelular(
  core: Pick<Core, 'store' | 'gateway' | 'clock' | 'signals'>,
  p: ClientPrincipal,
  id: number,
  onGatewayError: (err: unknown) => void,
) {
  const celular = await celularInScope(core, p, id);
  requireClientKey(p, 'deleting a celular');
  const deleted = await core.store.deleteCelular(
    id,
    {
      actor: actorOf(p),
      accion: 'celular.eliminar',
      objeto_tipo: 'celular',
      objeto_id: id,
      cliente_id: celular.cliente_id,
      detalle: { numero: celular.numero, nombre_interno: celular.nombre_interno, gateway_instancia: celular.gateway_instancia },
    },
    core.clock.now(),
  );
  if (!deleted) fail('CELULAR_NOT_FOUND', `celular ${id} not found`);
  await invalidateCredentials(core, { celular: id });
  if (celular.gateway_instancia) {
    const instancia = celular.gateway_instancia;
    // The row is gone: with several gateway servers, the one that held the instance is named from the row read before.
    const gw = async () => (celular.servidor_id !== null && core.gateway.onServer ? core.gateway.onServer(celular.servidor_id) : core.gateway);
    await gw()
      .then((g) => g.deleteInstance(instancia))
      .catch(onGatewayError);
    // The engine's state goes with its line, whichever gateway serves now (nothing to remove for a line it never held); left by a failure here, it is removed at the engine's next start (core/engine/engine-lines.ts).
    await forgetEngineLine(core.store, instancia).catch(onGatewayError);
  }
  return { celular_id: id, numero: celular.numero, eliminado: true };
}

/** A gateway failure as the API answers it (502 `GATEWAY_ERROR`); a refusal of the core passes through. */
export function gatewayError(err: unknown): never {
  if (err instanceof AppError) throw err;
  const msg = err instanceof GatewayFailure || err instanceof Error ? err.message : String(err);
  fail('GATEWAY_ERROR', `gateway: ${msg}`);
}

// Keyed by the Core object itself (one lock chain per Core); typed `object` so callers may pass a Pick of it.
const sessionLocks = new WeakMap<object, Promise<unknown>>();

/** Compare-and-set rounds before giving up on a line other writers keep changing (each lost round is one of theirs applied). */
const SESSION_CAS_ROUNDS = 20;

/**
 * Records a session status seen for a line; publishes `session.status` and
 * moves the celular `estado` (docs/design.md §6) when it changed. A suspended line
 * stays suspended: suspension is the client's decision, not the session's.
 *
 * `at` is when the status was observed (before the gateway call that told
 * it). Statuses are applied in that order on any number of nodes: one
 * observed before the recorded one (`last_status_check`) changes nothing, and
 * the write is a compare-and-set on what was read (store.updateCelularIf), so
 * a node that read the row before another node wrote it reads again instead of
 * writing its stale estado over the newer one. Calls on one node are also
 * serialised, so a status reported both by the gateway's event and by the
 * call that caused it is published once.
 */
export function applySessionStatus(
  core: Pick<Core, 'store' | 'clock' | 'bus' | 'signals'>,
  celularId: number,
  status: SessionStatus,
  at?: number,
): Promise<CelularRow | null> {
  const seen = at ?? core.clock.now();
  const run = async (): Promise<CelularRow | null> => {
    for (let round = 0; ; round++) {
      const celular = await core.store.getCelular(celularId);
      if (!celular) return null;
      // A newer observation is recorded already (equal ones apply: the later call read the gateway no earlier).
      if (celular.last_status_check !== null && celular.last_status_check > seen) return celular;
      if (round >= SESSION_CAS_ROUNDS) return celular;
      const now = core.clock.now();
      const { estado, vinculado } = sessionOutcome(celular, status);
      // `unknown` (the gateway has nothing for the line) is recorded but is no news to publish.
      const changed = celular.last_status !== status && status !== 'unknown' && celular.gateway_instancia !== null;
      const data = {
        celular_id: celular.id,
        cliente_id: celular.cliente_id,
        gateway_instancia: celular.gateway_instancia ?? '',
        status,
        status_anterior: celular.last_status,
        estado,
        fecha: iso(now),
      };
      // A change is journaled in the same transaction as the new status, so its event cannot be lost.
      const event = changed ? { evento: 'session.status', cliente_id: celular.cliente_id, celular_id: celular.id, data, fecha: now } : undefined;
      const row = await core.store.updateCelularIf(celular.id, celular, { last_status: status, last_status_check: seen, estado, vinculado }, now, event);
      if (!row) continue; // another node (or an edit) wrote the line since it was read
      if (changed) core.bus.publish('session.status', data);
      // estado and vinculado are what a send reads of the principal's line; last_status alone may be a second stale (D-67).
      if (estado !== celular.estado || vinculado !== celular.vinculado) await invalidateCredentials(core, { celular: celular.id });
      return row;
    }
  };
  return inTurn(core, run);
}

/** Session statuses of one core are applied one at a time (see applySessionStatus). */
function inTurn<T>(core: object, run: () => Promise<T>): Promise<T> {
  const next = (sessionLocks.get(core) ?? Promise.resolve()).then(run, run);
  sessionLocks.set(
    core,
    next.catch(() => undefined),
  );
  return next;
}

/**
 * What a session status makes of a line: its estado (a suspended line stays
 * suspended; `connecting` and `unknown` say nothing final, so a line
 * reconnecting keeps its estado) and whether the session holds a link (set by
 * a connection, cleared by a logout or a new QR).
 */
export function sessionOutcome(c: Pick<CelularRow, 'estado' | 'vinculado'>, status: SessionStatus): { estado: CelularEstado; vinculado: number } {
  let estado = c.estado;
  if (c.estado !== 'suspendido') {
    if (status === 'connected') estado = 'activo';
    else if (status === 'logged_out' || status === 'need_scan' || status === 'disconnected') estado = 'desconectado';
  }
  const vinculado = status === 'connected' ? 1 : status === 'logged_out' || status === 'need_scan' ? 0 : c.vinculado;
  return { estado, vinculado };
}

/** Whether applying `status` to the line, as read, would change nothing but when it was checked (no event, no estado). */
export function onlyChecked(c: Pick<CelularRow, 'estado' | 'vinculado' | 'last_status'>, status: SessionStatus): boolean {
  const o = sessionOutcome(c, status);
  return c.last_status === status && o.estado === c.estado && o.vinculado === c.vinculado;
}

/**
 * Records checks that found each line as it was read (`onlyChecked`), in one
 * store write for all (the health pass's usual finding: one write a page, not
 * a read and a transaction a line); a line that changed since it was read is
 * applied as any status is, by applySessionStatus.
 */
export async function applyStatusChecks(core: Pick<Core, 'store' | 'clock' | 'bus' | 'signals'>, checks: StatusCheck[]): Promise<void> {
  if (checks.length === 0) return;
  // In id order: PostgreSQL locks the rows in that order, as every taker of several lines' locks does.
  const sorted = [...checks].sort((a, b) => a.id - b.id);
  const missed = new Set(await inTurn(core, () => core.store.recordStatusChecks(sorted, core.clock.now())));
  for (const c of sorted) if (missed.has(c.id)) await applySessionStatus(core, c.id, c.status, c.at);
}

/** Instance names are stable per line and never reused (ids are never reused). */
export function instanceName(celular: Pick<CelularRow, 'id'>): string {
  return `pasarela-${celular.id}`;
}

/** Lines made before instances were named at creation get their name on first link. */
async function withInstance(core: Pick<Core, 'store' | 'clock' | 'signals'>, celular: CelularRow): Promise<CelularRow & { gateway_instancia: string }> {
  if (celular.gateway_instancia) return celular as CelularRow & { gateway_instancia: string };
  const row = (await core.store.updateCelular(celular.id, { gateway_instancia: instanceName(celular) }, core.clock.now())) as CelularRow & {
    gateway_instancia: string;
  };
  await invalidateCredentials(core, { celular: celular.id });
  return row;
}

export type LinkMethod = 'qr' | 'codigo';

async function linkStart(core: Pick<Core, 'store' | 'gateway' | 'clock' | 'bus' | 'signals'>, celular: CelularRow, method: LinkMethod) {
  const c = await withInstance(core, celular);
  const at = core.clock.now();
  const res =
    method === 'qr'
      ? await core.gateway.connect(c.gateway_instancia, c.numero).then((r) => ({ status: r.status, qr: r.qr }), gatewayError)
      : await core.gateway.pairingCode(c.gateway_instancia, c.numero).then((r) => ({ status: r.status, codigo: r.code }), gatewayError);
  const row = (await applySessionStatus(core, c.id, res.status, at)) ?? c;
  return { celular_id: row.id, gateway_instancia: c.gateway_instancia, ...res, estado: row.estado };
}

export async function celularQr(core: Pick<Core, 'store' | 'gateway' | 'clock' | 'bus' | 'signals'>, p: ClientPrincipal, id: number) {
  const celular = await celularInScope(core, p, id);
  requireActiveClient(p);
  return linkStart(core, celular, 'qr');
}

/** Pairing code for the line's own number: the alternative to scanning a QR. */
export async function celularCodigo(core: Pick<Core, 'store' | 'gateway' | 'clock' | 'bus' | 'signals'>, p: ClientPrincipal, id: number) {
  const celular = await celularInScope(core, p, id);
  requireActiveClient(p);
  return linkStart(core, celular, 'codigo');
}

export async function celularStatus(core: Pick<Core, 'store' | 'gateway' | 'clock' | 'bus' | 'signals'>, p: ClientPrincipal, id: number) {
  let celular = await celularInScope(core, p, id);
  let refreshed = false;
  let status: string = celular.last_status ?? 'unknown';
  if (celular.gateway_instancia) {
    try {
      const at = core.clock.now();
      const s = await core.gateway.status(celular.gateway_instancia);
      celular = (await applySessionStatus(core, celular.id, s, at)) ?? celular;
      status = celular.last_status ?? s; // a newer status another call recorded meanwhile wins
      refreshed = true;
    } catch {
      // The stored status is answered, flagged as not refreshed.
    }
  }
  return {
    celular_id: celular.id,
    gateway_instancia: celular.gateway_instancia ?? '',
    status,
    estado: celular.estado,
    status_actualizado_desde_gateway: refreshed,
    ultimo_check: iso(celular.last_status_check ?? core.clock.now()),
  };
}

/**
 * Registers a number (or takes the client's existing line with that number)
 * and starts QR linking. Client key only.
 */
export async function vincular(
  core: Pick<Core, 'store' | 'gateway' | 'clock' | 'bus' | 'signals'>,
  p: ClientPrincipal,
  input: { numero: string; nombre?: string | null },
  method: LinkMethod,
  onGatewayError: (err: unknown) => void = () => undefined,
) {
  requireClientKey(p, method === 'qr' ? 'celular_vincular_qr' : 'celular_vincular_codigo');
  requireActiveClient(p);
  const numero = parseNumero(input.numero);
  const existing = await core.store.getCelularByNumero(numero);
  if (existing && existing.cliente_id !== p.cliente.id) fail('NUMBER_TAKEN', `the number ${numero} is already registered`);
  if (existing) return { ...(await linkStart(core, existing, method)), numero, creado: false as const };
  const created = await insertCelular(core, p, numero, cleanNombre(input.nombre), onGatewayError);
  const keys = { numero, creado: true as const, api_key: created.api_key, gateway_token: created.gateway_token };
  try {
    return { ...(await linkStart(core, created.celular, method)), ...keys };
  } catch (err) {
    // The line exists and its key is shown only now: answer it, and say the link must be asked again.
    if (!(err instanceof AppError) || err.row !== ERRORS.GATEWAY_ERROR) throw err;
    const c = (await core.store.getCelular(created.celular.id)) ?? created.celular;
    const link = method === 'qr' ? { qr: '' } : { codigo: '' };
    return {
      celular_id: c.id,
      gateway_instancia: c.gateway_instancia ?? '',
      status: 'unknown' as const,
      ...link,
      estado: c.estado,
      ...keys,
      aviso: `${err.message}; the celular was registered: ask for the ${method === 'qr' ? 'QR' : 'pairing code'} again`,
    };
  }
}

/** Operator: sets a legacy token, or makes one when none is given. Returned so the operator can hand it over. */
export async function setLegacyToken(core: Pick<Core, 'store' | 'clock' | 'signals'>, celularId: number, token?: string) {
  const celular = (await core.store.getCelular(celularId)) ?? fail('CELULAR_NOT_FOUND', `celular ${celularId} not found`);
  const value = token ?? newGatewayToken();
  if (!LEGACY_TOKEN_RE.test(value)) fail('INVALID_PARAMS', 'token must be 16 to 128 printable ASCII characters without spaces');
  // A token shaped like a WA_/WAC_ key would be checked as that key and never match.
  if (parseKey(value).kind !== 'token') fail('INVALID_PARAMS', 'token may not have the form of a WA_ or WAC_ key');
  const hash = hashSecret(value);
  const holder = await core.store.getCelularByTokenHash(hash);
  if (holder && holder.id !== celularId) fail('CONFLICT', 'that token is already in use by another celular');
  const now = core.clock.now();
  await core.store.updateCelular(celularId, { legacy_token_hash: hash }, now);
  await invalidateCredentials(core, { celular: celularId });
  await core.store.audit(
    {
      actor: 'operator',
      accion: 'celular.token_legacy',
      objeto_tipo: 'celular',
      objeto_id: celularId,
      cliente_id: celular.cliente_id,
      detalle: { generado: token === undefined },
    },
    now,
  );
  return { celular_id: celularId, token_legacy: value, generado: token === undefined };
}

/** Operator: issues a new celular key; the old one stops working at once. */
export async function rotateCelularKey(core: Pick<Core, 'store' | 'clock' | 'signals'>, celularId: number) {
  const celular = (await core.store.getCelular(celularId)) ?? fail('CELULAR_NOT_FOUND', `celular ${celularId} not found`);
  const secret = newSecret();
  const now = core.clock.now();
  await core.store.updateCelular(celularId, { key_hash: hashSecret(secret) }, now);
  await invalidateCredentials(core, { celular: celularId });
  await core.store.audit(
    { actor: 'operator', accion: 'celular.rotar_key', objeto_tipo: 'celular', objeto_id: celularId, cliente_id: celular.cliente_id, detalle: {} },
    now,
  );
  return { celular_id: celularId, api_key: celularKey(celularId, secret) };
}
