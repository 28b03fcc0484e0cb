import { requireActiveClient, requireClientKey, type ClientPrincipal } from '../auth/auth.js';
import { invalidateCredentials } from '../auth/credential-invalidate.js';
import type { Core } from '../context.js';
import { fail } from '../api/errors.js';
import { GRUPO_LIMITS } from '../api/limits.js';
import { slotClaim } from '../sending/caps.js';
import { countryOf, normalizeNumero } from './phone.js';
import type { GrupoRow } from '../ports/grupos.js';
import type { CelularRow } from '../ports/model.js';
import { QUEUE_CHANNEL } from '../queue/queue-worker.js';

/**
 * A client's pools of lines (docs/pools.md, docs/decisions.md D-173..D-177):
 * their rules, and the pick of a pool's line for one send.
 */

/** A pool as the API shows it. */
export function grupoView(g: GrupoRow) {
  return { id: g.id, nombre: g.nombre, celulares: g.celulares, conmutacion_s: g.conmutacion_s, created_at: g.created_at, updated_at: g.updated_at };
}
export type GrupoView = ReturnType<typeof grupoView>;

/** What a create or an edit may carry, as the route or the panel read it (forms send text). */
export interface GrupoInput {
  nombre?: unknown;
  celulares?: unknown;
  conmutacion_s?: unknown;
}

/** A pool named by its id or by its name. */
export interface GrupoRef {
  id?: number;
  grupo?: string;
}

// Control characters and the line/paragraph separators: a name is printed in tables and logs.
// eslint-disable-next-line no-control-regex
const BAD_NAME = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/;

export function cleanGrupoNombre(v: unknown): string {
  if (typeof v !== 'string') fail('INVALID_PARAMS', 'nombre: a pool name (text) is required');
  const nombre = v.trim();
  if (nombre === '') fail('INVALID_PARAMS', 'nombre: a pool name may not be empty');
  if ([...nombre].length > GRUPO_LIMITS.nombre) fail('INVALID_PARAMS', `nombre must be at most ${GRUPO_LIMITS.nombre} characters`);
  if (BAD_NAME.test(nombre)) fail('INVALID_PARAMS', 'nombre may not hold control characters');
  return nombre;
}

/** Line ids: a JSON array of integers, or text `1,2,3` (a form; repeated fields arrive as an array). */
export function celularIdsOf(v: unknown): number[] {
  const items: unknown[] = Array.isArray(v) ? v : [];
  const parts: unknown[] = Array.isArray(v)
    ? items.flatMap((x): unknown[] => (typeof x === 'string' ? x.split(/[\s,]+/) : [x]))
    : typeof v === 'string'
      ? v.split(/[\s,]+/)
      : [v];
  const ids = parts.filter((x) => x !== '').map((x) => (typeof x === 'number' ? x : typeof x === 'string' && /^[0-9]{1,15}$/.test(x) ? Number(x) : NaN));
  if (ids.some((n) => !Number.isSafeInteger(n) || n < 1)) fail('INVALID_PARAMS', 'celulares: line ids (positive integers) are expected');
  const unique = [...new Set(ids)].sort((a, b) => a - b);
  if (unique.length === 0) fail('INVALID_PARAMS', 'celulares: a pool needs at least one line');
  if (unique.length > GRUPO_LIMITS.celulares) fail('INVALID_PARAMS', `celulares: at most ${GRUPO_LIMITS.celulares} lines in a pool`);
  return unique;
}

/** Seconds, or null (never); a form's "" or "null" is null. */
export function conmutacionOf(v: unknown): number | null {
  if (v === null || v === '' || v === 'null') return null;
  const n = typeof v === 'number' ? v : typeof v === 'string' && /^[0-9]{1,9}$/.test(v.trim()) ? Number(v.trim()) : NaN;
  const [min, max] = GRUPO_LIMITS.conmutacion_s;
  if (!Number.isInteger(n) || n < min || n > max) fail('INVALID_PARAMS', `conmutacion_s must be null (never) or whole seconds from ${min} to ${max}`);
  return n;
}

