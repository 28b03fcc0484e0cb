import { celularInScope, type Principal, actorOf } from '../auth/auth.js';
import { invalidateCredentials } from '../auth/credential-invalidate.js';
import type { Core } from '../context.js';
import { fail } from '../api/errors.js';
import { celularView, viewAt } from '../api/views.js';
import type { LineBrakeEvent, LineResumeEvent } from '../events/events.js';
import type { HealthWindow, LineHealthCounts } from '../ports/line-health.js';
import type { AuditEntry, CelularRow, ErrorClase, MensajeEstado, MensajeEstadoRow } from '../ports/model.js';
import { iso } from '../time/clock.js';

/**
 * A line's health and its brake (docs/brake.md, D-169..D-172). Over the last
 * hour a line's failed sends, its sends refused for good (`rechazado`: most
 * often a number not on the network) and its sends never delivered an hour
 * after they went are weighed against the messages that left its queue.
 * Crossing a threshold raises `celular.frenado` once (at most once an hour
 * while it lasts); on a line whose `freno` is on it also sets `frenado`, and
 * the queue worker holds the line's messages (they wait, within their TTL)
 * until a resume, which starts the window again.
 *
 * Cheap by construction: failures are counted per line and five minutes in
 * `salud_fallos` (one upsert per failure, only failures); the messages that
 * left and those still without a receipt come from the quarter-hour counts
 * the store already keeps per line and state (`conteos_lineas`). A check is
 * two primary-key ranges for one line; every line at once, two index ranges.
 * Several nodes: the brake is a compare-and-set on the line's row, so one
 * node raises the event whichever asks.
 */

/** The window: the last hour. */
export const HEALTH_WINDOW_MS = 3_600_000;
/** A sent message still without a receipt this long after it was created counts as never delivered. */
export const UNDELIVERED_AFTER_MS = 3_600_000;
/** The failures' buckets; the messages' are the store's quarter hours. */
export const FAILURE_BUCKET_MS = 300_000;
export const QUARTER_MS = 900_000;
/** Fewest failures (or refusals, or undelivered) that may brake, whatever the share: a few strays never do. */
export const BRAKE_FLOOR = 5;

/** The thresholds (`serve --brake-*`): a share of the messages that left in the window, once at least `minMensajes` left. */
export interface BrakeConfig {
  minMensajes: number;
  fallosPct: number;
  rechazadosPct: number;
  sinEntregarPct: number;
}

export const BRAKE_DEFAULTS: BrakeConfig = { minMensajes: 20, fallosPct: 30, rechazadosPct: 10, sinEntregarPct: 50 };

/** The classes that say something of the line: a cancel (someone's decision) or an expiry in the queue does not. */
const COUNTED: ReadonlySet<ErrorClase> = new Set(['rechazado', 'no_enviado', 'incierto', 'fallido']);

export type BrakeCause = 'fallos' | 'rechazados' | 'sin_entregar';

/** The window's bounds at `now`, in the store's buckets. */
export function healthWindow(now: number): HealthWindow {
  const desde = now - HEALTH_WINDOW_MS;
  return {
    fallosDesde: Math.floor(desde / FAILURE_BUCKET_MS),
    salidosDesde: Math.floor(desde / QUARTER_MS),
    esperaDesde: Math.floor((desde - UNDELIVERED_AFTER_MS) / QUARTER_MS),
    // Quarters wholly older than the wait: every message of them was created at least that long ago.
    esperaHasta: Math.floor((now - UNDELIVERED_AFTER_MS) / QUARTER_MS),
    cuartoMs: QUARTER_MS,
  };
}

