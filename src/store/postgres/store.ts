import { CELULAR_COLUMNS, CLIENTE_COLUMNS } from '../patch-columns.js';
import type {
  AuditRecord,
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
  NewClienteDone,
  NewCliente,
} from '../../core/ports/accounts.js';
import type { GatewayServerLoad, NewGatewayServer } from '../../core/ports/gateway-servers.js';
import type { LeaseAnswer, NodeInfo, NodeRow } from '../../core/ports/leases.js';
import type {
  AcceptResult,
  AcceptOptions,
  IdemAnswer,
  IdemRow,
  HistoryFilter,
  InboxFilter,
  NewRecibido,
  MessageStats,
  NewMensaje,
  ReceiptOutcome,
} from '../../core/ports/messages.js';
import type {
  AuditEntry,
  CelularRow,
  ClienteRow,
  EntregaRow,
  EscuchaRow,
  GatewayServerEstado,
  GatewayServerRow,
  RecibidoRow,
  JournalEvent,
  MensajeRow,
  ReceiptEstado,
  WebhookConfig,
} from '../../core/ports/model.js';
import type { ClaimResult } from '../../core/ports/queue.js';
import type { Store, StoreCaps, StoreWriteHealth } from '../../core/ports/store.js';
import type { EntregaClaim, EventRoute, ListenerCopy, IntentoRow } from '../../core/ports/webhooks.js';
import type { SlotClaim } from '../../core/caps.js';
import { balanceAfter } from '../../core/ledger.js';
import { PROBE_BYTES, writeHealthOf } from '../faults.js';
import { type Client, Db, type PgOptions, row } from './db.js';
import { listMensajes } from './history.js';
import * as msgs from './messages.js';
import { migrate } from './migrations.js';
import * as hooks from './webhooks.js';
import * as servers from './gateway-servers.js';
import * as leases from './leases.js';
import * as idem from './idempotency.js';
import * as inbox from './inbox.js';

/** `SET a = $2, b = $3` from a patch whose keys are known column names; $1 is the id, the last one `now`. */
function patchSql(patch: Record<string, unknown>, allowed: Set<string>): { set: string; values: unknown[] } {
  const entries = Object.entries(patch).filter(([, v]) => v !== undefined);
  for (const [k] of entries) if (!allowed.has(k)) throw new Error(`unknown column ${k}`);
  return { set: entries.map(([k], i) => `${k} = $${i + 2}`).join(', '), values: entries.map(([, v]) => v) };
}

/**
 * The networked store: PostgreSQL through a pool, for any number of nodes on
 * one database. Every method is one statement or one transaction; those that
 * read and then write lock the rows they change (see postgres/messages.ts for the
 * order), so balances, caps and queue depths stay exact with several nodes
 * writing. Open it with `PgStore.open`, which applies the migrations.
 */
export class PgStore implements Store {
  readonly caps: StoreCaps = { name: 'postgres', label: 'PostgreSQL', shared: true };
  readonly db: Db;

  private constructor(url: string, opts: PgOptions) {
    this.db = new Db(url, opts);
  }

  static async open(url: string, opts: PgOptions = {}): Promise<PgStore> {
    const store = new PgStore(url, opts);
    try {
      await migrate(store.db);
    } catch (err) {
      await store.close();
      throw err;
    }
    return store;
  }

  /** The store's name in messages: its URL without the password. */
  get name(): string {
    return this.db.name;
  }

  async schemaVersion(): Promise<number> {
    return (await this.db.one<{ v: number | null }>('SELECT MAX(version) AS v FROM schema_migrations'))?.v ?? 0;
  }