async function ownLines(core: Pick<Core, 'store'>, p: ClientPrincipal, ids: number[]): Promise<number[]> {
  for (const id of ids) {
    const c = await core.store.getCelular(id);
    // Another client's line is not found, as everywhere (never leak that an id exists).
    if (!c || c.cliente_id !== p.cliente.id) fail('CELULAR_NOT_FOUND', `celular ${id} not found`);
  }
  return ids;
}

export async function listGrupos(core: Pick<Core, 'store'>, p: ClientPrincipal): Promise<GrupoRow[]> {
  return core.store.listGrupos(p.cliente.id);
}

async function grupoOf(core: Pick<Core, 'store'>, p: ClientPrincipal, ref: GrupoRef): Promise<GrupoRow> {
  if (ref.id === undefined && ref.grupo === undefined) fail('INVALID_PARAMS', 'id (a pool id) or grupo (its name) is required');
  const g = ref.id !== undefined ? await core.store.getGrupo(ref.id) : await core.store.grupoByNombre(p.cliente.id, ref.grupo!.trim());
  if (!g || g.cliente_id !== p.cliente.id) fail('GROUP_NOT_FOUND', `pool ${ref.id ?? JSON.stringify(ref.grupo)} not found`);
  return g;
}

/** A pool was written: every node's copy of the client's pools (core.lines.grupo) is dropped. */
const poolsChanged = (core: Pick<Core, 'signals'>, p: ClientPrincipal) => invalidateCredentials(core, { cliente: p.cliente.id });

export async function createGrupo(core: Pick<Core, 'store' | 'clock' | 'signals'>, p: ClientPrincipal, input: GrupoInput): Promise<GrupoRow> {
  requireClientKey(p, 'creating a pool');
  requireActiveClient(p);
  const nombre = cleanGrupoNombre(input.nombre);
  const celulares = await ownLines(core, p, celularIdsOf(input.celulares));
  const conmutacion_s = input.conmutacion_s === undefined ? null : conmutacionOf(input.conmutacion_s);
  const r = await core.store.createGrupo({ cliente_id: p.cliente.id, nombre, celulares, conmutacion_s }, core.clock.now());
  if (!r.ok) fail('GROUP_NAME_TAKEN', `a pool named ${JSON.stringify(nombre)} already exists`);
  // A send may have found no pool of that name a moment ago: nothing kept to drop, but a name freed and taken again is.
  await poolsChanged(core, p);
  return r.grupo;
}

export async function editGrupo(core: Pick<Core, 'store' | 'clock' | 'signals'>, p: ClientPrincipal, ref: GrupoRef, input: GrupoInput): Promise<GrupoRow> {
  requireClientKey(p, 'editing a pool');
  requireActiveClient(p);
  const g = await grupoOf(core, p, ref);
  const patch = {
    ...(input.nombre !== undefined ? { nombre: cleanGrupoNombre(input.nombre) } : {}),
    ...(input.celulares !== undefined ? { celulares: await ownLines(core, p, celularIdsOf(input.celulares)) } : {}),
    ...(input.conmutacion_s !== undefined ? { conmutacion_s: conmutacionOf(input.conmutacion_s) } : {}),
  };
  const r = await core.store.updateGrupo(g.id, patch, core.clock.now());
  if (!r.ok) {
    if (r.reason === 'nombre') fail('GROUP_NAME_TAKEN', `a pool named ${JSON.stringify(patch.nombre)} already exists`);
    fail('GROUP_NOT_FOUND', `pool ${g.id} not found`);
  }
  await poolsChanged(core, p);
  return r.grupo;
}

export async function deleteGrupo(
  core: Pick<Core, 'store' | 'signals'>,
  p: ClientPrincipal,
  ref: GrupoRef,
): Promise<{ id: number; nombre: string; eliminado: true }> {
  requireClientKey(p, 'deleting a pool');
  const g = await grupoOf(core, p, ref);
  if (!(await core.store.deleteGrupo(g.id))) fail('GROUP_NOT_FOUND', `pool ${g.id} not found`);
  await poolsChanged(core, p);
  return { id: g.id, nombre: g.nombre, eliminado: true };
}

