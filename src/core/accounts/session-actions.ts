import { actorOf, celularInScope, requireActiveClient, type ClientPrincipal, type Principal } from '../auth/auth.js';
import { applySessionStatus, celularStatus, gatewayError } from './celulares.js';
import { engineHolderOf } from '../engine/engine-holders.js';
import { iso } from '../time/clock.js';
import type { Core } from '../context.js';
import { fail } from '../api/errors.js';
import type { SessionProfile } from '../ports/gateway.js';
import type { CelularRow, SessionStatus } from '../ports/model.js';
import { celularView, viewAt } from '../api/views.js';

/**
 * A line's session acted on from outside the phone (docs/decisions.md D-93):
 * logged out (a new scan is needed) or restarted (the same link, connected
 * again), by the client key for its lines, a line's own key, or the
 * operator; and the linked phone's name and number, where the gateway gives them.
 */

/** Statuses after which the gateway still holds something to log out or restart: a link, or one being made. */
const LIVE: ReadonlySet<string> = new Set<SessionStatus>(['connected', 'connecting', 'need_scan', 'disconnected']);

/** Whether the line has a session at its gateway: never linked (no instance, no status) or logged out is none. */
export function hasSession(c: Pick<CelularRow, 'gateway_instancia' | 'vinculado' | 'last_status'>): boolean {
  return c.gateway_instancia !== null && (c.vinculado === 1 || (c.last_status !== null && LIVE.has(c.last_status)));
}

/** The line a session action may touch: in the caller's scope, of an active client, not suspended, with a session. */
async function sessionLine(core: Pick<Core, 'store'>, p: Principal, id: number): Promise<CelularRow & { gateway_instancia: string }> {
  let c: CelularRow;
  if (p.kind === 'operator') {
    c = (await core.store.getCelular(id)) ?? fail('CELULAR_NOT_FOUND', `celular ${id} not found`);
    const cliente = await core.store.getCliente(c.cliente_id);
    if (cliente && cliente.estado !== 'activo') fail('CLIENT_NOT_ACTIVE', `the client is ${cliente.estado}`);
  } else {
    c = await celularInScope(core, p, id);
    requireActiveClient(p);
  }
  // Suspension is the client's decision: the session is left as it is until it is lifted.
  if (c.estado === 'suspendido') fail('CELULAR_NOT_ACTIVE', `celular ${id} is suspendido: make it activo first`);
  if (!hasSession(c)) {
    fail(
      'NO_SESSION',
      `celular ${id} has no session to act on (${c.last_status === 'logged_out' ? 'it is logged out' : 'it was never linked'}): link it first`,
    );
  }
  return c as CelularRow & { gateway_instancia: string };
}

/** What both actions answer: the line's session after the action, and the line. */
function sessionAnswer(row: CelularRow, at: { now: number; tz: string }) {
  return {
    celular_id: row.id,
    status: row.last_status ?? 'unknown',
    estado: row.estado,
    vinculado: row.vinculado === 1,
    ultimo_check: row.last_status_check === null ? null : iso(row.last_status_check),
    celular: celularView(row, at),
  };
}

const before = (c: CelularRow) => ({ status: c.last_status, estado: c.estado });

/** Logs the line's session out at its gateway: `logged_out`, `desconectado`, unlinked; linking again needs a new scan. */
export async function logoutCelular(core: Pick<Core, 'store' | 'gateway' | 'clock' | 'bus' | 'signals' | 'config'>, p: Principal, id: number) {
  const c = await sessionLine(core, p, id);
  const at = core.clock.now();
  await core.gateway.logout(c.gateway_instancia).catch(gatewayError);
  const row = (await applySessionStatus(core, c.id, 'logged_out', at)) ?? c;
  forgetProfile(core, c.id);
  await core.store.audit(
    {
      actor: actorOf(p),
      accion: 'celular.logout',
      objeto_tipo: 'celular',
      objeto_id: c.id,
      cliente_id: c.cliente_id,
      detalle: { antes: before(c), despues: before(row) },
    },
    core.clock.now(),
  );
  return sessionAnswer(row, viewAt(core));
}

