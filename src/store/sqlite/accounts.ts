import type Database from 'better-sqlite3';
import { balanceChange, lineCapAllows, openingBalance } from '../../core/billing/recipes.js';
import { balanceSet } from '../recipe-sql.js';
import { auditFirstAt, auditInsert, auditPage, auditRecords, auditValues } from '../audit-sql.js';
import type {
  AccountsStore,
  AuditFilter,
  AuditRecord,
  BalanceAudited,
  BalanceChange,
  BalanceResult,
  CelularExpect,
  CelularPatch,
  ClientePatch,
  InsertCelularResult,
  Linea,
  LineCount,
  NewCelular,
  NewCelularDone,
  NewCliente,
  NewClienteDone,
  StatusCheck,
} from '../../core/ports/accounts.js';
import type { AuditEntry, AuditOf, CelularRow, ClienteRow, JournalEvent } from '../../core/ports/model.js';
import { CELULAR_COLUMNS, CLIENTE_COLUMNS, patchColumns } from '../patch-columns.js';
import { journal, writeMovement } from './messages.js';
import { grouped, immediate, ph, stmt } from './statements.js';

/** Clients, lines, balances with their ledger, and the audit trail, in SQLite. */
type DB = Database.Database;

/** Builds `SET a = @a, b = @b` from a patch whose keys are known column names. */
function setClause(patch: Record<string, unknown>): string {
  return Object.keys(patch)
    .map((k) => `${k} = @${k}`)
    .join(', ');
}

function onlyColumns(patch: Record<string, unknown>, allowed: Set<string>): Record<string, unknown> {
  return Object.fromEntries(patchColumns(patch, allowed));
}

function clienteById(db: DB, id: number): ClienteRow | null {
  return (stmt(db, 'SELECT * FROM clientes WHERE id = ?').get(id) as ClienteRow | undefined) ?? null;
}

function celularById(db: DB, id: number): CelularRow | null {
  return (stmt(db, 'SELECT * FROM celulares WHERE id = ?').get(id) as CelularRow | undefined) ?? null;
}

/** One audit record, in the caller's transaction when there is one. */
export function insertAudit(db: DB, entry: AuditEntry, now: number): void {
  stmt(db, auditInsert(ph)).run(...auditValues(entry, now));
}

/** Every line that has a gateway instance, in id order, a page at a time: the health pass's page (leases.ts leaseTakeLines). */
export function lineasAfter(db: DB, afterId: number, limit: number): Linea[] {
  const rows = stmt(
    db,
    'SELECT id, numero, gateway_instancia, vinculado, estado, last_status FROM celulares WHERE gateway_instancia IS NOT NULL AND id > ? ORDER BY id LIMIT CAST(? AS INTEGER)',
  ).all(afterId, limit) as Array<Omit<Linea, 'vinculado'> & { vinculado: number }>;
  return rows.map((r) => ({ ...r, vinculado: r.vinculado === 1 }));
}