/** A line that can send now: linked (`activo`) with a session, not braked. Suspended, disconnected or braked lines are skipped. */
export const usableLine = (c: CelularRow): boolean => c.estado === 'activo' && c.gateway_instancia !== null && c.frenado !== 1;

/** How long a refused pool send is told to wait before looking again, when nothing says better. */
const NO_LINE_RETRY_S = 30;

/** A line's room under its caps at `now`: sends the tightest window still takes, less (for a queued send) its queue. */
async function roomOf(core: Pick<Core, 'store' | 'config'>, c: CelularRow, now: number, directo: boolean): Promise<{ window: number; left: number }> {
  const claim = slotClaim(c, now, 0, core.config.tz);
  // A line without caps has room without limit: nothing to count.
  const counts = claim.windows.length === 0 ? [] : (await core.store.lineSlots(c.id, claim.windows, now)).counts;
  const window = Math.min(...claim.room.map((r, i) => r + 1 - counts[i]!.n));
  if (directo) return { window, left: window };
  const [q] = await core.store.queueSizes([c.id]);
  return { window, left: window - (q?.pendientes ?? 0) };
}

/**
 * A queued send's guess of a line's room (D-179): kept a second by the line
 * reads and told of this node's own acceptances, so a pick reads no member's
 * room on most sends. A queued send waits for its slot in any case; the
 * worker's claim counts the caps exactly.
 */
async function guessedRoom(
  core: Pick<Core, 'store' | 'lines' | 'config'>,
  c: CelularRow,
  now: number,
): Promise<{ window: number; left: number; pendientes: number }> {
  const g = await core.lines.room(c, now, async () => {
    const [r, [q]] = await Promise.all([roomOf(core, c, now, true), core.store.queueSizes([c.id])]);
    return { window: r.window, pendientes: q?.pendientes ?? 0 };
  });
  return { window: g.window, left: g.window - g.pendientes, pendientes: g.pendientes };
}

export interface PoolPick {
  grupo: GrupoRow;
  celular: CelularRow;
}

/**
 * The line of pool `nombre` that sends to `destinatario` (D-174): the line
 * of the client's latest message to the recipient (D-184) while it is usable (for a direct send:
 * and under its caps), so its messages keep their order; else the
 * usable line with most room under its caps (its queue counted for a queued
 * send); lowest id first on a tie. A direct send skips a line at its caps
 * (429 when all are); a queued one waits in the best line's queue as it would
 * on one line. The pick only reads: the acceptance on the picked line still
 * takes its slot exactly (core/sending/caps.ts), so two nodes picking the same
 * line never pass its caps together.
 */
