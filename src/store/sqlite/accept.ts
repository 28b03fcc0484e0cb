import type Database from 'better-sqlite3';
import { grouped, immediate, ph, stmt } from './statements.js';
import { balanceSet } from '../recipe-sql.js';
import * as recipe from '../../core/billing/recipes.js';
import { messageStatusData } from '../../core/events/event-data.js';
import { acceptVerdict } from '../../core/billing/ledger.js';
import type { AcceptItem } from '../../core/sending/accept-turn.js';
import type { AcceptedMensaje, AcceptResult, MessagesOwn } from '../../core/ports/messages.js';
import { bindKey, keyTaken } from './idempotency.js';
import { acceptedRow } from '../accepted-row.js';
import { enterPending, keepSlot, pruneSlots } from './state-paths.js';
import { capHit, journal, writeMovement } from './messages.js';

/**
 * A send's acceptance in SQLite: the same prepared statements for each send
 * of a batch, in order, in one IMMEDIATE transaction, so each sees the
 * balances, queue lengths and slots the ones before it left. Core decides
 * (`acceptVerdict`, `recipe.charge`) before anything is written, so a
 * refusal writes nothing. acceptMensaje hands each send to the group commit
 * (statements.ts `grouped`): the sends of one turn of the event loop are one
 * batch, one transaction.
 */
type DB = Database.Database;

function acceptOne(db: DB, { m, opts, now }: AcceptItem): AcceptResult {
  // A key bound already is answered as a repeat, whatever else would refuse this send now.
  if (opts.idem && keyTaken(db, m.cliente_id, opts.idem.clave, now)) return { ok: false, reason: 'idempotencia' };
  // The line and its client in one statement: no row when either is missing.
  const cel = stmt(
    db,
    'SELECT l.saldo_actual, l.pendientes, c.saldo_global FROM celulares l JOIN clientes c ON c.id = l.cliente_id WHERE l.id = ? AND l.cliente_id = ?',
  ).get(m.celular_id, m.cliente_id) as { saldo_actual: number; pendientes: number; saldo_global: number } | undefined;
  if (!cel) return { ok: false, reason: 'celular' };
  const verdict = acceptVerdict(
    {
      saldoCelular: cel.saldo_actual,
      saldoGlobal: cel.saldo_global,
      pendientes: cel.pendientes,
      capHit: opts.slot ? capHit(db, m.celular_id, opts.slot, now) : null,
    },
    { charge: opts.charge, queued: m.modo === 'cola', maxPending: opts.maxPending },
  );
  if (!verdict.ok) return verdict;
  const queued = recipe.queueDelta(m);
  if (queued) stmt(db, 'UPDATE celulares SET pendientes = pendientes + ? WHERE id = ?').run(queued, m.celular_id);
  const cargo = verdict.cargo;
  const paid = recipe.charge(m, cargo, { saldoCelular: cel.saldo_actual, saldoGlobal: cel.saldo_global });
  if (paid.write) {
    stmt(db, balanceSet(paid.write.balance, ph)).run(paid.write.saldo, paid.write.balance.id);
    writeMovement(db, paid.write.movement, now);
  }
  const mensaje = acceptedRow(m, cargo, opts.slot?.holdUntil ?? null, now);
  stmt(
    db,
    `INSERT INTO mensajes (msg_id, cliente_id, celular_id, destinatario, tipo, modo, estado, texto, media, cobrado, cargo,
       payload, intentos, proximo_intento_at, expira_at, cupo_at, created_at, reintento_de, vigencia_hasta, enviar_en)
     VALUES (?, ?, ?, ?, ?, ?, 'pendiente', ?, ?, ?, ?, ?, 0, ?, ?, ?, ?, ?, ?, ?)`,
  ).run(
    mensaje.msg_id,
    mensaje.cliente_id,
    mensaje.celular_id,
    mensaje.destinatario,
    mensaje.tipo,
    mensaje.modo,
    mensaje.texto,
    mensaje.media,
    mensaje.cobrado,
    mensaje.cargo,
    mensaje.payload,
    mensaje.proximo_intento_at,
    mensaje.expira_at,
    mensaje.cupo_at,
    now,
    mensaje.reintento_de,
    mensaje.vigencia_hasta,
    mensaje.enviar_en,
  );
  enterPending(db, mensaje);
  if (mensaje.cupo_at !== null) {
    pruneSlots(db, mensaje.celular_id, now);
    keepSlot(db, mensaje);
  }
  journal(db, { evento: 'message.status', cliente_id: m.cliente_id, celular_id: m.celular_id, data: { ...messageStatusData(mensaje, null, now) }, fecha: now });
  const accepted: AcceptedMensaje = { ok: true, cargo, saldo_celular: paid.saldoCelular, saldo_global: paid.saldoGlobal, mensaje };
  if (opts.idem) bindKey(db, opts.idem, accepted, now);
  return accepted;
}

/** A batch of sends, each decided in order against what the ones before it wrote, in one IMMEDIATE transaction. */
export function acceptAll(db: DB, items: AcceptItem[]): AcceptResult[] {
  return immediate(db, () => items.map((item) => acceptOne(db, item)));
}

/** MessagesStore.acceptMensaje: a batch of one, committed with the writes of the same turn of the event loop. */
export function accept(db: DB): Pick<MessagesOwn, 'acceptMensaje'> {
  return {
    acceptMensaje: (m, opts, now) => grouped(db, () => acceptAll(db, [{ m, opts, now }])[0]!),
  };
}
