import { applySessionStatus } from './celulares.js';
import { noteFallido } from './line-brake.js';
import { iso } from '../time/clock.js';
import { replaceIllFormed } from '../sending/exact-text.js';
import type { Core } from '../context.js';
import { publishMessageStatus } from '../events/message-events.js';
import { newRecibido } from '../history/recibidos.js';
import type { GatewayEvent } from '../ports/gateway.js';
import type { SessionStatus } from '../ports/model.js';

/**
 * Turns what the gateway reports into state and events: session changes
 * update the celular (docs/design.md §6) with the gateway's state asked right
 * after, in the order observed (celulares.ts applySessionStatus); receipts,
 * for the reporting instance's line only, move messages to `entregado`,
 * `leido` or `error` (a receipt that beats the send's own record is parked
 * by the store), inbound messages become an inbox row (§10) and
 * `messages.received`, once per gateway key. Events are handled one at a time, in the order the gateway
 * gave them, but receipts: those of one gateway id in that order, those of different ids at once (they
 * change different messages; a PostgreSQL store applies those arriving together in one statement,
 * D-79). Each listener call resolves when its event is durable, so an
 * HTTP-fed adapter answers its gateway only then (a crash before that makes
 * the gateway deliver again, and the key drops the repeat).
 */
export function syncGatewayEvents(
  core: Pick<Core, 'store' | 'gateway' | 'clock' | 'bus' | 'signals' | 'lines' | 'config'>,
  onError: (err: unknown) => void,
): { idle(): Promise<void> } {
  let chain: Promise<void> = Promise.resolve();
  const handle = async (raw: GatewayEvent): Promise<void> => {
    // Third parties' text follows the exact-text rule for gateway text (core/sending/exact-text.ts): kept, never stored ill-formed.
    const e = replaceIllFormed(raw);
    const celular = await core.lines.byInstancia(e.instancia);
    if (!celular) return; // an instance whose line was deleted
    if (e.type === 'receipt') {
      // Bound to the instance whose secret authenticated the call: it changes only that line's messages.
      const r = await core.store.receipt(celular.id, e.gatewayMsgId, e.estado, e.at, e.error);
      if (r && r !== 'parked') {
        publishMessageStatus(core, r.after, r.before.estado);
        await noteFallido(core, r.after, r.before.estado).catch(onError);
      }
      return;
    }
    if (e.type === 'session') {
      // The gateway posts a line's statuses without waiting (connecting, then open), and they may
      // reach different nodes in any order: the event says something changed, the gateway's
      // answer now says what is true, and the later observation wins (applySessionStatus).
      const at = core.clock.now();
      // Asked without acting on the session: a repair's own events must not start another repair.
      const now = await core.gateway.status(e.instancia, { act: false }).catch(() => null);
      await applySessionStatus(core, celular.id, now === null ? e.status : reconcileStatus(e.status, now), at);
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
    // The first durable record of an incoming message is its inbox row and its event, together.
    const now = core.clock.now();
    const fresh = await core.store.journalInbound(
      { evento: 'messages.received', cliente_id: celular.cliente_id, celular_id: celular.id, data, fecha: e.at },
      e.dedupeKey ?? null,
      now,
      newRecibido(celular, e, now),
    );
    if (fresh) core.bus.publish('messages.received', data);
  };
  /** Receipts in flight, one lane per gateway id of an instance: the last of each. */
  const lanes = new Map<string, Promise<void>>();
  core.gateway.onEvent((e) => {
    if (e.type === 'receipt') {
      const key = `${e.instancia}\n${e.gatewayMsgId}`;
      const done = (lanes.get(key) ?? Promise.resolve()).then(() => handle(e));
      const tail = done.catch(onError);
      lanes.set(key, tail);
      void tail.then(() => {
        if (lanes.get(key) === tail) lanes.delete(key);
      });
      return done;
    }
    const done = chain.then(() => handle(e));
    chain = done.catch(onError);
    return done;
  });
  return { idle: () => Promise.all([chain, ...lanes.values()]).then(() => {}) };
}

/** Statuses that mean the same for the line: the event's is the more precise (a QR showing, a logout's reason). */
const SAME_STATE: Record<SessionStatus, string> = {
  connected: 'linked',
  connecting: 'starting',
  need_scan: 'starting',
  disconnected: 'down',
  logged_out: 'down',
  unknown: 'unknown',
};

/**
 * The status to record for a session event, given what the gateway answers
 * when asked right after: the event's own when both say the same state (it
 * knows why: a QR, a logout), the answer's when the event is overtaken.
 */
export function reconcileStatus(event: SessionStatus, now: SessionStatus): SessionStatus {
  if (now === 'unknown' || SAME_STATE[event] === SAME_STATE[now]) return event;
  return now;
}
