import { iso } from './clock.js';
import type { Core } from './context.js';
import type { MensajeRow } from './ports.js';

/** Publishes `message.status` (DESIGN §6) for one change of a message's estado. */
export function publishMessageStatus(core: Core, after: MensajeRow, estadoAnterior: string | null): void {
  core.bus.publish('message.status', {
    msg_id: after.msg_id,
    celular_id: after.celular_id,
    cliente_id: after.cliente_id,
    destinatario: after.destinatario,
    tipo: after.tipo,
    estado: after.estado,
    estado_anterior: estadoAnterior,
    gateway_msg_id: after.gateway_msg_id,
    error: after.error,
    fecha: iso(core.clock.now()),
  });
}
