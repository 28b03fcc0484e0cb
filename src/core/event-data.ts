import { iso } from './clock.js';
import type { MessageStatusEvent } from './events.js';
import type { MensajeRow } from './ports/model.js';

/** The `message.status` data of docs/design.md §6 for one change of a message; one builder for the bus and the journal. */
export function messageStatusData(m: MensajeRow, estadoAnterior: string | null, at: number): MessageStatusEvent {
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
