import type { AuditEntry, AuditOf, CelularEstado, CelularRow, ClienteEstado, ClienteRow, JournalEvent, Plan, SessionStatus } from './model.js';

/** What the health check needs of a line. */
export interface Linea {
  id: number;
  numero: string;
  gateway_instancia: string;
  /** The session held a link (see CelularRow.vinculado). */
  vinculado: boolean;
  estado: CelularEstado;
  last_status: SessionStatus | null;
}

/** A session status observed that changes nothing of its line but when it was checked (the health pass's usual finding). */
export interface StatusCheck {
  id: number;
  status: SessionStatus;
  /** What the line held when read, and must still hold to be written. */
  estado: CelularEstado;
  vinculado: number;
  /** When it was observed (before the gateway was asked). */
  at: number;
}

export interface NewCliente {
  nombre: string;
  email: string;
  plan: Plan;
  estado: ClienteEstado;
  max_celulares: number | null;
  saldo_global: number;
  key_hash: string;
}

export type ClientePatch = Partial<Pick<ClienteRow, 'nombre' | 'email' | 'plan' | 'estado' | 'max_celulares' | 'key_hash'>>;

export type NewCelular = Pick<
  CelularRow,
  | 'cliente_id'
  | 'numero'
  | 'nombre_interno'
  | 'estado'
  | 'max_envios_por_minuto'
  | 'max_envios_por_hora'
  | 'max_envios_por_dia'
  | 'hora_inicio_permitido'
  | 'hora_fin_permitido'
  | 'key_hash'
  | 'gateway_token_hash'
> &
  /** A warm-up plan and the brake given at creation (absent: none, off). */
  LineProtection;
export type LineProtection = Partial<Pick<CelularRow, 'calentamiento' | 'calentamiento_desde' | 'freno'>>;

export type CelularPatch = Partial<
  Pick<
    CelularRow,
    | 'nombre_interno'
    | 'estado'
    | 'max_envios_por_minuto'
    | 'max_envios_por_hora'
    | 'max_envios_por_dia'
    | 'hora_inicio_permitido'
    | 'hora_fin_permitido'
    | 'gateway_instancia'
    | 'legacy_token_hash'
    | 'key_hash'
    | 'last_status'
    | 'last_status_check'
    | 'vinculado'
    | 'servidor_id'
    | 'calentamiento'
    | 'calentamiento_desde'
    | 'freno'
  >
>;

/** What a compare-and-set on a line expects to find: the session status it read, and when that was observed. */
export type CelularExpect = Pick<CelularRow, 'estado' | 'last_status' | 'last_status_check'>;

export interface AuditRecord extends AuditEntry {
  id: number;
  fecha: number;
}

export interface AuditFilter {
  cliente_id?: number;
  /** Only records of this action (`saldo.cambiar`), exactly. */
  accion?: string;
  /** Only records with a smaller id (the next page after a page that ended at this id). */
  before_id?: number;
  /** Only records with a larger id. */
  after_id?: number;
  /** `oldest`: the `limit` records nearest `after_id` (a newer page, or the last), still answered newest first. */
  from?: 'newest' | 'oldest';
  limit: number;
}

/** A balance as a change found and left it, and the ledger row it wrote: what its audit record says. */
export interface BalanceAudited {
  antes: number;
  despues: number;
  movimiento_id: number;
}

export interface BalanceChange {
  cliente_id: number;
  /** null: the client's global balance. */
  celular_id: number | null;
  monto: number;
  motivo: string;
  actor: string;
}

export type BalanceResult =
  | { ok: true; saldo_global: number; saldo_celular: number | null; movimiento_id: number }
  | { ok: false; reason: 'cliente' | 'celular' | 'negativo' | 'desborde' };

export type InsertCelularResult = { ok: true; celular: CelularRow } | { ok: false; reason: 'taken' | 'cap' | 'cliente' };

/**
 * What completes a new client's row in its insert's transaction: its first
 * credit (a ledger movement, when there is one) and the audit record of its
 * creation. One transaction, so a store that fills up meanwhile leaves no
 * client whose key was never shown, and a retry makes one client, not two.
 */
export interface NewClienteDone {
  /** A positive amount, credited to the global balance with its ledger movement. */
  saldo?: Pick<BalanceChange, 'monto' | 'motivo' | 'actor'>;
  audit(cliente: ClienteRow): AuditEntry;
}

/**
 * What completes a new line's row in its insert's transaction: its gateway
 * instance, named from its id, and the audit record of its creation. One
 * transaction, so a store that fills up meanwhile leaves no line whose key
 * was never shown.
 */
export interface NewCelularDone {
  instancia(id: number): string;
  audit(celular: CelularRow): AuditEntry;
}

/** What a ledger row is, from what it holds (core/billing/movimientos.ts `movementTipo`). */
export type MovimientoTipo = 'cobro' | 'reembolso' | 'manual';

/** One `movimientos_saldo` row as stored. */
export interface MovimientoRow {
  id: number;
  fecha: number;
  cliente_id: number;
  /** null: the client's global balance moved. */
  celular_id: number | null;
  monto: number;
  saldo_resultante: number;
  motivo: string;
  actor: string;
}

