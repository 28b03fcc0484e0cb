import type { ReceiptEstado, SessionStatus, Tipo } from './model.js';

export interface QrResult {
  status: SessionStatus;
  /** QR content to render; empty when there is nothing to scan (already connected). */
  qr: string;
}

export interface PairingResult {
  status: SessionStatus;
  /** The code the person types on the phone (Linked devices > Link with phone number); empty when already connected. */
  code: string;
}

/** What the core hands a gateway to send. */
export interface OutboundMessage {
  /** Our msg_id: the idempotency key, so a retry after a crash is not a second send where the gateway supports it. */
  msgId: string;
  tipo: Tipo;
  /** Digits with country code, no `+`. */
  destinatario: string;
  texto?: string;
  url?: string;
  /** Local file with the decoded bytes (base64 sends), readable for the whole call. */
  filePath?: string;
  mime?: string;
  filename?: string;
  caption?: string;
  /** Audio as a voice note. */
  ptt?: boolean;
  previewUrl?: boolean;
}

export type GatewayEvent =
  | { type: 'session'; instancia: string; status: SessionStatus; at: number }
  | {
      type: 'receipt';
      instancia: string;
      gatewayMsgId: string;
      /** `error`: the network reports the message failed after accepting it. */
      estado: ReceiptEstado;
      at: number;
      error?: string;
    }
  | {
      type: 'inbound';
      instancia: string;
      /** Sender: digits with country code, or the gateway's contact id (e.g. `...@lid`) when it hides the number. */
      de: string;
      tipo: string;
      texto: string | null;
      media: Record<string, unknown> | null;
      gatewayMsgId: string;
      at: number;
      /** Stable key of this message at the gateway; a second delivery with the same key is dropped. */
      dedupeKey?: string;
    };

/**
 * How a gateway failure is treated: `permanent` ends the message in `error`
 * (not on the network, bad media; 422 in direct mode); `rate_limited` pauses
 * the line and tries again after `retryAfterMs`; `transient` (timeout,
 * gateway down, session closed) is retried with backoff in queue mode and
 * answered 502 in direct mode.
 */
export type FailureKind = 'permanent' | 'rate_limited' | 'transient';

/** A gateway failure, classified so callers know whether a retry can help. */
export class GatewayFailure extends Error {
  constructor(
    message: string,
    readonly kind: FailureKind,
    readonly retryAfterMs?: number,
    /**
     * The call may have reached the network before it failed (no answer in
     * time, a connection lost mid-call, a success without a message id): the
     * message may have gone. False when the gateway answered a refusal or
     * was never reached.
     */
    readonly mayHaveSent = false,
  ) {
    super(message);
    this.name = 'GatewayFailure';
  }
  get permanent(): boolean {
    return this.kind === 'permanent';
  }
}

/** One HTTP call a gateway made to pasarela's inbound endpoint (`/gateway/<name>/<instancia>`). */
export interface InboundCall {
  instancia: string;
  /** Path after the instance (Evolution's "webhook by events" appends `/event-name`); '' otherwise. */
  subpath: string;
  headers: Record<string, string | string[] | undefined>;
  rawBody: Buffer;
}

/** An inbound call the adapter refuses: `status` 401 (not authenticated) or 400 (not understood). */
export class InboundRefused extends Error {
  constructor(
    readonly status: 400 | 401,
    message: string,
  ) {
    super(message);
    this.name = 'InboundRefused';
  }
}

export interface GatewayCapabilities {
  /** Message kinds this gateway cannot send, each with the reason given to the caller. */
  unsupported: Partial<Record<Tipo, string>>;
}

/** The linked phone as the gateway knows it: its WhatsApp name and number, each null when the gateway does not say. */
export interface SessionProfile {
  nombre: string | null;
  /** Digits with country code. */
  numero: string | null;
}

export interface InstanceSpec {
  /** The line's own number (digits). */
  numero: string;
  /** The celular's gateway token, for gateways that take a per-instance token (only known at creation). */
  token?: string;
}

/**
 * A messaging gateway (docs/design.md §2). Adapters translate; they hold no business
 * rules (queue, dedupe, caps and billing are the core's). Every method may
 * throw GatewayFailure; `transient` when the gateway cannot be reached.
 */
export interface Gateway {
  readonly name: string;
  /** True for the in-process simulator: nothing reaches a real network. */
  readonly simulated: boolean;
  readonly capabilities: GatewayCapabilities;
  /** Creates the instance, or adopts an existing one with that name, and points its events at pasarela. Idempotent. */
  ensureInstance(instancia: string, spec: InstanceSpec): Promise<void>;
  /**
   * Returns the session's QR (creating the instance and starting the session if needed).
   * `repair`: the health pass restarting a linked session it found stopped; a gateway that
   * stopped it on purpose (another client took the session over) leaves it and answers its status.
   */
  connect(instancia: string, numero: string, opts?: { repair?: boolean }): Promise<QrResult>;
  /** Asks for a pairing code for `numero`, the alternative to scanning a QR. */
  pairingCode(instancia: string, numero: string): Promise<PairingResult>;
  /**
   * The session's status, checked as far as the gateway allows: where a
   * gateway may report a dead session as open, the adapter verifies before
   * answering `connected`. `act: false` (a session event's re-read) asks
   * without anything that acts on the session: no repair started from here
   * (Evolution's restart of a socket its presence probe finds dead), so the
   * events a repair posts cannot start another one.
   */
  status(instancia: string, opts?: { act?: boolean }): Promise<SessionStatus>;
  /**
   * Several sessions' statuses in one call, each as `status` would answer it,
   * in the order asked: where the gateway can tell them so (the health pass
   * asks a page of lines at once). Absent: one `status` call each.
   */
  statuses?(instancias: string[]): Promise<SessionStatus[]>;
  /** Ends the session's link (a new scan is needed to link again). Idempotent: no session is no error. */
  logout(instancia: string): Promise<void>;
  /**
   * Restarts the session's connection without unlinking it; answers the
   * status right after (`connecting` while it comes back, `need_scan` when
   * it had no link, `logged_out` when the gateway has no session to restart).
   * What follows arrives as session events.
   */
  restart(instancia: string): Promise<SessionStatus>;
  /** The linked phone's name and number; null when the session holds no link or the gateway cannot tell. */
  profile(instancia: string): Promise<SessionProfile | null>;
  /** Removes the instance; used when a celular is deleted. Idempotent. */
  deleteInstance(instancia: string): Promise<void>;
  send(instancia: string, msg: OutboundMessage): Promise<{ gatewayMsgId: string }>;
  /**
   * Whether the network took the message sent as `msgId`, for a send whose
   * answer was lost (a crash mid-send): its id and when, or null when it never
   * went. Absent where the gateway cannot tell (it knows nothing of our ids).
   */
  sentMessage?(instancia: string, msgId: string): Promise<{ gatewayMsgId: string; at: number } | null>;
  /**
   * Events the gateway reports. A listener's promise resolves once the event
   * is durable; HTTP-fed adapters answer the gateway only after that.
   */
  onEvent(listener: (event: GatewayEvent) => Promise<void> | void): void;
  /**
   * Deployments spread over several gateway servers (gateways/router.ts): the
   * adapter of one server, for a call about a line whose row no longer says
   * where its instance is (deleted) or is about to say otherwise (moved).
   */
  onServer?(servidorId: number): Promise<Gateway>;
  /** HTTP-fed gateways: authenticates and handles one call to the inbound endpoint. Absent when the gateway is in-process. */
  handleInbound?(call: InboundCall): Promise<{ eventos: number }>;
  start(): Promise<void>;
  close(): Promise<void>;
}