  async createCliente(input: NewCliente, now: number, done?: NewClienteDone): Promise<ClienteRow> {
    return this.db.tx(async (c) => {
      const saldo = done?.saldo;
      const saldoGlobal = input.saldo_global + (saldo?.monto ?? 0);
      const cliente = (await row<ClienteRow>(
        c,
        `INSERT INTO clientes (nombre, email, estado, plan, max_celulares, saldo_global, key_hash, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8) RETURNING *`,
        [input.nombre, input.email, input.estado, input.plan, input.max_celulares, saldoGlobal, input.key_hash, now],
      ))!;
      if (saldo) {
        await c.query(
          `INSERT INTO movimientos_saldo (fecha, cliente_id, celular_id, monto, saldo_resultante, motivo, actor) VALUES ($1, $2, NULL, $3, $4, $5, $6)`,
          [now, cliente.id, saldo.monto, saldoGlobal, saldo.motivo, saldo.actor],
        );
      }
      if (done) await this.insertAudit(c, done.audit(cliente), now);
      return cliente;
    });
  }

  async getCliente(id: number): Promise<ClienteRow | null> {
    return this.db.one<ClienteRow>('SELECT * FROM clientes WHERE id = $1', [id]);
  }

  async listClientes(): Promise<ClienteRow[]> {
    return this.db.q<ClienteRow>('SELECT * FROM clientes ORDER BY id');
  }

  async updateCliente(id: number, patch: ClientePatch, now: number): Promise<ClienteRow | null> {
    const p = patchSql(patch, CLIENTE_COLUMNS);
    if (p.values.length === 0) return this.getCliente(id);
    return this.db.one<ClienteRow>(`UPDATE clientes SET ${p.set}, updated_at = $${p.values.length + 2} WHERE id = $1 RETURNING *`, [id, ...p.values, now]);
  }

