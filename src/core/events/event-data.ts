import { iso } from '../time/clock.js';
import type { MessageStatusEvent } from './events.js';
import type { MensajeEstadoRow } from '../ports/model.js';

/**
 * The `message.status` data's fields, in order: each is the message row's
 * column of that name, but `estado_anterior` and `fecha`, which the step
 * gives. The one list both builders follow: `messageStatusData` here and
 * the SQL a store renders to build it in the statement that makes the step
 * (store/postgres/transitions.ts).
 */
export const MESSAGE_STATUS_FIELDS = [
  'msg_id',
  'celular_id',
  'cliente_id',
  'destinatario',
  'tipo',
  'estado',
  'estado_anterior',
  'gateway_msg_id',
  'error',
  'error_clase',
  'fecha',
] as const satisfies ReadonlyArray<keyof MessageStatusEvent>;

export type MessageStatusField = (typeof MESSAGE_STATUS_FIELDS)[number];
/** Every field of the event is in the list (a field added to the type and not to the list fails to compile). */
const complete: Exclude<keyof MessageStatusEvent, MessageStatusField> extends never ? true : false = true;
void complete;

/**
 * The `message.status` data of docs/design.md §6 for one change of a message; one builder for the bus and the journal.
 * Written out field by field in the list's order (the key order is what the journal stores; a test holds them equal).
 */
export function messageStatusData(m: MensajeEstadoRow, estadoAnterior: string | null, at: number): MessageStatusEvent {
  return {
    msg_id: m.msg_id,
    celular_id: m.celular_id,
    cliente_id: m.cliente_id,
    destinatario: m.destinatario,
    tipo: m.tipo,
    estado: m.estado,
    estado_anterior: estadoAnterior,
    gateway_msg_id: m.gateway_msg_id,
    error: m.error,
    error_clase: m.error_clase,
    fecha: iso(at),
  };
}