export async function poolLine(
  core: Pick<Core, 'store' | 'lines' | 'clock' | 'config'>,
  p: ClientPrincipal,
  nombre: string,
  destinatario: string,
  directo: boolean,
): Promise<PoolPick> {
  if (p.kind !== 'client') fail('FORBIDDEN', 'sending to a pool (grupo) needs the client key (WAC_...); a celular key sends from its own line');
  const grupo = await core.lines.grupo(p.cliente.id, nombre.trim());
  if (!grupo) fail('GROUP_NOT_FOUND', `pool ${JSON.stringify(nombre)} not found`);
  const members = (await Promise.all(grupo.celulares.map((id) => core.lines.celular(id)))).filter(
    (c): c is CelularRow => c !== null && c.cliente_id === p.cliente.id,
  );
  const first = members[0];
  if (!first) fail('GROUP_NO_LINE', `pool ${JSON.stringify(grupo.nombre)} has no line`, { retryAfter: NO_LINE_RETRY_S });
  const dest = normalizeNumero(destinatario, countryOf(first.numero));
  const key = dest.ok ? dest.numero : destinatario.trim();
  const usable = members.filter(usableLine);
  if (usable.length === 0) {
    fail('GROUP_NO_LINE', `no line of pool ${JSON.stringify(grupo.nombre)} can send now: each is disconnected, without a session or suspended`, {
      retryAfter: NO_LINE_RETRY_S,
    });
  }
  const now = core.clock.now();
  // The line that last wrote to the recipient (D-184): any of the client's sends, through this pool or not.
  const fijo = await core.store.lineaReciente(p.cliente.id, key);
  const sticky = usable.find((c) => c.id === fijo);
  // A queued send stays behind the recipient's earlier ones (its order kept); a direct one goes elsewhere when its line is full.
  if (sticky && (!directo || (await roomOf(core, sticky, now, true)).window > 0)) {
    if (!directo) core.lines.queued(sticky.id, 1);
    return { grupo, celular: sticky };
  }
  // A direct send reads each line's room exactly (it is refused at the caps); a queued one guesses it (D-179).
  // Lines without caps (room without limit) are told apart by their queues.
  let best: { c: CelularRow; left: number; window: number; pendientes: number } | undefined;
  for (const c of usable) {
    const r = directo ? { ...(await roomOf(core, c, now, true)), pendientes: 0 } : await guessedRoom(core, c, now);
    if (!best || r.left > best.left || (r.left === best.left && r.pendientes < best.pendientes)) best = { c, ...r };
  }
  if (!best || (directo && best.window <= 0)) {
    fail('GROUP_NO_ROOM', `every usable line of pool ${JSON.stringify(grupo.nombre)} is at its caps`, { retryAfter: NO_LINE_RETRY_S });
  }
  if (!directo) core.lines.queued(best.c.id, 1);
  return { grupo, celular: best.c };
}

/** Queued messages one move takes from a line; the next pass takes more. */
const MOVE_BATCH = 500;

/**
 * Pool failover (D-175), run by every node's health pass
 * (core/accounts/line-health.ts): for each pool with a wait, a member seen
 * unable to send (disconnected, without a session, suspended) is remembered
 * from the first pass that saw it so; once that is longer ago than the wait,
 * its queued messages no worker has claimed move to the usable member with
 * most room (moverCola: one transaction under the lines' locks, so two nodes
 * never move a message twice), and the receiving line's worker is woken.
 * Returns how many moved.
 */
export async function failoverPass(core: Pick<Core, 'store' | 'clock' | 'signals' | 'config'> & Partial<Pick<Core, 'lines'>>): Promise<number> {
  const now = core.clock.now();
  const pools = await core.store.gruposConConmutacion();
  const seen = new Map<number, CelularRow | null>();
  const lineOf = async (id: number) => {
    if (!seen.has(id)) seen.set(id, await core.store.getCelular(id));
    return seen.get(id) ?? null;
  };
  let moved = 0;
  for (const g of pools) {
    const members = (await Promise.all(g.celulares.map(lineOf))).filter((c): c is CelularRow => c !== null && c.cliente_id === g.cliente_id);
    const usable = members.filter(usableLine);
    for (const c of members) {
      const since = await core.store.lineaCaida(c.id, !usableLine(c), now);
      if (since === null || g.conmutacion_s === null || now - since < g.conmutacion_s * 1000 || usable.length === 0) continue;
      let best: { c: CelularRow; left: number } | undefined;
      for (const u of usable) {
        const r = await roomOf(core, u, now, false);
        if (!best || r.left > best.left) best = { c: u, left: r.left };
      }
      const to = best!.c;
      const r = await core.store.moverCola(g.id, c.id, to.id, MOVE_BATCH, now);
      if (r.length === 0) continue;
      // Both queues changed: this node's guesses of their room are read again (D-179).
      core.lines?.queued(c.id, null);
      core.lines?.queued(to.id, null);
      moved += r.length;
      void core.signals.publish(QUEUE_CHANNEL, String(to.id)).catch(() => undefined);
    }
  }
  return moved;
}
