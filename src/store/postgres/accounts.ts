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
  LineCount,
  NewCelular,
  NewCelularDone,
  NewCliente,
  NewClienteDone,
  StatusCheck,
} from '../../core/ports/accounts.js';
import type { AuditEntry, AuditOf, CelularRow, ClienteRow, JournalEvent } from '../../core/ports/model.js';
import { CELULAR_COLUMNS, CLIENTE_COLUMNS, patchColumns } from '../patch-columns.js';
import { type Client, type Db, ph, row } from './db.js';
import { journal, writeMovement } from './messages.js';

/** Clients, lines, balances with their ledger, and the audit trail, in PostgreSQL (row locks: client, then line). */

/** `SET a = $2, b = $3` from a patch whose keys are known column names; $1 is the id, the last one `now`. */
function patchSql(patch: Record<string, unknown>, allowed: Set<string>): { set: string; values: unknown[] } {
  const entries = patchColumns(patch, allowed);
  return { set: entries.map(([k], i) => `${k} = $${i + 2}`).join(', '), values: entries.map(([, v]) => v) };
}

function clienteById(db: Db, id: number): Promise<ClienteRow | null> {
  return db.one<ClienteRow>('SELECT * FROM clientes WHERE id = $1', [id]);
}

function celularById(db: Db, id: number): Promise<CelularRow | null> {
  return db.one<CelularRow>('SELECT * FROM celulares WHERE id = $1', [id]);
}

/** One audit record, in the caller's transaction when given its client. */
export async function insertAudit(c: Client | Db, entry: AuditEntry, now: number): Promise<void> {
  await c.query(auditInsert(ph), auditValues(entry, now));
}