/** The AccountsStore port over one connection. */
export function accounts(db: DB): AccountsStore {
  return {
    async createCliente(input: NewCliente, now: number, done?: NewClienteDone): Promise<ClienteRow> {
      return immediate(db, () => {
        const opening = openingBalance(input.saldo_global, done?.saldo);
        const info = stmt(
          db,
          `INSERT INTO clientes (nombre, email, estado, plan, max_celulares, saldo_global, key_hash, created_at, updated_at)
           VALUES (@nombre, @email, @estado, @plan, @max_celulares, @saldo_global, @key_hash, @now, @now)`,
        ).run({ ...input, saldo_global: opening.saldo, now });
        const id = Number(info.lastInsertRowid);
        if (opening.movement) writeMovement(db, opening.movement(id), now);
        const cliente = stmt(db, 'SELECT * FROM clientes WHERE id = ?').get(id) as ClienteRow;
        if (done) insertAudit(db, done.audit(cliente), now);
        return cliente;
      });
    },

    async getCliente(id: number): Promise<ClienteRow | null> {
      return (stmt(db, 'SELECT * FROM clientes WHERE id = ?').get(id) as ClienteRow | undefined) ?? null;
    },

    async listClientes(): Promise<ClienteRow[]> {
      return stmt(db, 'SELECT * FROM clientes ORDER BY id').all() as ClienteRow[];
    },

    async updateCliente(id: number, patch: ClientePatch, now: number, audit?: AuditOf<ClienteRow>): Promise<ClienteRow | null> {
      const cols = onlyColumns(patch, CLIENTE_COLUMNS);
      return immediate(db, () => {
        const antes = audit ? clienteById(db, id) : null;
        if (Object.keys(cols).length > 0) {
          stmt(db, `UPDATE clientes SET ${setClause(cols)}, updated_at = @now WHERE id = @id`).run({ ...cols, now, id });
        }
        const despues = clienteById(db, id);
        if (audit && antes && despues) insertAudit(db, audit(antes, despues), now);
        return despues;
      });
    },

    async insertCelular(input: NewCelular, now: number, done?: NewCelularDone): Promise<InsertCelularResult> {
      return immediate(db, (): InsertCelularResult => {
        const cliente = stmt(db, 'SELECT max_celulares FROM clientes WHERE id = ?').get(input.cliente_id) as { max_celulares: number | null } | undefined;
        if (!cliente) return { ok: false, reason: 'cliente' };
        if (stmt(db, 'SELECT 1 FROM celulares WHERE numero = ?').get(input.numero)) return { ok: false, reason: 'taken' };
        if (cliente.max_celulares !== null) {
          const { n } = stmt(db, 'SELECT COUNT(*) AS n FROM celulares WHERE cliente_id = ?').get(input.cliente_id) as { n: number };
          if (!lineCapAllows(cliente.max_celulares, n)) return { ok: false, reason: 'cap' };
        }
        const info = stmt(
          db,
          `INSERT INTO celulares (cliente_id, numero, nombre_interno, estado, saldo_actual, max_envios_por_minuto,
             max_envios_por_hora, max_envios_por_dia, hora_inicio_permitido, hora_fin_permitido, key_hash,
             gateway_token_hash, calentamiento, calentamiento_desde, freno, created_at, updated_at)
           VALUES (@cliente_id, @numero, @nombre_interno, @estado, 0, @max_envios_por_minuto, @max_envios_por_hora,
             @max_envios_por_dia, @hora_inicio_permitido, @hora_fin_permitido, @key_hash, @gateway_token_hash,
             @calentamiento, @calentamiento_desde, @freno, @now, @now)`,
        ).run({ calentamiento: null, calentamiento_desde: null, freno: 0, ...input, now });
        const id = Number(info.lastInsertRowid);
        if (done) {
          stmt(db, 'UPDATE celulares SET gateway_instancia = ? WHERE id = ?').run(done.instancia(id), id);
          insertAudit(db, done.audit(stmt(db, 'SELECT * FROM celulares WHERE id = ?').get(id) as CelularRow), now);
        }
        const celular = stmt(db, 'SELECT * FROM celulares WHERE id = ?').get(id) as CelularRow;
        return { ok: true, celular };
      });
    },

    async getCelular(id: number): Promise<CelularRow | null> {
      return (stmt(db, 'SELECT * FROM celulares WHERE id = ?').get(id) as CelularRow | undefined) ?? null;
    },

    async getCelularByNumero(numero: string): Promise<CelularRow | null> {
      return (stmt(db, 'SELECT * FROM celulares WHERE numero = ?').get(numero) as CelularRow | undefined) ?? null;
    },

    async getCelularByInstancia(instancia: string): Promise<CelularRow | null> {
      return (stmt(db, 'SELECT * FROM celulares WHERE gateway_instancia = ?').get(instancia) as CelularRow | undefined) ?? null;
    },

    async getCelularByTokenHash(hash: string): Promise<CelularRow | null> {
      return (
        (stmt(db, 'SELECT * FROM celulares WHERE gateway_token_hash = ? UNION SELECT * FROM celulares WHERE legacy_token_hash = ? LIMIT 1').get(hash, hash) as
          CelularRow | undefined) ?? null
      );
    },

    async listCelulares(clienteId: number): Promise<CelularRow[]> {
      return stmt(db, 'SELECT * FROM celulares WHERE cliente_id = ? ORDER BY id').all(clienteId) as CelularRow[];
    },

    /** One row per line: a table of phone lines, never of messages, read at most once per metrics cache period. */
    async lineCounts(): Promise<LineCount[]> {
      return stmt(db, 'SELECT estado, last_status, COUNT(*) AS n FROM celulares GROUP BY estado, last_status').all() as LineCount[];
    },

    async updateCelular(id: number, patch: CelularPatch, now: number, event?: JournalEvent, audit?: AuditOf<CelularRow>): Promise<CelularRow | null> {
      const cols = onlyColumns(patch, CELULAR_COLUMNS);
      const write = () => {
        const antes = audit ? celularById(db, id) : null;
        if (Object.keys(cols).length > 0) {
          stmt(db, `UPDATE celulares SET ${setClause(cols)}, updated_at = @now WHERE id = @id`).run({ ...cols, now, id });
        }
        if (event) journal(db, event);
        if (audit && antes) insertAudit(db, audit(antes, celularById(db, id)!), now);
      };
      if (event || audit) await grouped(db, write);
      else write();
      return celularById(db, id);
    },

    async updateCelularIf(id: number, expect: CelularExpect, patch: CelularPatch, now: number, event?: JournalEvent): Promise<CelularRow | null> {
      const cols = onlyColumns(patch, CELULAR_COLUMNS);
      const applied = await grouped(db, () => {
        const sets = Object.keys(cols).length > 0 ? `${setClause(cols)}, ` : '';
        const info = stmt(
          db,
          `UPDATE celulares SET ${sets}updated_at = @now
         WHERE id = @id AND estado = @x_estado AND last_status IS @x_status AND last_status_check IS @x_check`,
        ).run({ ...cols, now, id, x_estado: expect.estado, x_status: expect.last_status, x_check: expect.last_status_check });
        if (info.changes === 0) return false;
        if (event) journal(db, event);
        return true;
      });
      return applied ? celularById(db, id) : null;
    },

    async recordStatusChecks(checks: StatusCheck[], now: number): Promise<number[]> {
      if (checks.length === 0) return [];
      return grouped(db, () => {
        const u = stmt(
          db,
          `UPDATE celulares SET last_status_check = @at, updated_at = @now
         WHERE id = @id AND last_status IS @status AND estado = @estado AND vinculado = @vinculado AND (last_status_check IS NULL OR last_status_check <= @at)`,
        );
        return checks.filter((c) => u.run({ ...c, now }).changes === 0).map((c) => c.id);
      });
    },

    async deleteCelular(id: number, audit: AuditEntry, now: number): Promise<boolean> {
      return immediate(db, () => {
        const info = stmt(db, 'DELETE FROM celulares WHERE id = ?').run(id);
        if (info.changes === 0) return false;
        insertAudit(db, audit, now);
        return true;
      });
    },
    async changeBalance(change: BalanceChange, now: number, audit?: (r: BalanceAudited) => AuditEntry): Promise<BalanceResult> {
      return immediate(db, (): BalanceResult => {
        const cliente = stmt(db, 'SELECT saldo_global FROM clientes WHERE id = ?').get(change.cliente_id) as { saldo_global: number } | undefined;
        if (!cliente) return { ok: false, reason: 'cliente' };
        let current = cliente.saldo_global;
        if (change.celular_id !== null) {
          const cel = stmt(db, 'SELECT saldo_actual FROM celulares WHERE id = ? AND cliente_id = ?').get(change.celular_id, change.cliente_id) as
            { saldo_actual: number } | undefined;
          if (!cel) return { ok: false, reason: 'celular' };
          current = cel.saldo_actual;
        }
        const w = balanceChange(change, current);
        if (!w.ok) return w;
        stmt(db, balanceSet(w.balance, ph)).run(w.saldo, w.balance.id);
        const info = writeMovement(db, w.movement, now);
        const movimientoId = Number(info.lastInsertRowid);
        if (audit) insertAudit(db, audit({ antes: current, despues: w.saldo, movimiento_id: movimientoId }), now);
        const saldoCelular = change.celular_id !== null ? w.saldo : null;
        const saldoGlobal = (
          stmt(db, 'SELECT saldo_global FROM clientes WHERE id = ?').get(change.cliente_id) as {
            saldo_global: number;
          }
        ).saldo_global;
        return { ok: true, saldo_global: saldoGlobal, saldo_celular: saldoCelular, movimiento_id: movimientoId };
      });
    },

    async audit(entry: AuditEntry, now: number): Promise<void> {
      insertAudit(db, entry, now);
    },

    async listAudit(filter: AuditFilter): Promise<AuditRecord[]> {
      const q = auditPage(filter, ph);
      return auditRecords(stmt(db, q.sql).all(...q.params) as Array<Record<string, unknown>>, filter);
    },

    async firstAuditAt(fecha: number): Promise<number | null> {
      const r = stmt(db, auditFirstAt(ph)).get(fecha) as { id: number } | undefined;
      return r ? Number(r.id) : null;
    },
  };
}