/** A page of a client's ledger: newest first (fecha, then id), within the filter. */
export interface MovimientoFilter {
  cliente_id: number;
  /** Only this line's balance. */
  celular_id?: number;
  tipo?: MovimientoTipo;
  /** Inclusive start, ms. */
  desde?: number;
  /** Exclusive end, ms. */
  hasta?: number;
  page: number;
  por_pagina: number;
  /** Only the rows after this one in the page's order (an export's next page, read without an offset). */
  despues?: { fecha: number; id: number };
  /** Count the total up to this many rows (null beyond); undefined: no total (an export). */
  totalHasta?: number;
}

/** One line's messages and the credits they cost in a window (created_at in [desde, hasta)). */
export interface ConsumoLinea {
  celular_id: number;
  numero: string;
  /** Messages accepted in the window, failed ones left out. */
  mensajes: number;
  /** Credits those messages cost: charged and not refunded (an unlimited plan's sends cost none). */
  monto: number;
}

/** The ledger read for people (core/billing/movimientos.ts): its listing, and a month's consumption per line. */
export interface LedgerStore {
  /**
   * A page of a client's ledger, newest first (fecha, then id), each filter
   * served by an index (migration 22 / PostgreSQL 18); the total counted up
   * to `totalHasta` (null beyond it, -1 when not asked).
   */
  listMovimientos(filter: MovimientoFilter): Promise<{ total: number | null; rows: MovimientoRow[] }>;
  /** Each of the client's lines with its messages and their credits in [desde, hasta): one index range of mensajes per line. */
  consumoLineas(clienteId: number, desde: number, hasta: number): Promise<ConsumoLinea[]>;
}

/** Lines of one estado and last known session status (metrics). */
export interface LineCount {
  estado: CelularEstado;
  last_status: string | null;
  n: number;
}

/** Clients, lines, balances and their ledger, the audit trail. */
export interface AccountsStore {
  createCliente(input: NewCliente, now: number, done?: NewClienteDone): Promise<ClienteRow>;
  getCliente(id: number): Promise<ClienteRow | null>;
  listClientes(): Promise<ClienteRow[]>;
  /** With `audit`, the record of the change (from the row before and after it) is written in the same transaction. */
  updateCliente(id: number, patch: ClientePatch, now: number, audit?: AuditOf<ClienteRow>): Promise<ClienteRow | null>;

  /** Atomic: checks the number is free and the client's cap, then inserts. */
  insertCelular(input: NewCelular, now: number, done?: NewCelularDone): Promise<InsertCelularResult>;
  getCelular(id: number): Promise<CelularRow | null>;
  getCelularByNumero(numero: string): Promise<CelularRow | null>;
  getCelularByInstancia(instancia: string): Promise<CelularRow | null>;
  /** Looks a presented token up by its hash among gateway and legacy tokens. */
  getCelularByTokenHash(hash: string): Promise<CelularRow | null>;
  listCelulares(clienteId: number): Promise<CelularRow[]>;
  /** With `event`, the event is journaled in the same transaction; with `audit`, the change's record too. */
  updateCelular(id: number, patch: CelularPatch, now: number, event?: JournalEvent, audit?: AuditOf<CelularRow>): Promise<CelularRow | null>;
  /**
   * The same, only while the row still holds `expect` (a compare-and-set):
   * null, writing and journaling nothing, when another writer changed it
   * since it was read (or it is gone). Session statuses are applied through it.
   */
  updateCelularIf(id: number, expect: CelularExpect, patch: CelularPatch, now: number, event?: JournalEvent): Promise<CelularRow | null>;
  /**
   * Records, in one write for all, when each line's status was checked
   * (`last_status_check` = `at`), only on a row that still holds the check's
   * status, estado and vinculado and no newer check; the ids not written (a
   * pass's usual answer is none: its lines are as it read them).
   */
  recordStatusChecks(checks: StatusCheck[], now: number): Promise<number[]>;
  /** Atomic: removes the row and writes the audit record together. */
  deleteCelular(id: number, audit: AuditEntry, now: number): Promise<boolean>;

  /** Atomic: applies a change, refusing any that would leave a balance negative, and records it (with `audit`, its audit record too). */
  changeBalance(change: BalanceChange, now: number, audit?: (r: BalanceAudited) => AuditEntry): Promise<BalanceResult>;

  audit(entry: AuditEntry, now: number): Promise<void>;
  /**
   * Newest first; `before_id`/`after_id` page by id (keyset), served by the
   * primary key, (cliente_id, id), (accion, id) or (cliente_id, accion, id).
   */
  listAudit(filter: AuditFilter): Promise<AuditRecord[]>;
  /** The id of the first record written at or after `fecha` (ms), by the index on fecha; null when none is. */
  firstAuditAt(fecha: number): Promise<number | null>;

  /** Metrics: how many lines there are of each estado and last known session status (null: never known). */
  lineCounts(): Promise<LineCount[]>;
}