  /** The client's row lock makes the cap exact between nodes; the number's unique index settles a race for it. */
  async insertCelular(input: NewCelular, now: number, done?: NewCelularDone): Promise<InsertCelularResult> {
    return this.db.tx(async (c): Promise<InsertCelularResult> => {
      const cliente = await row<{ max_celulares: number | null }>(c, 'SELECT max_celulares FROM clientes WHERE id = $1 FOR NO KEY UPDATE', [input.cliente_id]);
      if (!cliente) return { ok: false, reason: 'cliente' };
      if (await row(c, 'SELECT 1 FROM celulares WHERE numero = $1', [input.numero])) return { ok: false, reason: 'taken' };
      if (cliente.max_celulares !== null) {
        const r = (await row<{ n: number }>(c, 'SELECT COUNT(*) AS n FROM celulares WHERE cliente_id = $1', [input.cliente_id]))!;
        if (r.n >= cliente.max_celulares) return { ok: false, reason: 'cap' };
      }
      const celular = await row<CelularRow>(
        c,
        `INSERT INTO celulares (cliente_id, numero, nombre_interno, estado, saldo_actual, max_envios_por_minuto,
           max_envios_por_hora, max_envios_por_dia, hora_inicio_permitido, hora_fin_permitido, key_hash,
           gateway_token_hash, created_at, updated_at)
         VALUES ($1, $2, $3, $4, 0, $5, $6, $7, $8, $9, $10, $11, $12, $12)
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
        ],
      );
      if (!celular) return { ok: false, reason: 'taken' };
      if (!done) return { ok: true, celular };
      const named = (await row<CelularRow>(c, 'UPDATE celulares SET gateway_instancia = $2 WHERE id = $1 RETURNING *', [
        celular.id,
        done.instancia(celular.id),
      ]))!;
      await this.insertAudit(c, done.audit(named), now);
      return { ok: true, celular: named };
    });
  }

  async getCelular(id: number): Promise<CelularRow | null> {
    return this.db.one<CelularRow>('SELECT * FROM celulares WHERE id = $1', [id]);
  }

  async getCelularByNumero(numero: string): Promise<CelularRow | null> {
    return this.db.one<CelularRow>('SELECT * FROM celulares WHERE numero = $1', [numero]);
  }

  async getCelularByInstancia(instancia: string): Promise<CelularRow | null> {
    return this.db.one<CelularRow>('SELECT * FROM celulares WHERE gateway_instancia = $1', [instancia]);
  }

  async getCelularByTokenHash(hash: string): Promise<CelularRow | null> {
    return this.db.one<CelularRow>('SELECT * FROM celulares WHERE gateway_token_hash = $1 OR legacy_token_hash = $1 LIMIT 1', [hash]);
  }

  async listCelulares(clienteId: number): Promise<CelularRow[]> {
    return this.db.q<CelularRow>('SELECT * FROM celulares WHERE cliente_id = $1 ORDER BY id', [clienteId]);
  }

  async listLineas(afterId: number, limit: number): Promise<Linea[]> {
    const rows = await this.db.q<Omit<Linea, 'vinculado'> & { vinculado: number }>(
      'SELECT id, numero, gateway_instancia, vinculado FROM celulares WHERE gateway_instancia IS NOT NULL AND id > $1 ORDER BY id LIMIT $2',
      [afterId, limit],
    );
    return rows.map((r) => ({ ...r, vinculado: r.vinculado === 1 }));
  }

  /** One row per line: a table of phone lines, never of messages, read at most once per metrics cache period. */
  async lineCounts(): Promise<LineCount[]> {
    return this.db.q<LineCount>('SELECT estado, last_status, COUNT(*) AS n FROM celulares GROUP BY estado, last_status');
  }

  async updateCelular(id: number, patch: CelularPatch, now: number, event?: JournalEvent): Promise<CelularRow | null> {
    const p = patchSql(patch, CELULAR_COLUMNS);
    const write = async (c: Client) => {
      if (p.values.length > 0) await c.query(`UPDATE celulares SET ${p.set}, updated_at = $${p.values.length + 2} WHERE id = $1`, [id, ...p.values, now]);
      if (event) await msgs.journal(c, event);
    };
    if (event || p.values.length > 0) await this.db.tx(write);
    return this.getCelular(id);
  }

  async updateCelularIf(id: number, expect: CelularExpect, patch: CelularPatch, now: number, event?: JournalEvent): Promise<CelularRow | null> {
    const p = patchSql(patch, CELULAR_COLUMNS);
    const n = p.values.length;
    const applied = await this.db.tx(async (c) => {
      const r = await c.query(
        `UPDATE celulares SET ${p.set ? `${p.set}, ` : ''}updated_at = $${n + 2}
         WHERE id = $1 AND estado = $${n + 3} AND last_status IS NOT DISTINCT FROM $${n + 4} AND last_status_check IS NOT DISTINCT FROM $${n + 5}::bigint`,
        [id, ...p.values, now, expect.estado, expect.last_status, expect.last_status_check],
      );
      if (r.rowCount === 0) return false;
      if (event) await msgs.journal(c, event);
      return true;
    });
    return applied ? this.getCelular(id) : null;
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

  async deleteCelular(id: number, audit: AuditEntry, now: number): Promise<boolean> {
    return this.db.tx(async (c) => {
      const r = await c.query('DELETE FROM celulares WHERE id = $1', [id]);
      if (r.rowCount === 0) return false;
      await this.insertAudit(c, audit, now);
      return true;
    });
  }

  /** Locks the client, then the line: the order every transaction takes them in. */
  async changeBalance(change: BalanceChange, now: number): Promise<BalanceResult> {
    return this.db.tx(async (c): Promise<BalanceResult> => {
      const cliente = await row<{ saldo_global: number }>(c, 'SELECT saldo_global FROM clientes WHERE id = $1 FOR NO KEY UPDATE', [change.cliente_id]);
      if (!cliente) return { ok: false, reason: 'cliente' };
      let saldoGlobal = cliente.saldo_global;
      let saldoCelular: number | null = null;
      let resultante: number;
      if (change.celular_id !== null) {
        const cel = await row<{ saldo_actual: number }>(c, 'SELECT saldo_actual FROM celulares WHERE id = $1 AND cliente_id = $2 FOR NO KEY UPDATE', [
          change.celular_id,
          change.cliente_id,
        ]);
        if (!cel) return { ok: false, reason: 'celular' };
        const after = balanceAfter(cel.saldo_actual, change.monto);
        if (!after.ok) return after;
        resultante = saldoCelular = after.resultante;
        await c.query('UPDATE celulares SET saldo_actual = $2 WHERE id = $1', [change.celular_id, resultante]);
      } else {
        const after = balanceAfter(cliente.saldo_global, change.monto);
        if (!after.ok) return after;
        resultante = saldoGlobal = after.resultante;
        await c.query('UPDATE clientes SET saldo_global = $2 WHERE id = $1', [change.cliente_id, resultante]);
      }
      const mov = (await row<{ id: number }>(
        c,
        `INSERT INTO movimientos_saldo (fecha, cliente_id, celular_id, monto, saldo_resultante, motivo, actor)
         VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id`,
        [now, change.cliente_id, change.celular_id, change.monto, resultante, change.motivo, change.actor],
      ))!;
      return { ok: true, saldo_global: saldoGlobal, saldo_celular: saldoCelular, movimiento_id: mov.id };
    });
  }

  private async insertAudit(c: Client | Db, entry: AuditEntry, now: number): Promise<void> {
    await c.query(
      `INSERT INTO auditoria (fecha, actor, accion, objeto_tipo, objeto_id, cliente_id, detalle)
       VALUES ($1, $2, $3, $4, $5, $6, $7)`,
      [now, entry.actor, entry.accion, entry.objeto_tipo, entry.objeto_id, entry.cliente_id, JSON.stringify(entry.detalle)],
    );
  }

  async audit(entry: AuditEntry, now: number): Promise<void> {
    await this.insertAudit(this.db, entry, now);
  }

  async listAudit(filter: { cliente_id?: number; limit: number }): Promise<AuditRecord[]> {
    const rows =
      filter.cliente_id === undefined
        ? await this.db.q<AuditRecord & { detalle: string }>('SELECT * FROM auditoria ORDER BY id DESC LIMIT $1', [filter.limit])
        : await this.db.q<AuditRecord & { detalle: string }>('SELECT * FROM auditoria WHERE cliente_id = $1 ORDER BY id DESC LIMIT $2', [
            filter.cliente_id,
            filter.limit,
          ]);
    return rows.map((r) => ({ ...r, detalle: JSON.parse(r.detalle) as Record<string, unknown> }));
  }

  async messageStats(clienteId: number, monthStart: number, since30d: number): Promise<MessageStats> {
    return (await this.db.one<MessageStats>(
      `SELECT
         COUNT(*) FILTER (WHERE created_at >= $2 AND estado <> 'error') AS consumo_mes,
         COUNT(*) FILTER (WHERE created_at >= $3) AS mensajes_30d
       FROM mensajes WHERE cliente_id = $1 AND created_at >= LEAST($2::bigint, $3::bigint)`,
      [clienteId, monthStart, since30d],
    ))!;
  }

  async acceptMensaje(m: NewMensaje, opts: AcceptOptions, now: number): Promise<AcceptResult> {
    return msgs.acceptMensaje(this.db, m, opts, now);
  }

  async idemGet(clienteId: number, clave: string, now: number): Promise<IdemRow | null> {
    return idem.idemGet(this.db, clienteId, clave, now);
  }

  async idemFinish(clienteId: number, clave: string, msgId: string, answer: IdemAnswer): Promise<void> {
    return idem.idemFinish(this.db, clienteId, clave, msgId, answer);
  }

  async idemRelease(clienteId: number, clave: string, msgId: string): Promise<void> {
    return idem.idemRelease(this.db, clienteId, clave, msgId);
  }

  async getMensaje(msgId: string): Promise<MensajeRow | null> {
    return msgs.getMensaje(this.db, msgId);
  }

  async getMensajeByGatewayId(gid: string): Promise<MensajeRow | null> {
    return msgs.getMensajeByGatewayId(this.db, gid);
  }

  async markSent(msgId: string, gid: string, now: number): Promise<MensajeRow | null> {
    return msgs.markSent(this.db, msgId, gid, now);
  }

  async failMensaje(msgId: string, error: string, now: number): Promise<MensajeRow | null> {
    return msgs.failMensaje(this.db, msgId, error, now);
  }

  async receipt(celularId: number, gid: string, estado: ReceiptEstado, now: number, error?: string): Promise<ReceiptOutcome> {
    return msgs.receipt(this.db, celularId, gid, estado, now, error);
  }

  async journalInbound(ev: JournalEvent, clave: string | null, now: number, recibido: NewRecibido): Promise<boolean> {
    return msgs.journalInbound(this.db, ev, clave, now, recibido);
  }

  async listRecibidos(filter: InboxFilter): Promise<{ total: number; rows: RecibidoRow[] }> {
    return inbox.listRecibidos(this.db, filter);
  }

  async purgeRecibidos(before: number, limit: number): Promise<number> {
    return inbox.purgeRecibidos(this.db, before, limit);
  }

  async queueDepth(): Promise<{ pending: number; oldest_at: number | null }> {
    return msgs.queueDepth(this.db);
  }

  async queueHeads(): Promise<MensajeRow[]> {
    return msgs.queueHeads(this.db);
  }

  async claimQueued(msgId: string, slot: SlotClaim, now: number): Promise<ClaimResult> {
    return msgs.claimQueued(this.db, msgId, slot, now);
  }

  async releaseLeases(): Promise<number> {
    return msgs.releaseLeases(this.db);
  }

  async strandedDirect(before: number, limit: number): Promise<MensajeRow[]> {
    return msgs.strandedDirect(this.db, before, limit);
  }

  async retryLater(msgId: string, at: number, error: string): Promise<void> {
    return msgs.retryLater(this.db, msgId, at, error);
  }

  async pendingFiles(): Promise<string[]> {
    return msgs.pendingFiles(this.db);
  }

  async listMensajes(filter: HistoryFilter): Promise<{ total: number; rows: MensajeRow[] }> {
    return listMensajes(this.db, filter);
  }

  async journalEvent(ev: JournalEvent): Promise<void> {
    await this.db.tx((c) => msgs.journal(c, ev));
  }

  async moveEventsToOutbox(limit: number, route: EventRoute, now: number): Promise<{ taken: number; copies: ListenerCopy[] }> {
    return hooks.moveEventsToOutbox(this.db, limit, route, now);
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
    return hooks.deactivateWebhook(this.db, clienteId, now);
  }

  async enqueueEntrega(e: { id: string; cliente_id: number; evento: string; body: string }, now: number): Promise<void> {
    return hooks.enqueueEntrega(this.db, e, now);
  }

  async dueEntregas(clienteId: number, now: number, limit: number): Promise<EntregaRow[]> {
    return hooks.dueEntregas(this.db, clienteId, now, limit);
  }

  async claimEntregas(clienteId: number, now: number, limit: number, claim: EntregaClaim): Promise<EntregaRow[]> {
    return hooks.claimEntregas(this.db, clienteId, now, limit, claim);
  }

  async releaseEntregas(ids: string[], claimId: string): Promise<number> {
    return hooks.releaseEntregas(this.db, ids, claimId);
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
    return hooks.recordAttempt(this.db, id, claimId, attempt, outcome, now);
  }

  async listEntregas(clienteId: number, limit: number): Promise<Array<EntregaRow & { intentos_detalle: IntentoRow[] }>> {
    return hooks.listEntregas(this.db, clienteId, limit);
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

  async redeliver(clienteId: number, id: string, now: number): Promise<boolean> {
    return hooks.redeliver(this.db, clienteId, id, now);
  }

  async kvGet<T>(ns: string, key: string): Promise<T | null> {
    const r = await this.db.one<{ value: string }>('SELECT value FROM kv WHERE ns = $1 AND key = $2', [ns, key]);
    return r ? (JSON.parse(r.value) as T) : null;
  }

  /** The insert, or the row another node put there first (a conflicting insert waits for that row's commit). */
  async kvFirst<T>(ns: string, key: string, value: T): Promise<T> {
    const r = await this.db.one<{ value: string }>(
      `WITH ins AS (INSERT INTO kv (ns, key, value, expira_at) VALUES ($1, $2, $3, NULL) ON CONFLICT (ns, key) DO NOTHING RETURNING value)
       SELECT value FROM ins UNION ALL SELECT value FROM kv WHERE ns = $1 AND key = $2 AND NOT EXISTS (SELECT 1 FROM ins)`,
      [ns, key, JSON.stringify(value)],
    );
    // Empty when the other row committed after this statement's snapshot was taken: a new statement sees it.
    const v = r ?? (await this.db.one<{ value: string }>('SELECT value FROM kv WHERE ns = $1 AND key = $2', [ns, key]));
    return JSON.parse(v!.value) as T;
  }

  async kvSet<T>(ns: string, key: string, value: T, expiraAt?: number): Promise<void> {
    await this.db.q(
      `INSERT INTO kv (ns, key, value, expira_at) VALUES ($1, $2, $3, $4)
       ON CONFLICT (ns, key) DO UPDATE SET value = excluded.value, expira_at = excluded.expira_at`,
      [ns, key, JSON.stringify(value), expiraAt ?? null],
    );
  }

  /** Expired entries a batch at a time; entries another node is removing are skipped, not waited for. */
  async kvExpire(now: number, limit: number): Promise<number> {
    const r = await this.db.query(
      `DELETE FROM kv WHERE (ns, key) IN (
         SELECT ns, key FROM kv WHERE expira_at < $1 LIMIT $2 FOR UPDATE SKIP LOCKED)`,
      [now, limit],
    );
    return r.rowCount ?? 0;
  }

  async kvDelete(ns: string, key: string): Promise<void> {
    await this.db.q('DELETE FROM kv WHERE ns = $1 AND key = $2', [ns, key]);
  }

  async kvList<T>(ns: string): Promise<Array<{ key: string; value: T }>> {
    const rows = await this.db.q<{ key: string; value: string }>('SELECT key, value FROM kv WHERE ns = $1 ORDER BY key', [ns]);
    return rows.map((r) => ({ key: r.key, value: JSON.parse(r.value) as T }));
  }

  // Leases: on the database's clock (postgres/leases.ts), so `now` is not used.
  async nodeBeat(node: NodeInfo): Promise<void> {
    return leases.nodeBeat(this.db, node);
  }

  async nodeLeave(nodeId: string): Promise<void> {
    return leases.nodeLeave(this.db, nodeId);
  }

  async nodes(): Promise<NodeRow[]> {
    return leases.nodes(this.db);
  }

  async leaseTake(nodeId: string, streams: string[]): Promise<LeaseAnswer[]> {
    return leases.leaseTake(this.db, nodeId, streams);
  }

  async leaseGive(nodeId: string, stream: string, restMs: number): Promise<void> {
    return leases.leaseGive(this.db, nodeId, stream, restMs);
  }

  async writeHealth(): Promise<StoreWriteHealth> {
    return writeHealthOf(this.db.pool, this.db.name, () =>
      this.db.tx(async (c) => {
        await c.query("INSERT INTO kv (ns, key, value) VALUES ('salud', 'sonda', repeat('x', $1)) ON CONFLICT (ns, key) DO UPDATE SET value = excluded.value", [
          PROBE_BYTES,
        ]);
        await c.query("DELETE FROM kv WHERE ns = 'salud' AND key = 'sonda'");
      }),
    );
  }

  async close(): Promise<void> {
    await this.db.close();
  }
}