/** Which threshold the counts cross first (refusals, then failures, then undelivered), and the reason in words; null: none. */
export function brakeCause(c: LineHealthCounts, cfg: BrakeConfig): { causa: BrakeCause; motivo: string } | null {
  const over = (n: number, of: number, pct: number) => of >= cfg.minMensajes && n >= BRAKE_FLOOR && n * 100 >= pct * of;
  const say = (what: string, n: number, of: number, pct: number) => `${what}: ${n} of ${of} (${Math.round((n * 100) / of)}%, threshold ${pct}%)`;
  if (over(c.rechazados, c.salidos, cfg.rechazadosPct))
    return { causa: 'rechazados', motivo: say('refused for good (not on the network) in the last hour', c.rechazados, c.salidos, cfg.rechazadosPct) };
  if (over(c.fallos, c.salidos, cfg.fallosPct)) return { causa: 'fallos', motivo: say('failed in the last hour', c.fallos, c.salidos, cfg.fallosPct) };
  if (over(c.sin_entregar, c.enviados, cfg.sinEntregarPct))
    return { causa: 'sin_entregar', motivo: say('sent over an hour ago and never delivered', c.sin_entregar, c.enviados, cfg.sinEntregarPct) };
  return null;
}

type BrakeCore = Pick<Core, 'store' | 'clock' | 'bus' | 'signals' | 'config'>;

const configOf = (core: Pick<Core, 'config'>): BrakeConfig => core.config.brake ?? BRAKE_DEFAULTS;

/** A send of the line failed with `clase`: counted toward its health (a cancel or an expiry is not). */
export async function countLineFailure(core: Pick<Core, 'store' | 'clock'>, celularId: number, clase: ErrorClase): Promise<void> {
  if (COUNTED.has(clase)) await core.store.countLineFailure(celularId, Math.floor(core.clock.now() / FAILURE_BUCKET_MS), clase);
}

/**
 * A queued send of the line failed: counted, and the line checked at once (a failing line brakes within its next sends).
 * True when this braked the line: the caller drops its own copy of the line at once (other nodes hear the signal).
 */
export async function noteLineFailure(core: BrakeCore, celularId: number, clase: ErrorClase): Promise<boolean> {
  if (!COUNTED.has(clase)) return false;
  await countLineFailure(core, celularId, clase);
  return (await checkLineHealth(core, [celularId])).includes(celularId);
}

/**
 * A message the network took and then reported failed (`fallido`: a receipt applied at once, or parked before its
 * send's record and applied by it) counts toward its line's health as any failed send (D-170). True: the line braked.
 */
export async function noteFallido(core: BrakeCore, after: MensajeEstadoRow, before: MensajeEstado): Promise<boolean> {
  return endedFallido(after, before) && noteLineFailure(core, after.celular_id, 'fallido');
}

/** Whether this change ended the message `fallido` (a receipt's report of a failure, D-170). */
export const endedFallido = (after: MensajeEstadoRow, before: MensajeEstado): boolean =>
  after.estado === 'error' && after.error_clase === 'fallido' && before !== 'error';

/**
 * Checks the lines (null: every line with messages in the window; the health
 * pass does, for the messages that were never delivered, which no outcome
 * announces) and raises the alert, and the brake, where a threshold is crossed.
 */
export async function checkLineHealth(core: BrakeCore, ids: number[] | null): Promise<number[]> {
  const now = core.clock.now();
  const cfg = configOf(core);
  const braked: number[] = [];
  for (const counts of await core.store.lineHealth(ids, healthWindow(now))) {
    const cause = brakeCause(counts, cfg);
    if (cause && (await raise(core, counts, cause, now))) braked.push(counts.celular_id);
  }
  return braked;
}

/** Whether the line may be alerted now: not braked already, and not alerted within the window. */
const alertable = (c: CelularRow, now: number) => c.frenado === 0 && (c.salud_alerta_at === null || now - c.salud_alerta_at >= HEALTH_WINDOW_MS);

