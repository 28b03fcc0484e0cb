import { CELULAR_COLUMNS, CLIENTE_COLUMNS } from '../patch-columns.js';
import Database from 'better-sqlite3';
import { chmodSync, existsSync } from 'node:fs';
import type {
  Linea,
  LineCount,
  AuditRecord,
  BalanceChange,
  BalanceResult,
  CelularExpect,
  CelularPatch,
  ClientePatch,
  InsertCelularResult,
  NewCelular,
  NewCelularDone,
  NewClienteDone,
  NewCliente,
} from '../../core/ports/accounts.js';
import type { GatewayServerLoad, NewGatewayServer } from '../../core/ports/gateway-servers.js';
import type { NodeInfo, NodeRow, LeaseAnswer } from '../../core/ports/leases.js';
import type {
  ReceiptOutcome,
  MessageStats,
  AcceptResult,
  AcceptOptions,
  IdemAnswer,
  IdemRow,
  HistoryFilter,
  InboxFilter,
  NewRecibido,
  NewMensaje,
} from '../../core/ports/messages.js';
import type {
  ReceiptEstado,
  AuditEntry,
  CelularRow,
  ClienteRow,
  RecibidoRow,
  MensajeRow,
  EntregaRow,
  EscuchaRow,
  WebhookConfig,
  JournalEvent,
  GatewayServerEstado,
  GatewayServerRow,
} from '../../core/ports/model.js';
import type { ClaimResult } from '../../core/ports/queue.js';
import type { Store, StoreCaps, StoreWriteHealth } from '../../core/ports/store.js';
import type { EntregaClaim, EventRoute, ListenerCopy, IntentoRow } from '../../core/ports/webhooks.js';
import type { SlotClaim } from '../../core/caps.js';
import { balanceAfter } from '../../core/ledger.js';
import { BACKSTOP_PAGES, Checkpointer } from './checkpointer.js';
import { MemoryLeases } from './leases.js';
import { MIGRATIONS } from './migrations.js';
import { grouped, immediate, stmt, useWriteGate } from './statements.js';
import type { WriteGate } from '../write-gate.js';
import { PROBE_BYTES, writeHealthOf } from '../faults.js';
import { listMensajes } from './history.js';
import * as msgs from './messages.js';
import * as hooks from './webhooks.js';
import * as servers from './gateway-servers.js';
import * as idem from './idempotency.js';
import * as inbox from './inbox.js';

type Row = Record<string, unknown>;

/** Builds `SET a = @a, b = @b` from a patch whose keys are known column names. */
function setClause(patch: Record<string, unknown>): string {
  return Object.keys(patch)
    .map((k) => `${k} = @${k}`)
    .join(', ');
}

function onlyColumns(patch: Record<string, unknown>, allowed: Set<string>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === undefined) continue;
    if (!allowed.has(k)) throw new Error(`unknown column ${k}`);
    out[k] = v;
  }
  return out;
}

/**
 * The embedded store: one SQLite file in WAL mode. better-sqlite3 is
 * synchronous, so each method runs to completion before another starts; the
 * methods documented as atomic use a transaction as well, so they stay atomic
 * for any other process that opens the same file.
 */
export class SqliteStore implements Store {
  readonly caps: StoreCaps = { name: 'sqlite', label: 'SQLite', shared: false };
  readonly db: Database.Database;

  private checkpointer: Checkpointer | null = null;

  /** With `background`, WAL checkpoints run on a thread of their own (see checkpointer.ts). */
  constructor(file: string, opts: { background?: { checkpointMs: number; onError: (message: string) => void } } = {}) {
    const fresh = file !== ':memory:' && !existsSync(file);
    this.db = new Database(file);
    if (fresh) chmodSync(file, 0o600);
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('synchronous = NORMAL');
    this.db.pragma('foreign_keys = ON');
    this.db.pragma('busy_timeout = 5000');
    this.migrate();
    if (opts.background && file !== ':memory:') {
      this.db.pragma(`wal_autocheckpoint = ${BACKSTOP_PAGES}`);
      this.checkpointer = new Checkpointer(file, opts.background.checkpointMs, opts.background.onError);
    }
  }

