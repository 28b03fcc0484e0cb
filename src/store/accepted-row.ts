import type { AcceptedMensaje, NewMensaje } from '../core/ports/messages.js';
import type { MensajeRow } from '../core/ports/model.js';

/**
 * The row an accepted message is inserted as and answered with, on both
 * stores: every column in the table's order, as `SELECT *` reads it back
 * (SQLite binds it by position; a contract test compares the two), so the
 * insert needs no `RETURNING *` (D-145). Columns left to their defaults are
 * null or 0. `cupoAt`: the caps slot's hold, when the send took one.
 */
export function acceptedRow(m: NewMensaje, cargo: AcceptedMensaje['cargo'], cupoAt: number | null, now: number): MensajeRow {
  return {
    msg_id: m.msg_id,
    cliente_id: m.cliente_id,
    celular_id: m.celular_id,
    destinatario: m.destinatario,
    tipo: m.tipo,
    modo: m.modo,
    estado: 'pendiente',
    texto: m.texto ?? null,
    media: m.media ? JSON.stringify(m.media) : null,
    gateway_msg_id: null,
    error: null,
    cobrado: cargo ? 1 : 0,
    created_at: now,
    enviado_at: null,
    entregado_at: null,
    leido_at: null,
    payload: JSON.stringify(m.payload),
    cargo,
    intentos: 0,
    proximo_intento_at: m.enviar_en ?? now,
    lease_until: null,
    expira_at: m.expira_at ?? null,
    cupo_at: cupoAt,
    error_clase: null,
    nodo: null,
    reclamado_at: null,
    error_at: null,
    reintento_de: m.reintento_de ?? null,
    vigencia_hasta: m.vigencia_hasta ?? null,
    enviar_en: m.enviar_en ?? null,
  } as MensajeRow;
}
