import type { AuditEntry, CelularRow, JournalEvent } from './model.js';

/** The health window's bounds, as bucket numbers the core computes (core/accounts/line-brake.ts). */
export interface HealthWindow {
  /** Failures: the first five-minute bucket (`salud_fallos.t`) inside the window. */
  fallosDesde: number;
  /** Messages that left the queue: the first quarter hour (`conteos_lineas` grano 15) inside the window. */
  salidosDesde: number;
  /** Messages sent and waited for: quarters from `esperaDesde` to before `esperaHasta`. */
  esperaDesde: number;
  esperaHasta: number;
  /** A quarter hour in ms: a line's `salud_desde` (a resume) starts its window at the quarter it falls in. */
  cuartoMs: number;
}

/** One line's counts over its window. */
export interface LineHealthCounts {
  celular_id: number;
  /** Created in the window and no longer pending (sent, delivered, read or failed). */
  salidos: number;
  /** Failed sends in the window (every class but cancelado), and those refused for good (`rechazado`: not on the network). */
  fallos: number;
  rechazados: number;
  /** Sent in the waited span, and of them those with no receipt yet (still `enviado`). */
  enviados: number;
  sin_entregar: number;
}

/** What a brake, an alert or a resume writes on the line, under a compare-and-set on what was read. */
export interface LineBrakeWrite {
  expect: Pick<CelularRow, 'frenado' | 'salud_alerta_at'>;
  set: Pick<CelularRow, 'frenado' | 'frenado_motivo' | 'salud_alerta_at'> & Partial<Pick<CelularRow, 'salud_desde'>>;
  /** A resume: the line's failure counts are forgotten with it (its window starts again). */
  forget?: boolean;
  event?: JournalEvent;
  /** A brake or a resume is recorded in the audit trail in the same transaction (D-91). */
  audit?: AuditEntry;
}

/** The counters and state of the lines' brake (core/accounts/line-brake.ts). */
export interface LineHealthStore {
  /** One failed send of the line counted in bucket `t` (an upsert). */
  countLineFailure(celularId: number, t: number, clase: string): Promise<void>;
  /** The counts of the given lines (null: every line with a message or a failure in the window); lines with none are left out. */
  lineHealth(ids: number[] | null, w: HealthWindow): Promise<LineHealthCounts[]>;
  /** Writes the change while the row still holds `expect` (with its event and, on a resume, the counts' reset); null when it no longer does. */
  writeLineBrake(id: number, w: LineBrakeWrite, now: number): Promise<CelularRow | null>;
  /** How many lines are braked now (metrics; a partial index). */
  brakedLines(): Promise<number>;
  /** Failure buckets before `t` removed (at most `limit` rows); how many. */
  pruneLineFailures(t: number, limit: number): Promise<number>;
}
