import type {
  EventBus,
  LineBrakeEvent,
  LineResumeEvent,
  MessageStatusEvent,
  SessionHolderEvent,
  SessionStatusEvent,
  WebhookAttemptEvent,
} from '../core/events/events.js';

/**
 * What an operator should see in the log without asking for debug
 * (docs/logs.md, "Events"): a line's session changing state or node, its health
 * crossing a threshold (braked, or an alert) and its resume, a message ending
 * in error, a webhook receiver that keeps failing (and recovers), and a
 * webhook delivery given up. Each is one line with a stable `msg` and an
 * `event` name; the fields are ids and reasons, never a message's text or a
 * recipient's number (personal data), never a webhook URL (it may carry a
 * token).
 */

/** A client's webhook receiver counts as failing after this many failed attempts in a row. */
export const WEBHOOK_FAILING_AFTER = 3;
/** Clients whose receivers are failing that are tracked at once; past it the oldest streak is forgotten. */
export const MAX_TRACKED_CLIENTS = 1000;

/** The names in the `event` field of these lines. */
export const LOG_EVENTS = {
  /** Not from the bus: a request refused before routing (request-log.ts). */
  requestRefused: 'request.refused',
  lineStatus: 'line.status',
  lineHolder: 'line.holder',
  lineBraked: 'line.braked',
  lineResumed: 'line.resumed',
  messageError: 'message.error',
  webhookFailing: 'webhook.failing',
  webhookRecovered: 'webhook.recovered',
  webhookGivenUp: 'webhook.given_up',
} as const;

export interface EventLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

/** A phone number as text may hold it: 7 or more digits, single spaces allowed between them, maybe a leading `+`. */
export const NUMBER_RUN = /\+?\d(?: ?\d){6,}/g;

/** Longest reason logged; gateways' reasons are short, a receiver's error could be anything. */
const MAX_REASON = 300;

/**
 * A reason as logged: runs of 7 or more digits, single spaces allowed between
 * them (a gateway may name the recipient, as a number or in a JID), become
 * `[number]`; an address such as 10.0.0.12:8080 stays. Cut to MAX_REASON characters.
 */
export function loggedReason(reason: string | null): string | null {
  if (reason === null) return null;
  const masked = reason.replace(NUMBER_RUN, '[number]');
  return masked.length > MAX_REASON ? `${masked.slice(0, MAX_REASON - 1)}…` : masked;
}

/** Subscribes the log lines to the bus; returns the unsubscribe. */
export function logBusEvents(bus: EventBus, log: EventLogger, opts: { failingAfter?: number; maxTracked?: number } = {}): () => void {
  const failingAfter = opts.failingAfter ?? WEBHOOK_FAILING_AFTER;
  const maxTracked = opts.maxTracked ?? MAX_TRACKED_CLIENTS;
  /** Failed attempts in a row per client (only clients now failing), and whether the warning was given. */
  const streaks = new Map<number, { failures: number; warned: boolean }>();

  const onSession = (e: SessionStatusEvent) => {
    log.info(
      {
        event: LOG_EVENTS.lineStatus,
        celular_id: e.celular_id,
        cliente_id: e.cliente_id,
        instancia: e.gateway_instancia,
        from: e.status_anterior,
        to: e.status,
        estado: e.estado,
      },
      'line status changed',
    );
  };

  const onHolder = (e: SessionHolderEvent) => {
    log.info(
      { event: LOG_EVENTS.lineHolder, celular_id: e.celular_id, instancia: e.gateway_instancia, from: e.nodo_anterior, to: e.nodo, reason: e.motivo },
      "line's engine session changed hands",
    );
  };

  const onBrake = (e: LineBrakeEvent) => {
    log.warn(
      { event: LOG_EVENTS.lineBraked, celular_id: e.celular_id, cliente_id: e.cliente_id, braked: e.frenado, causa: e.causa, reason: loggedReason(e.motivo) },
      e.frenado ? 'line braked' : 'line health alert',
    );
  };

  const onResume = (e: LineResumeEvent) => {
    log.info({ event: LOG_EVENTS.lineResumed, celular_id: e.celular_id, cliente_id: e.cliente_id, by: e.por }, 'line resumed');
  };

  const onMessage = (e: MessageStatusEvent) => {
    if (e.estado !== 'error' || e.estado_anterior === 'error') return;
    log.info(
      {
        event: LOG_EVENTS.messageError,
        msg_id: e.msg_id,
        celular_id: e.celular_id,
        cliente_id: e.cliente_id,
        tipo: e.tipo,
        from: e.estado_anterior,
        error: loggedReason(e.error),
      },
      'message ended in error',
    );
  };

  const onAttempt = (a: WebhookAttemptEvent) => {
    const error = loggedReason(a.error);
    if (a.estado === 'entregado') {
      const s = streaks.get(a.cliente_id);
      if (!s) return;
      streaks.delete(a.cliente_id);
      if (s.warned) log.info({ event: LOG_EVENTS.webhookRecovered, cliente_id: a.cliente_id, failures: s.failures }, 'webhook receiver delivering again');
      return;
    }
    let s = streaks.get(a.cliente_id);
    if (!s) {
      // Bounded: the oldest streak goes first (its recovery is then not reported).
      if (streaks.size >= maxTracked) streaks.delete(streaks.keys().next().value!);
      s = { failures: 0, warned: false };
      streaks.set(a.cliente_id, s);
    }
    s.failures += 1;
    if (!s.warned && s.failures >= failingAfter) {
      s.warned = true;
      log.warn(
        { event: LOG_EVENTS.webhookFailing, cliente_id: a.cliente_id, failures: s.failures, evento: a.evento, status: a.status, error },
        'webhook receiver failing',
      );
    }
    if (a.estado === 'fallido') {
      log.warn(
        { event: LOG_EVENTS.webhookGivenUp, cliente_id: a.cliente_id, evento: a.evento, intentos: a.intentos, status: a.status, error },
        'webhook delivery given up',
      );
    }
  };

  const offs = [
    bus.subscribe('session.status', onSession),
    bus.subscribe('session.holder', onHolder),
    bus.subscribe('celular.frenado', onBrake),
    bus.subscribe('celular.reanudado', onResume),
    bus.subscribe('message.status', onMessage),
    bus.subscribe('webhook.attempt', onAttempt),
  ];
  return () => {
    for (const off of offs) off();
  };
}