/** Raises the alert (and the brake, where it is on); true when it braked the line. */
async function raise(core: BrakeCore, counts: LineHealthCounts, cause: { causa: BrakeCause; motivo: string }, now: number): Promise<boolean> {
  const c = await core.store.getCelular(counts.celular_id);
  if (!c || !alertable(c, now)) return false;
  const frenado = c.freno === 1;
  const data: LineBrakeEvent = {
    celular_id: c.id,
    cliente_id: c.cliente_id,
    numero: c.numero,
    frenado,
    causa: cause.causa,
    motivo: cause.motivo,
    salidos: counts.salidos,
    fallos: counts.fallos,
    rechazados: counts.rechazados,
    enviados: counts.enviados,
    sin_entregar: counts.sin_entregar,
    fecha: iso(now),
  };
  const row = await core.store.writeLineBrake(
    c.id,
    {
      expect: { frenado: 0, salud_alerta_at: c.salud_alerta_at },
      set: { frenado: frenado ? 1 : 0, frenado_motivo: frenado ? cause.motivo : null, salud_alerta_at: now },
      event: { evento: 'celular.frenado', cliente_id: c.cliente_id, celular_id: c.id, data: { ...data }, fecha: now },
      // Only a brake is a change an operator must trace; an alert alone changes no sending.
      ...(frenado ? { audit: { ...auditOf(c, 'sistema'), accion: 'celular.frenar', detalle: { causa: cause.causa, motivo: cause.motivo } } } : {}),
    },
    now,
  );
  // Another node (or a resume) changed the line since it was read: that write decided.
  if (!row) return false;
  core.bus.publish('celular.frenado', data);
  // The queue worker's and the accept's copies of the line, on every node (D-67).
  if (frenado) await invalidateCredentials(core, { celular: c.id });
  return frenado;
}

/** Rounds of a resume's compare-and-set against writers that keep changing the line (each lost round is one of theirs). */
const RESUME_ROUNDS = 5;

/**
 * `POST /api/celular_reanudar.php?id=` (the client key or the line's own key
 * for its line) and `/admin/celulares/:id/reanudar` (the operator, any line):
 * lifts the brake, forgets the window's failures and starts the window again
 * at this quarter hour. On a line not braked it only starts the window again
 * (`reanudado: false`, no event).
 */
export async function resumeLine(core: BrakeCore, p: Principal, id: number) {
  let c: CelularRow | null = p.kind === 'operator' ? await core.store.getCelular(id) : await celularInScope(core, p, id);
  if (!c) fail('CELULAR_NOT_FOUND', `celular ${id} not found`);
  for (let round = 0; c && round < RESUME_ROUNDS; round++) {
    const now = core.clock.now();
    const was = c.frenado === 1;
    const data: LineResumeEvent = {
      celular_id: c.id,
      cliente_id: c.cliente_id,
      numero: c.numero,
      motivo_anterior: c.frenado_motivo,
      por: actorOf(p),
      fecha: iso(now),
    };
    const row = await core.store.writeLineBrake(
      c.id,
      {
        expect: { frenado: c.frenado, salud_alerta_at: c.salud_alerta_at },
        set: { frenado: 0, frenado_motivo: null, salud_alerta_at: null, salud_desde: now },
        forget: true,
        ...(was
          ? {
              event: { evento: 'celular.reanudado', cliente_id: c.cliente_id, celular_id: c.id, data: { ...data }, fecha: now },
              audit: { ...auditOf(c, data.por), accion: 'celular.reanudar', detalle: { motivo_anterior: c.frenado_motivo } },
            }
          : {}),
      },
      now,
    );
    if (row) {
      if (was) {
        core.bus.publish('celular.reanudado', data);
        await invalidateCredentials(core, { celular: c.id });
      }
      return { celular_id: row.id, reanudado: was, motivo_anterior: was ? data.motivo_anterior : null, celular: celularView(row, viewAt(core)) };
    }
    c = await core.store.getCelular(id);
  }
  if (!c) fail('CELULAR_NOT_FOUND', `celular ${id} not found`);
  fail('CONFLICT', `celular ${id} kept changing while it was resumed; try again`);
}

/** Who and what of a brake's or a resume's audit record. */
function auditOf(c: CelularRow, actor: string): Omit<AuditEntry, 'accion' | 'detalle'> {
  return { actor, objeto_tipo: 'celular', objeto_id: c.id, cliente_id: c.cliente_id };
}
