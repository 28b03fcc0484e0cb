import type { EventBus } from '../../core/events/events.js';
import type { Metrics } from './metrics.js';

/**
 * Counts what the core publishes on the bus: sends accepted (a message.status
 * with no estado_anterior), sends finished (leaving pendiente: enviado, or
 * error), receipts (a sent message moving on), incoming messages, session
 * changes, engine sessions moved and webhook attempts. Returns the unsubscribe.
 */
export function countBusEvents(bus: EventBus, m: Metrics): () => void {
  const off = [
    bus.subscribe('message.status', (e) => {
      if (e.estado_anterior === null) {
        m.sendsAccepted.inc({ tipo: e.tipo, modo: e.modo });
        return;
      }
      if (e.estado_anterior === 'pendiente') {
        // A receipt parked before the send was recorded lands with it (pendiente -> entregado, leido, or
        // error with the gateway's id, which only a recorded send sets): the gateway took it, then the receipt.
        const sent = e.estado !== 'error' || e.gateway_msg_id !== null;
        m.sendsFinished.inc({ tipo: e.tipo, modo: e.modo, estado: sent ? 'enviado' : 'error' });
        if (e.estado !== 'enviado' && sent) m.receipts.inc({ tipo: e.tipo, modo: e.modo, estado: e.estado });
        return;
      }
      m.receipts.inc({ tipo: e.tipo, modo: e.modo, estado: e.estado });
    }),
    bus.subscribe('messages.received', (e) => m.received.inc({ tipo: m.inboundTipo(e.tipo) })),
    bus.subscribe('session.status', (e) => m.sessionChanges.inc({ status: e.status })),
    bus.subscribe('session.holder', (e) => m.engineMoves.inc({ reason: e.motivo })),
    bus.subscribe('celular.frenado', (e) => m.lineBrakes.inc({ causa: e.causa, frenado: String(e.frenado) })),
    bus.subscribe('celular.reanudado', () => m.lineResumes.inc()),
    bus.subscribe('webhook.attempt', (e) => {
      m.webhookAttempts.inc({ estado: e.estado });
      m.webhookAttemptDuration.observe(e.duracion_ms / 1000);
      if (e.estado === 'entregado') m.webhookDeliveryLatency.observe(e.edad_ms / 1000);
    }),
  ];
  return () => {
    for (const o of off) o();
  };
}
