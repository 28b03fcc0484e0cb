import { iso } from './clock.js';
import type { MessageStatusEvent } from './events.js';
import type { MensajeRow } from './ports/model.js';

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

/** The `message.status` data of docs/design.md §6 for one change of a message; one builder for the bus and the journal. */
export function messageStatusData(m: MensajeRow, estadoAnterior: string | null, at: number): MessageStatusEvent {
  const step = { estado_anterior: estadoAnterior, fecha: iso(at) };
  return Object.fromEntries(MESSAGE_STATUS_FIELDS.map((f) => [f, f === 'estado_anterior' || f === 'fecha' ? step[f] : m[f]])) as unknown as MessageStatusEvent;
}