/**
 * Restarts the line's session at its gateway, keeping its link: `connecting`
 * now, and connected again by the gateway's events. A gateway that turns out
 * to hold no session records that (`logged_out`) and answers NO_SESSION.
 */
export async function restartCelular(core: Pick<Core, 'store' | 'gateway' | 'clock' | 'bus' | 'signals' | 'config'>, p: Principal, id: number) {
  const c = await sessionLine(core, p, id);
  const at = core.clock.now();
  const status = await core.gateway.restart(c.gateway_instancia).catch(gatewayError);
  const row = (await applySessionStatus(core, c.id, status, at)) ?? c;
  forgetProfile(core, c.id);
  if (status === 'logged_out') fail('NO_SESSION', `the gateway holds no session for celular ${id} any more: link it again`);
  await core.store.audit(
    {
      actor: actorOf(p),
      accion: 'celular.reiniciar',
      objeto_tipo: 'celular',
      objeto_id: c.id,
      cliente_id: c.cliente_id,
      detalle: { antes: before(c), despues: before(row) },
    },
    core.clock.now(),
  );
  return sessionAnswer(row, viewAt(core));
}

/** How long a profile read is kept: a line's page polls, and the phone's name rarely changes. */
export const PROFILE_TTL_MS = 60_000;
/** Lines whose profile one node keeps at most (the oldest reads are dropped first). */
const PROFILE_CACHE_MAX = 10_000;
type ProfileCache = Map<number, { until: number; perfil: SessionProfile | null }>;
// Keyed by the Core object itself (one cache per Core); typed `object` so callers may pass a Pick of it.
const profiles = new WeakMap<object, ProfileCache>();

function forgetProfile(core: object, id: number): void {
  profiles.get(core)?.delete(id);
}

/**
 * The linked phone's name and number: only for a connected line, null
 * otherwise, or when the gateway cannot tell or be reached (a read never
 * fails for it). Kept PROFILE_TTL_MS per line on this node.
 */
export async function lineProfile(
  core: Pick<Core, 'gateway' | 'clock'>,
  c: Pick<CelularRow, 'id' | 'gateway_instancia' | 'last_status'>,
): Promise<SessionProfile | null> {
  if (c.gateway_instancia === null || c.last_status !== 'connected') return null;
  let cache = profiles.get(core);
  if (!cache) profiles.set(core, (cache = new Map() as ProfileCache));
  const t = core.clock.ticks();
  const hit = cache.get(c.id);
  if (hit && hit.until > t) return hit.perfil;
  const perfil = await core.gateway.profile(c.gateway_instancia).catch(() => null);
  cache.delete(c.id);
  if (cache.size >= PROFILE_CACHE_MAX) cache.delete(cache.keys().next().value!);
  cache.set(c.id, { until: t + PROFILE_TTL_MS, perfil });
  return perfil;
}

/** One line as `/api/celular.php` answers it: the line and its phone's profile. */
export async function showCelularWithProfile(core: Pick<Core, 'store' | 'gateway' | 'clock' | 'config'>, p: ClientPrincipal, id: number) {
  const row = await celularInScope(core, p, id);
  return { celular: celularView(row, viewAt(core)), perfil: await lineProfile(core, row) };
}

/** The session status refreshed from the gateway (celularStatus), the phone's profile when it is connected, and the engine node holding it. */
export async function celularStatusWithProfile(core: Pick<Core, 'store' | 'gateway' | 'clock' | 'bus' | 'signals'>, p: ClientPrincipal, id: number) {
  const st = await celularStatus(core, p, id);
  const instancia = st.gateway_instancia || null;
  const [perfil, motor] = await Promise.all([
    lineProfile(core, { id: st.celular_id, gateway_instancia: instancia, last_status: st.status }),
    engineHolderOf(core, instancia),
  ]);
  // motor_nodo only with the in-process engine (D-137): absent with any other gateway.
  return { ...st, perfil, ...(motor === undefined ? {} : { motor_nodo: motor }) };
}