  /** Applies every migration not yet recorded; returns the versions applied now. */
  migrate(): number[] {
    this.db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)`);
    const done = new Set((this.db.prepare('SELECT version FROM schema_migrations').all() as Array<{ version: number }>).map((r) => r.version));
    const applied: number[] = [];
    for (const m of MIGRATIONS) {
      if (done.has(m.version)) continue;
      this.db.transaction(() => {
        this.db.exec(m.sql);
        this.db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)').run(m.version, m.name, Date.now());
      })();
      applied.push(m.version);
    }
    return applied;
  }

  /** Another thread of this process writes the same file (server/background/): transactions take turns through `gate`. */
  shareWrites(gate: WriteGate): void {
    useWriteGate(this.db, gate);
  }

  schemaVersion(): number {
    const r = this.db.prepare('SELECT MAX(version) AS v FROM schema_migrations').get() as { v: number | null };
    return r.v ?? 0;
  }

  async createCliente(input: NewCliente, now: number, done?: NewClienteDone): Promise<ClienteRow> {
    return immediate(this.db, () => {
      const saldo = done?.saldo;
      const info = stmt(
        this.db,
        `INSERT INTO clientes (nombre, email, estado, plan, max_celulares, saldo_global, key_hash, created_at, updated_at)
           VALUES (@nombre, @email, @estado, @plan, @max_celulares, @saldo_global, @key_hash, @now, @now)`,
      ).run({ ...input, saldo_global: input.saldo_global + (saldo?.monto ?? 0), now });
      const id = Number(info.lastInsertRowid);
      if (saldo) {
        stmt(
          this.db,
          `INSERT INTO movimientos_saldo (fecha, cliente_id, celular_id, monto, saldo_resultante, motivo, actor) VALUES (?, ?, NULL, ?, ?, ?, ?)`,
        ).run(now, id, saldo.monto, input.saldo_global + saldo.monto, saldo.motivo, saldo.actor);
      }
      const cliente = stmt(this.db, 'SELECT * FROM clientes WHERE id = ?').get(id) as ClienteRow;
      if (done) this.insertAudit(done.audit(cliente), now);
      return cliente;
    });
  }

  async getCliente(id: number): Promise<ClienteRow | null> {
    return (stmt(this.db, 'SELECT * FROM clientes WHERE id = ?').get(id) as ClienteRow | undefined) ?? null;
  }

  async listClientes(): Promise<ClienteRow[]> {
    return stmt(this.db, 'SELECT * FROM clientes ORDER BY id').all() as ClienteRow[];
  }

  async updateCliente(id: number, patch: ClientePatch, now: number): Promise<ClienteRow | null> {
    const cols = onlyColumns(patch, CLIENTE_COLUMNS);
    if (Object.keys(cols).length > 0) {
      stmt(this.db, `UPDATE clientes SET ${setClause(cols)}, updated_at = @now WHERE id = @id`).run({ ...cols, now, id });
    }
    return this.getCliente(id);
  }

  async insertCelular(input: NewCelular, now: number, done?: NewCelularDone): Promise<InsertCelularResult> {
    return immediate(this.db, (): InsertCelularResult => {
      const cliente = stmt(this.db, 'SELECT max_celulares FROM clientes WHERE id = ?').get(input.cliente_id) as { max_celulares: number | null } | undefined;
      if (!cliente) return { ok: false, reason: 'cliente' };
      if (stmt(this.db, 'SELECT 1 FROM celulares WHERE numero = ?').get(input.numero)) return { ok: false, reason: 'taken' };
      if (cliente.max_celulares !== null) {
        const { n } = stmt(this.db, 'SELECT COUNT(*) AS n FROM celulares WHERE cliente_id = ?').get(input.cliente_id) as { n: number };
        if (n >= cliente.max_celulares) return { ok: false, reason: 'cap' };
      }
      const info = stmt(
        this.db,
        `INSERT INTO celulares (cliente_id, numero, nombre_interno, estado, saldo_actual, max_envios_por_minuto,
             max_envios_por_hora, max_envios_por_dia, hora_inicio_permitido, hora_fin_permitido, key_hash,
             gateway_token_hash, created_at, updated_at)
           VALUES (@cliente_id, @numero, @nombre_interno, @estado, 0, @max_envios_por_minuto, @max_envios_por_hora,
             @max_envios_por_dia, @hora_inicio_permitido, @hora_fin_permitido, @key_hash, @gateway_token_hash, @now, @now)`,
      ).run({ ...input, now });
      const id = Number(info.lastInsertRowid);
      if (done) {
        stmt(this.db, 'UPDATE celulares SET gateway_instancia = ? WHERE id = ?').run(done.instancia(id), id);
        this.insertAudit(done.audit(stmt(this.db, 'SELECT * FROM celulares WHERE id = ?').get(id) as CelularRow), now);
      }
      const celular = stmt(this.db, 'SELECT * FROM celulares WHERE id = ?').get(id) as CelularRow;
      return { ok: true, celular };
    });
  }

  async getCelular(id: number): Promise<CelularRow | null> {
    return (stmt(this.db, 'SELECT * FROM celulares WHERE id = ?').get(id) as CelularRow | undefined) ?? null;
  }

  async getCelularByNumero(numero: string): Promise<CelularRow | null> {
    return (stmt(this.db, 'SELECT * FROM celulares WHERE numero = ?').get(numero) as CelularRow | undefined) ?? null;
  }

  async getCelularByInstancia(instancia: string): Promise<CelularRow | null> {
    return (stmt(this.db, 'SELECT * FROM celulares WHERE gateway_instancia = ?').get(instancia) as CelularRow | undefined) ?? null;
  }

  async getCelularByTokenHash(hash: string): Promise<CelularRow | null> {
    return (
      (stmt(this.db, 'SELECT * FROM celulares WHERE gateway_token_hash = ? UNION SELECT * FROM celulares WHERE legacy_token_hash = ? LIMIT 1').get(
        hash,
        hash,
      ) as CelularRow | undefined) ?? null
    );
  }

  async listCelulares(clienteId: number): Promise<CelularRow[]> {
    return stmt(this.db, 'SELECT * FROM celulares WHERE cliente_id = ? ORDER BY id').all(clienteId) as CelularRow[];
  }

  async listLineas(afterId: number, limit: number): Promise<Linea[]> {
    const rows = stmt(
      this.db,
      'SELECT id, numero, gateway_instancia, vinculado FROM celulares WHERE gateway_instancia IS NOT NULL AND id > ? ORDER BY id LIMIT ?',
    ).all(afterId, limit) as Array<Omit<Linea, 'vinculado'> & { vinculado: number }>;
    return rows.map((r) => ({ ...r, vinculado: r.vinculado === 1 }));
  }

  /** One row per line: a table of phone lines, never of messages, read at most once per metrics cache period. */
  async lineCounts(): Promise<LineCount[]> {
    return stmt(this.db, 'SELECT estado, last_status, COUNT(*) AS n FROM celulares GROUP BY estado, last_status').all() as LineCount[];
  }

  async updateCelular(id: number, patch: CelularPatch, now: number, event?: JournalEvent): Promise<CelularRow | null> {
    const cols = onlyColumns(patch, CELULAR_COLUMNS);
    const write = () => {
      if (Object.keys(cols).length > 0) {
        stmt(this.db, `UPDATE celulares SET ${setClause(cols)}, updated_at = @now WHERE id = @id`).run({ ...cols, now, id });
      }
      if (event) msgs.journal(this.db, event);
    };
    if (event) await grouped(this.db, write);
    else write();
    return this.getCelular(id);
  }

  async updateCelularIf(id: number, expect: CelularExpect, patch: CelularPatch, now: number, event?: JournalEvent): Promise<CelularRow | null> {
    const cols = onlyColumns(patch, CELULAR_COLUMNS);
    const applied = await grouped(this.db, () => {
      const sets = Object.keys(cols).length > 0 ? `${setClause(cols)}, ` : '';
      const info = stmt(
        this.db,
        `UPDATE celulares SET ${sets}updated_at = @now
         WHERE id = @id AND estado = @x_estado AND last_status IS @x_status AND last_status_check IS @x_check`,
      ).run({ ...cols, now, id, x_estado: expect.estado, x_status: expect.last_status, x_check: expect.last_status_check });
      if (info.changes === 0) return false;
      if (event) msgs.journal(this.db, event);
      return true;
    });
    return applied ? this.getCelular(id) : null;
  }

  async deleteCelular(id: number, audit: AuditEntry, now: number): Promise<boolean> {
    return immediate(this.db, () => {
      const info = stmt(this.db, 'DELETE FROM celulares WHERE id = ?').run(id);
      if (info.changes === 0) return false;
      this.insertAudit(audit, now);
      return true;
    });
  }

  async addGatewayServer(input: NewGatewayServer, now: number): Promise<{ ok: true; servidor: GatewayServerRow } | { ok: false; reason: 'taken' }> {
    return servers.addServer(this.db, input, now);
  }

  async putGatewayServer(input: Pick<GatewayServerRow, 'nombre' | 'tipo' | 'url' | 'key'>, now: number): Promise<GatewayServerRow> {
    return servers.putServer(this.db, input, now);
  }

  async getGatewayServer(id: number): Promise<GatewayServerRow | null> {
    return servers.getServer(this.db, id);
  }

  async getGatewayServerByNombre(nombre: string): Promise<GatewayServerRow | null> {
    return servers.getServerByNombre(this.db, nombre);
  }

  async listGatewayServers(): Promise<GatewayServerLoad[]> {
    return servers.listServers(this.db);
  }

  async setGatewayServerEstado(id: number, estado: GatewayServerEstado, now: number): Promise<GatewayServerRow | null> {
    return servers.setEstado(this.db, id, estado, now);
  }

  async assignGatewayServer(celularId: number, choose: (servers: GatewayServerLoad[]) => number | null, now: number): Promise<number | null> {
    return servers.assignServer(this.db, celularId, choose, now);
  }

  async adoptUnassignedLines(servidorId: number, now: number): Promise<number> {
    return servers.adoptUnassigned(this.db, servidorId, now);
  }

  async changeBalance(change: BalanceChange, now: number): Promise<BalanceResult> {
    return immediate(this.db, (): BalanceResult => {
      const cliente = stmt(this.db, 'SELECT saldo_global FROM clientes WHERE id = ?').get(change.cliente_id) as { saldo_global: number } | undefined;
      if (!cliente) return { ok: false, reason: 'cliente' };
      let saldoCelular: number | null = null;
      let resultante: number;
      if (change.celular_id !== null) {
        const cel = stmt(this.db, 'SELECT saldo_actual FROM celulares WHERE id = ? AND cliente_id = ?').get(change.celular_id, change.cliente_id) as
          { saldo_actual: number } | undefined;
        if (!cel) return { ok: false, reason: 'celular' };
        const after = balanceAfter(cel.saldo_actual, change.monto);
        if (!after.ok) return after;
        resultante = after.resultante;
        stmt(this.db, 'UPDATE celulares SET saldo_actual = ? WHERE id = ?').run(resultante, change.celular_id);
        saldoCelular = resultante;
      } else {
        const after = balanceAfter(cliente.saldo_global, change.monto);
        if (!after.ok) return after;
        resultante = after.resultante;
        stmt(this.db, 'UPDATE clientes SET saldo_global = ? WHERE id = ?').run(resultante, change.cliente_id);
      }
      const info = stmt(
        this.db,
        `INSERT INTO movimientos_saldo (fecha, cliente_id, celular_id, monto, saldo_resultante, motivo, actor)
           VALUES (?, ?, ?, ?, ?, ?, ?)`,
      ).run(now, change.cliente_id, change.celular_id, change.monto, resultante, change.motivo, change.actor);
      const saldoGlobal = (
        stmt(this.db, 'SELECT saldo_global FROM clientes WHERE id = ?').get(change.cliente_id) as {
          saldo_global: number;
        }
      ).saldo_global;
      return { ok: true, saldo_global: saldoGlobal, saldo_celular: saldoCelular, movimiento_id: Number(info.lastInsertRowid) };
    });
  }

  private insertAudit(entry: AuditEntry, now: number): void {
    stmt(
      this.db,
      `INSERT INTO auditoria (fecha, actor, accion, objeto_tipo, objeto_id, cliente_id, detalle)
         VALUES (?, ?, ?, ?, ?, ?, ?)`,
    ).run(now, entry.actor, entry.accion, entry.objeto_tipo, entry.objeto_id, entry.cliente_id, JSON.stringify(entry.detalle));
  }

  async audit(entry: AuditEntry, now: number): Promise<void> {
    this.insertAudit(entry, now);
  }

  async listAudit(filter: { cliente_id?: number; limit: number }): Promise<AuditRecord[]> {
    const rows = (
      filter.cliente_id === undefined
        ? stmt(this.db, 'SELECT * FROM auditoria ORDER BY id DESC LIMIT ?').all(filter.limit)
        : stmt(this.db, 'SELECT * FROM auditoria WHERE cliente_id = ? ORDER BY id DESC LIMIT ?').all(filter.cliente_id, filter.limit)
    ) as Row[];
    return rows.map((r) => ({
      id: Number(r.id),
      fecha: Number(r.fecha),
      actor: String(r.actor),
      accion: String(r.accion),
      objeto_tipo: String(r.objeto_tipo),
      objeto_id: r.objeto_id === null ? null : Number(r.objeto_id),
      cliente_id: r.cliente_id === null ? null : Number(r.cliente_id),
      detalle: JSON.parse(String(r.detalle)) as Record<string, unknown>,
    }));
  }

  async messageStats(clienteId: number, monthStart: number, since30d: number): Promise<MessageStats> {
    const r = stmt(
      this.db,
      `SELECT
           COALESCE(SUM(CASE WHEN created_at >= @monthStart AND estado != 'error' THEN 1 ELSE 0 END), 0) AS consumo_mes,
           COALESCE(SUM(CASE WHEN created_at >= @since30d THEN 1 ELSE 0 END), 0) AS mensajes_30d
         FROM mensajes WHERE cliente_id = @clienteId AND created_at >= MIN(@monthStart, @since30d)`,
    ).get({ clienteId, monthStart, since30d }) as MessageStats;
    return r;
  }

  async acceptMensaje(m: NewMensaje, opts: AcceptOptions, now: number): Promise<AcceptResult> {
    return grouped(this.db, () => msgs.acceptMensaje(this.db, m, opts, now));
  }

  async idemGet(clienteId: number, clave: string, now: number): Promise<IdemRow | null> {
    return idem.idemGet(this.db, clienteId, clave, now);
  }

  async idemFinish(clienteId: number, clave: string, msgId: string, answer: IdemAnswer): Promise<void> {
    return grouped(this.db, () => idem.idemFinish(this.db, clienteId, clave, msgId, answer));
  }

  async idemRelease(clienteId: number, clave: string, msgId: string): Promise<void> {
    return grouped(this.db, () => idem.idemRelease(this.db, clienteId, clave, msgId));
  }

  async getMensaje(msgId: string): Promise<MensajeRow | null> {
    return msgs.getMensaje(this.db, msgId);
  }

  async getMensajeByGatewayId(gid: string): Promise<MensajeRow | null> {
    return msgs.getMensajeByGatewayId(this.db, gid);
  }

  async markSent(msgId: string, gid: string, now: number): Promise<MensajeRow | null> {
    return grouped(this.db, () => msgs.markSent(this.db, msgId, gid, now));
  }

  async failMensaje(msgId: string, error: string, now: number): Promise<MensajeRow | null> {
    return grouped(this.db, () => msgs.failMensaje(this.db, msgId, error, now));
  }

  async receipt(celularId: number, gid: string, estado: ReceiptEstado, now: number, error?: string): Promise<ReceiptOutcome> {
    return grouped(this.db, () => msgs.receipt(this.db, celularId, gid, estado, now, error));
  }

  async journalInbound(ev: JournalEvent, clave: string | null, now: number, recibido: NewRecibido): Promise<boolean> {
    return grouped(this.db, () => msgs.journalInbound(this.db, ev, clave, now, recibido));
  }

  async listRecibidos(filter: InboxFilter): Promise<{ total: number; rows: RecibidoRow[] }> {
    return inbox.listRecibidos(this.db, filter);
  }

  async purgeRecibidos(before: number, limit: number): Promise<number> {
    return grouped(this.db, () => inbox.purgeRecibidos(this.db, before, limit));
  }

  async queueDepth(): Promise<{ pending: number; oldest_at: number | null }> {
    return msgs.queueDepth(this.db);
  }

  async queueHeads(): Promise<MensajeRow[]> {
    return msgs.queueHeads(this.db);
  }

  async claimQueued(msgId: string, slot: SlotClaim, now: number): Promise<ClaimResult> {
    return grouped(this.db, () => msgs.claimQueued(this.db, msgId, slot, now));
  }

  async releaseLeases(): Promise<number> {
    // The webhook deliveries' claims too: nothing else serves this file.
    hooks.releaseAllEntregaClaims(this.db);
    return msgs.releaseLeases(this.db);
  }

  async strandedDirect(before: number, limit: number): Promise<MensajeRow[]> {
    return msgs.strandedDirect(this.db, before, limit);
  }

  async retryLater(msgId: string, at: number, error: string): Promise<void> {
    return grouped(this.db, () => msgs.retryLater(this.db, msgId, at, error));
  }

  async pendingFiles(): Promise<string[]> {
    return msgs.pendingFiles(this.db);
  }

  async listMensajes(filter: HistoryFilter): Promise<{ total: number; rows: MensajeRow[] }> {
    return listMensajes(this.db, filter);
  }

  async journalEvent(ev: JournalEvent): Promise<void> {
    return grouped(this.db, () => msgs.journal(this.db, ev));
  }

  async moveEventsToOutbox(limit: number, route: EventRoute, now: number): Promise<{ taken: number; copies: ListenerCopy[] }> {
    return grouped(this.db, () => hooks.moveEventsToOutbox(this.db, limit, route, now));
  }

  async getWebhook(clienteId: number): Promise<WebhookConfig | null> {
    return hooks.getWebhook(this.db, clienteId);
  }

  async setWebhook(cfg: Omit<WebhookConfig, 'updated_at'>, now: number): Promise<WebhookConfig> {
    return hooks.setWebhook(this.db, cfg, now);
  }

  async deleteWebhook(clienteId: number, now: number): Promise<boolean> {
    return hooks.deleteWebhook(this.db, clienteId, now);
  }

  async restoreWebhook(clienteId: number, now: number): Promise<WebhookConfig | null | 'nada'> {
    return hooks.restoreWebhook(this.db, clienteId, now);
  }

  async deactivateWebhook(clienteId: number, now: number): Promise<void> {
    return grouped(this.db, () => hooks.deactivateWebhook(this.db, clienteId, now));
  }

  async enqueueEntrega(e: { id: string; cliente_id: number; evento: string; body: string }, now: number): Promise<void> {
    return grouped(this.db, () => hooks.enqueueEntrega(this.db, e, now));
  }

  async dueEntregas(clienteId: number, now: number, limit: number): Promise<EntregaRow[]> {
    return hooks.dueEntregas(this.db, clienteId, now, limit);
  }

  async claimEntregas(clienteId: number, now: number, limit: number, claim: EntregaClaim): Promise<EntregaRow[]> {
    return grouped(this.db, () => hooks.claimEntregas(this.db, clienteId, now, limit, claim));
  }

  async releaseEntregas(ids: string[], claimId: string): Promise<number> {
    return grouped(this.db, () => hooks.releaseEntregas(this.db, ids, claimId));
  }

  async nextEntregaAt(clienteId: number, after: number): Promise<number | null> {
    return hooks.nextEntregaAt(this.db, clienteId, after);
  }

  async outboxDepth(now: number): Promise<{ pending: number; due: number }> {
    return hooks.outboxDepth(this.db, now);
  }

  async entregaQueues(): Promise<Array<{ cliente_id: number; next_at: number }>> {
    return hooks.entregaQueues(this.db);
  }

  async recordAttempt(
    id: string,
    claimId: string,
    attempt: { status: number | null; duracion_ms: number; error: string | null },
    outcome: { estado: 'pendiente' | 'entregado' | 'fallido'; proximo_intento_at?: number },
    now: number,
  ): Promise<boolean> {
    return grouped(this.db, () => hooks.recordAttempt(this.db, id, claimId, attempt, outcome, now));
  }

  async listEntregas(clienteId: number, limit: number): Promise<Array<EntregaRow & { intentos_detalle: IntentoRow[] }>> {
    return hooks.listEntregas(this.db, clienteId, limit);
  }

  async redeliver(clienteId: number, id: string, now: number): Promise<boolean> {
    return hooks.redeliver(this.db, clienteId, id, now);
  }

  async addEscucha(e: EscuchaRow, max: number, now: number): Promise<EscuchaRow | 'limite'> {
    return hooks.addEscucha(this.db, e, max, now);
  }

  async renewEscucha(clienteId: number, id: string, expiraAt: number, now: number): Promise<EscuchaRow | null> {
    return hooks.renewEscucha(this.db, clienteId, id, expiraAt, now);
  }

  async deleteEscucha(clienteId: number, id: string, now: number): Promise<boolean> {
    return hooks.deleteEscucha(this.db, clienteId, id, now);
  }

  async liveEscuchas(clienteId: number, now: number): Promise<EscuchaRow[]> {
    return hooks.liveEscuchas(this.db, clienteId, now);
  }

  async kvGet<T>(ns: string, key: string): Promise<T | null> {
    const r = stmt(this.db, 'SELECT value FROM kv WHERE ns = ? AND key = ?').get(ns, key) as { value: string } | undefined;
    return r ? (JSON.parse(r.value) as T) : null;
  }

  async kvFirst<T>(ns: string, key: string, value: T): Promise<T> {
    return immediate(this.db, () => {
      stmt(this.db, 'INSERT INTO kv (ns, key, value, expira_at) VALUES (?, ?, ?, NULL) ON CONFLICT (ns, key) DO NOTHING').run(ns, key, JSON.stringify(value));
      return JSON.parse((stmt(this.db, 'SELECT value FROM kv WHERE ns = ? AND key = ?').get(ns, key) as { value: string }).value) as T;
    });
  }

  async kvSet<T>(ns: string, key: string, value: T, expiraAt?: number): Promise<void> {
    // Grouped: an adapter's bookkeeping per message shares the commit of the writes around it.
    return grouped(this.db, () => {
      stmt(
        this.db,
        'INSERT INTO kv (ns, key, value, expira_at) VALUES (?, ?, ?, ?) ON CONFLICT (ns, key) DO UPDATE SET value = excluded.value, expira_at = excluded.expira_at',
      ).run(ns, key, JSON.stringify(value), expiraAt ?? null);
    });
  }

  async kvExpire(now: number, limit: number): Promise<number> {
    return grouped(this.db, () => stmt(this.db, 'DELETE FROM kv WHERE rowid IN (SELECT rowid FROM kv WHERE expira_at < ? LIMIT ?)').run(now, limit).changes);
  }

  async kvDelete(ns: string, key: string): Promise<void> {
    return grouped(this.db, () => {
      stmt(this.db, 'DELETE FROM kv WHERE ns = ? AND key = ?').run(ns, key);
    });
  }

  async kvList<T>(ns: string): Promise<Array<{ key: string; value: T }>> {
    return (stmt(this.db, 'SELECT key, value FROM kv WHERE ns = ? ORDER BY key').all(ns) as Array<{ key: string; value: string }>).map((r) => ({
      key: r.key,
      value: JSON.parse(r.value) as T,
    }));
  }

  // One process serves a SQLite store (the data directory's lock), so its leases live in memory.
  private readonly leases = new MemoryLeases();

  nodeBeat(node: NodeInfo, now: number): Promise<void> {
    return this.leases.nodeBeat(node, now);
  }

  nodeLeave(nodeId: string): Promise<void> {
    return this.leases.nodeLeave(nodeId);
  }

  nodes(now: number): Promise<NodeRow[]> {
    return this.leases.nodes(now);
  }

  leaseTake(nodeId: string, streams: string[], now: number): Promise<LeaseAnswer[]> {
    return this.leases.leaseTake(nodeId, streams, now);
  }

  leaseGive(nodeId: string, stream: string, restMs: number, now: number): Promise<void> {
    return this.leases.leaseGive(nodeId, stream, restMs, now);
  }

  async writeHealth(): Promise<StoreWriteHealth> {
    return writeHealthOf(this.db, this.db.name, () =>
      immediate(this.db, () => {
        stmt(this.db, "INSERT OR REPLACE INTO kv (ns, key, value) VALUES ('salud', 'sonda', ?)").run('x'.repeat(PROBE_BYTES));
        stmt(this.db, "DELETE FROM kv WHERE ns = 'salud' AND key = 'sonda'").run();
      }),
    );
  }

  /**
   * SQLite's online backup API: pages are copied in steps between which
   * writers go on; a page written meanwhile restarts the copy of what
   * changed, so the file is one consistent snapshot whatever the load.
   */
  async backupTo(file: string): Promise<{ schemaVersion: number }> {
    const schemaVersion = this.schemaVersion();
    await this.db.backup(file);
    chmodSync(file, 0o600);
    return { schemaVersion };
  }

  async close(): Promise<void> {
    await this.checkpointer?.stop();
    this.checkpointer = null;
    if (this.db.open) this.db.close();
  }
}
