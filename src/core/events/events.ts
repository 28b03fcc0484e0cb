import { EventEmitter } from 'node:events';

/**
 * The internal event bus. The core publishes what happened (docs/design.md §6 names
 * and `data` shapes); the webhook dispatcher subscribes. Listeners run
 * synchronously and must not throw: a failing listener is reported through
 * `onListenerError` and never breaks the publisher.
 */
export interface SessionStatusEvent {
  celular_id: number;
  cliente_id: number;
  gateway_instancia: string;
  status: string;
  status_anterior: string | null;
  estado: string;
  fecha: string;
}

export interface MessageStatusEvent {
  msg_id: string;
  celular_id: number;
  cliente_id: number;
  destinatario: string;
  tipo: string;
  estado: string;
  estado_anterior: string | null;
  gateway_msg_id: string | null;
  error: string | null;
  /** With estado error: its class (core/sending/failure-class.ts); null otherwise. */
  error_clase: string | null;
  fecha: string;
}

/**
 * What the bus carries for a `message.status`: its data plus the message's
 * modo, for metrics. Webhooks deliver the journal's copy (event-data.ts), which keeps §6's shape.
 */
export interface MessageStatusBusEvent extends MessageStatusEvent {
  modo: string;
}

export interface MessagesReceivedEvent {
  celular_id: number;
  cliente_id: number;
  de: string;
  tipo: string;
  texto: string | null;
  media: Record<string, unknown> | null;
  gateway_msg_id: string;
  fecha: string;
}

/**
 * One webhook attempt ended (internal: never delivered to a receiver). What
 * operators watch: metrics count them, logs report a receiver that keeps failing.
 */
export interface WebhookAttemptEvent {
  cliente_id: number;
  /** The delivered event's kind (message.status, ..., webhook.test). */
  evento: string;
  /** What the delivery became: entregado, pendiente (retried later) or fallido (given up). */
  estado: 'entregado' | 'pendiente' | 'fallido';
  /** The receiver's HTTP status; null when none came (refused, timed out). */
  status: number | null;
  error: string | null;
  duracion_ms: number;
  /** Attempts made so far, this one included. */
  intentos: number;
  /** The delivery's age at this attempt: now minus when it was first due. */
  edad_ms: number;
}

/**
 * A line's engine session changed hands (`--gateway baileys`, D-137),
 * published by the node that took or gave it. Internal, like
 * webhook.attempt: counted, logged and audited, never journaled for a
 * client's webhooks or stream (its integration acts on session.status,
 * which a move already shows when the socket drops and comes back).
 */
export interface SessionHolderEvent {
  gateway_instancia: string;
  /** null: the line's celular row was not known to the keeper yet (the audit looks it up by its instance). */
  celular_id: number | null;
  /** Node ids; null: free. */
  nodo_anterior: string | null;
  nodo: string | null;
  /** free, gone (taken from a silent node), balance or stop (given away). */
  motivo: 'free' | 'gone' | 'balance' | 'stop';
  fecha: string;
}

/** `celular.frenado`: a line crossed a health threshold (core/accounts/line-brake.ts); `frenado` says whether its queue now waits. */
export interface LineBrakeEvent {
  celular_id: number;
  cliente_id: number;
  numero: string;
  /** true: the line's brake is on and its queue waits for a resume; false: an alert only. */
  frenado: boolean;
  /** fallos, rechazados or sin_entregar. */
  causa: string;
  motivo: string;
  salidos: number;
  fallos: number;
  rechazados: number;
  enviados: number;
  sin_entregar: number;
  fecha: string;
}

/** `celular.reanudado`: a braked line was resumed; `por` is who did it (the audit's actor). */
export interface LineResumeEvent {
  celular_id: number;
  cliente_id: number;
  numero: string;
  motivo_anterior: string | null;
  por: string;
  fecha: string;
}

export interface BusEvents {
  'webhook.attempt': WebhookAttemptEvent;
  'session.holder': SessionHolderEvent;
  'session.status': SessionStatusEvent;
  'message.status': MessageStatusBusEvent;
  'messages.received': MessagesReceivedEvent;
  'celular.frenado': LineBrakeEvent;
  'celular.reanudado': LineResumeEvent;
}

export type BusEventName = keyof BusEvents;

export class EventBus {
  private readonly emitter = new EventEmitter();
  constructor(private readonly onListenerError: (err: unknown, event: BusEventName) => void = () => {}) {
    this.emitter.setMaxListeners(50);
  }

  publish<K extends BusEventName>(name: K, data: BusEvents[K]): void {
    for (const listener of this.emitter.listeners(name)) {
      try {
        (listener as (d: BusEvents[K]) => void)(data);
      } catch (err) {
        this.onListenerError(err, name);
      }
    }
  }

  subscribe<K extends BusEventName>(name: K, listener: (data: BusEvents[K]) => void): () => void {
    this.emitter.on(name, listener);
    return () => this.emitter.off(name, listener);
  }
}
