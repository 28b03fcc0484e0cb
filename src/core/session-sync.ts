import { applySessionStatus } from './celulares.js';
import { iso } from './clock.js';
import type { Core } from './context.js';
import { publishMessageStatus } from './message-events.js';
import type { GatewayEvent } from './ports.js';

/**
 * Turns what the gateway reports into state and bus events: session changes
 * update the celular (DESIGN §6), receipts move messages to `entregado` and
 * `leido`, inbound messages become `messages.received`.
 * Events are handled one at a time, in the order the gateway gave them.
 */
export function syncGatewayEvents(core: Core, onError: (err: unknown) => void): { idle(): Promise<void> } {
  let chain: Promise<void> = Promise.resolve();
  const handle = async (e: GatewayEvent): Promise<void> => {
    if (e.type === 'receipt') {
      const r = await core.store.receipt(e.gatewayMsgId, e.estado, e.at);
      if (r) publishMessageStatus(core, r.after, r.before.estado);
      return;
    }
    const celular = await core.store.getCelularByInstancia(e.instancia);
    if (!celular) return; // an instance whose line was deleted
    if (e.type === 'session') {
      await applySessionStatus(core, celular.id, e.status);
      return;
    }
    const data = {
      celular_id: celular.id,
      cliente_id: celular.cliente_id,
      de: e.de,
      tipo: e.tipo,
      texto: e.texto,
      media: e.media,
      gateway_msg_id: e.gatewayMsgId,
      fecha: iso(e.at),
    };
    // Journaled before anything else: the first durable record of an incoming message is its event.
    await core.store.journalEvent({ evento: 'messages.received', cliente_id: celular.cliente_id, celular_id: celular.id, data, fecha: e.at });
    core.bus.publish('messages.received', data);
  };
  core.gateway.onEvent((e) => {
    chain = chain.then(() => handle(e)).catch(onError);
  });
  return { idle: () => chain };
}