/** The AccountsStore port over one pool. */
export function accounts(db: Db): AccountsStore {
  return {
    async createCliente(input: NewCliente, now: number, done?: NewClienteDone): Promise<ClienteRow> {
      return db.tx(async (c) => {
        const opening = openingBalance(input.saldo_global, done?.saldo);
        const cliente = (await row<ClienteRow>(
          c,
          `INSERT INTO clientes (nombre, email, estado, plan, max_celulares, saldo_global, key_hash, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8) RETURNING *`,
          [input.nombre, input.email, input.estado, input.plan, input.max_celulares, opening.saldo, input.key_hash, now],
        ))!;
        if (opening.movement) await writeMovement(c, opening.movement(cliente.id), now);
        if (done) await insertAudit(c, done.audit(cliente), now);
        return cliente;
      });
    },

    getCliente: (id) => clienteById(db, id),

    async listClientes(): Promise<ClienteRow[]> {
      return db.q<ClienteRow>('SELECT * FROM clientes ORDER BY id');
    },

    async updateCliente(id: number, patch: ClientePatch, now: number, audit?: AuditOf<ClienteRow>): Promise<ClienteRow | null> {
      const p = patchSql(patch, CLIENTE_COLUMNS);
      const sql = `UPDATE clientes SET ${p.set}, updated_at = $${p.values.length + 2} WHERE id = $1 RETURNING *`;
      if (!audit) return p.values.length === 0 ? clienteById(db, id) : db.one<ClienteRow>(sql, [id, ...p.values, now]);
      return db.tx(async (c) => {
        const antes = await row<ClienteRow>(c, 'SELECT * FROM clientes WHERE id = $1 FOR NO KEY UPDATE', [id]);
        if (!antes) return null;
        const despues = p.values.length === 0 ? antes : (await row<ClienteRow>(c, sql, [id, ...p.values, now]))!;
        await insertAudit(c, audit(antes, despues), now);
        return despues;
      });
    },

    /** The client's row lock makes the cap exact between nodes; the number's unique index settles a race for it. */
    async insertCelular(input: NewCelular, now: number, done?: NewCelularDone): Promise<InsertCelularResult> {
      return db.tx(async (c): Promise<InsertCelularResult> => {
        const cliente = await row<{ max_celulares: number | null }>(c, 'SELECT max_celulares FROM clientes WHERE id = $1 FOR NO KEY UPDATE', [
          input.cliente_id,
        ]);
        if (!cliente) return { ok: false, reason: 'cliente' };
        if (await row(c, 'SELECT 1 FROM celulares WHERE numero = $1', [input.numero])) return { ok: false, reason: 'taken' };
        if (cliente.max_celulares !== null) {
          const r = (await row<{ n: number }>(c, 'SELECT COUNT(*) AS n FROM celulares WHERE cliente_id = $1', [input.cliente_id]))!;
          if (!lineCapAllows(cliente.max_celulares, r.n)) return { ok: false, reason: 'cap' };
        }
        const celular = await row<CelularRow>(
          c,
          `INSERT INTO celulares (cliente_id, numero, nombre_interno, estado, saldo_actual, max_envios_por_minuto,
           max_envios_por_hora, max_envios_por_dia, hora_inicio_permitido, hora_fin_permitido, key_hash,
           gateway_token_hash, created_at, updated_at, calentamiento, calentamiento_desde, freno)
         VALUES ($1, $2, $3, $4, 0, $5, $6, $7, $8, $9, $10, $11, $12, $12, $13, $14::bigint, $15)
         ON CONFLICT (numero) DO NOTHING RETURNING *`,
          [
            input.cliente_id,
            input.numero,
            input.nombre_interno,
            input.estado,
            input.max_envios_por_minuto,
            input.max_envios_por_hora,
            input.max_envios_por_dia,
            input.hora_inicio_permitido,
            input.hora_fin_permitido,
            input.key_hash,
            input.gateway_token_hash,
            now,
            input.calentamiento ?? null,
            input.calentamiento_desde ?? null,
            input.freno ?? 0,
          ],
        );
        if (!celular) return { ok: false, reason: 'taken' };
        if (!done) return { ok: true, celular };
        const named = (await row<CelularRow>(c, 'UPDATE celulares SET gateway_instancia = $2 WHERE id = $1 RETURNING *', [
          celular.id,
          done.instancia(celular.id),
        ]))!;
        await insertAudit(c, done.audit(named), now);
        return { ok: true, celular: named };
      });
    },

    getCelular: (id) => celularById(db, id),

    async getCelularByNumero(numero: string): Promise<CelularRow | null> {
      return db.one<CelularRow>('SELECT * FROM celulares WHERE numero = $1', [numero]);
    },

    async getCelularByInstancia(instancia: string): Promise<CelularRow | null> {
      return db.one<CelularRow>('SELECT * FROM celulares WHERE gateway_instancia = $1', [instancia]);
    },

    async getCelularByTokenHash(hash: string): Promise<CelularRow | null> {
      return db.one<CelularRow>('SELECT * FROM celulares WHERE gateway_token_hash = $1 OR legacy_token_hash = $1 LIMIT 1', [hash]);
    },

    async listCelulares(clienteId: number): Promise<CelularRow[]> {
      return db.q<CelularRow>('SELECT * FROM celulares WHERE cliente_id = $1 ORDER BY id', [clienteId]);
    },

    /** One row per line: a table of phone lines, never of messages, read at most once per metrics cache period. */
    async lineCounts(): Promise<LineCount[]> {
      return db.q<LineCount>('SELECT estado, last_status, COUNT(*) AS n FROM celulares GROUP BY estado, last_status');
    },

    async updateCelular(id: number, patch: CelularPatch, now: number, event?: JournalEvent, audit?: AuditOf<CelularRow>): Promise<CelularRow | null> {
      const p = patchSql(patch, CELULAR_COLUMNS);
      const write = async (c: Client) => {
        const antes = audit ? await row<CelularRow>(c, 'SELECT * FROM celulares WHERE id = $1 FOR NO KEY UPDATE', [id]) : null;
        if (p.values.length > 0) await c.query(`UPDATE celulares SET ${p.set}, updated_at = $${p.values.length + 2} WHERE id = $1`, [id, ...p.values, now]);
        if (event) await journal(c, event);
        if (audit && antes) await insertAudit(c, audit(antes, (await row<CelularRow>(c, 'SELECT * FROM celulares WHERE id = $1', [id]))!), now);
      };
      if (event || audit || p.values.length > 0) await db.tx(write);
      return celularById(db, id);
    },

    async updateCelularIf(id: number, expect: CelularExpect, patch: CelularPatch, now: number, event?: JournalEvent): Promise<CelularRow | null> {
      const p = patchSql(patch, CELULAR_COLUMNS);
      const n = p.values.length;
      const applied = await db.tx(async (c) => {
        const r = await c.query(
          `UPDATE celulares SET ${p.set ? `${p.set}, ` : ''}updated_at = $${n + 2}
         WHERE id = $1 AND estado = $${n + 3} AND last_status IS NOT DISTINCT FROM $${n + 4} AND last_status_check IS NOT DISTINCT FROM $${n + 5}::bigint`,
          [id, ...p.values, now, expect.estado, expect.last_status, expect.last_status_check],
        );
        if (r.rowCount === 0) return false;
        if (event) await journal(c, event);
        return true;
      });
      return applied ? celularById(db, id) : null;
    },
    /** One statement; the rows locked in id order, as every taker of several lines' locks does. */
    async recordStatusChecks(checks: StatusCheck[], now: number): Promise<number[]> {
      if (checks.length === 0) return [];
      const r = await db.q<{ id: number }>(
        `WITH r AS (SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::int[], $5::bigint[]) AS r(id, status, estado, vinculado, at)),
         l AS (
           SELECT c.id, r.at FROM celulares c JOIN r ON r.id = c.id
           WHERE c.last_status = r.status AND c.estado = r.estado AND c.vinculado = r.vinculado AND (c.last_status_check IS NULL OR c.last_status_check <= r.at)
           ORDER BY c.id FOR NO KEY UPDATE OF c
         ),
         u AS (UPDATE celulares c SET last_status_check = l.at, updated_at = $6 FROM l WHERE c.id = l.id RETURNING c.id)
         SELECT r.id FROM r LEFT JOIN u ON u.id = r.id WHERE u.id IS NULL`,
        [checks.map((c) => c.id), checks.map((c) => c.status), checks.map((c) => c.estado), checks.map((c) => c.vinculado), checks.map((c) => c.at), now],
      );
      return r.map((x) => Number(x.id));
    },
    async deleteCelular(id: number, audit: AuditEntry, now: number): Promise<boolean> {
      return db.tx(async (c) => {
        const r = await c.query('DELETE FROM celulares WHERE id = $1', [id]);
        if (r.rowCount === 0) return false;
        await insertAudit(c, audit, now);
        return true;
      });
    },

    /** Locks the client, then the line: the order every transaction takes them in. */
    async changeBalance(change: BalanceChange, now: number, audit?: (r: BalanceAudited) => AuditEntry): Promise<BalanceResult> {
      return db.tx(async (c): Promise<BalanceResult> => {
        const cliente = await row<{ saldo_global: number }>(c, 'SELECT saldo_global FROM clientes WHERE id = $1 FOR NO KEY UPDATE', [change.cliente_id]);
        if (!cliente) return { ok: false, reason: 'cliente' };
        let current = cliente.saldo_global;
        if (change.celular_id !== null) {
          const cel = await row<{ saldo_actual: number }>(c, 'SELECT saldo_actual FROM celulares WHERE id = $1 AND cliente_id = $2 FOR NO KEY UPDATE', [
            change.celular_id,
            change.cliente_id,
          ]);
          if (!cel) return { ok: false, reason: 'celular' };
          current = cel.saldo_actual;
        }
        const w = balanceChange(change, current);
        if (!w.ok) return w;
        await c.query(balanceSet(w.balance, ph), [w.saldo, w.balance.id]);
        const mov = (await writeMovement(c, w.movement, now, 'id'))!;
        if (audit) await insertAudit(c, audit({ antes: current, despues: w.saldo, movimiento_id: mov.id }), now);
        const onLine = change.celular_id !== null;
        return { ok: true, saldo_global: onLine ? cliente.saldo_global : w.saldo, saldo_celular: onLine ? w.saldo : null, movimiento_id: mov.id };
      });
    },

    async audit(entry: AuditEntry, now: number): Promise<void> {
      await insertAudit(db, entry, now);
    },

    async listAudit(filter: AuditFilter): Promise<AuditRecord[]> {
      const q = auditPage(filter, ph);
      return auditRecords(await db.q<Record<string, unknown>>(q.sql, q.params), filter);
    },

    async firstAuditAt(fecha: number): Promise<number | null> {
      const r = await db.one<{ id: number }>(auditFirstAt(ph), [fecha]);
      return r ? Number(r.id) : null;
    },
  };
}
