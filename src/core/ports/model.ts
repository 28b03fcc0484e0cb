/**
 * The rows and small unions the ports share: clients, lines, messages,
 * webhook configurations and deliveries, gateway servers, journal events.
 * What one port alone takes or answers lives in that port's file.
 */

export type Plan = 'medido' | 'ilimitado';

export type ClienteEstado = 'activo' | 'suspendido' | 'baja';

export type CelularEstado = 'activo' | 'suspendido' | 'desconectado';

export const CELULAR_ESTADOS: readonly CelularEstado[] = ['activo', 'suspendido', 'desconectado'];

/**
 * A line's session as pasarela names it, whatever the gateway calls it:
 * `need_scan` (a QR or pairing code is waiting), `connecting` (starting or
 * reconnecting), `connected`, `logged_out` (no session: the phone removed the
 * device, or the instance is gone), `disconnected` (a session exists but is
 * stopped or failed), `unknown` (never asked).
 */
export type SessionStatus = 'need_scan' | 'connecting' | 'connected' | 'logged_out' | 'disconnected' | 'unknown';

export const SESSION_STATUSES: readonly SessionStatus[] = ['need_scan', 'connecting', 'connected', 'logged_out', 'disconnected', 'unknown'];

export interface ClienteRow {
  id: number;
  nombre: string;
  email: string;
  estado: ClienteEstado;
  plan: Plan;
  max_celulares: number | null;
  saldo_global: number;
  key_hash: string;
  created_at: number;
  updated_at: number;
}

export interface CelularRow {
  id: number;
  cliente_id: number;
  numero: string;
  nombre_interno: string | null;
  estado: CelularEstado;
  saldo_actual: number;
  max_envios_por_minuto: number;
  max_envios_por_hora: number;
  max_envios_por_dia: number | null;
  hora_inicio_permitido: string;
  hora_fin_permitido: string;
  gateway_instancia: string | null;
  gateway_token_hash: string | null;
  legacy_token_hash: string | null;
  key_hash: string;
  last_status_check: number | null;
  last_status: string | null;
  /** 1 while the session holds a link: connected once and not logged out since. */
  vinculado: number;
  /** The gateway server that holds the line's instance; null until one is chosen (see core/accounts/gateway-servers.ts). */
  servidor_id: number | null;
  /** The warm-up plan the line follows (core/sending/warmup.ts), or null: its configured caps alone. */
  calentamiento: string | null;
  /** When the plan was set: its day 1 is the day (in the server's zone) this falls in. Null without a plan. */
  calentamiento_desde: number | null;
  /** 1: a crossing of the health thresholds pauses the line's queue (core/accounts/line-brake.ts); 0: it only alerts. */
  freno: number;
  /** 1 while the line's queue waits for a resume; `frenado_motivo` says why. */
  frenado: number;
  frenado_motivo: string | null;
  /** Where the health window starts after a resume (null: never resumed); when the last alert was raised. */
  salud_desde: number | null;
  salud_alerta_at: number | null;
  created_at: number;
  updated_at: number;
}

export interface AuditEntry {
  actor: string;
  accion: string;
  objeto_tipo: string;
  objeto_id: number | null;
  cliente_id: number | null;
  detalle: Record<string, unknown>;
}

/**
 * The audit record of a change, built by core from the row before and after
 * it; the store writes it in the change's own transaction, so there is never
 * an audit row without its change, nor a change without its row (D-91).
 */
export type AuditOf<T> = (antes: T, despues: T) => AuditEntry;

export type Tipo = 'texto' | 'imagen' | 'documento' | 'audio' | 'video' | 'sticker';

export type MensajeEstado = 'pendiente' | 'enviado' | 'entregado' | 'leido' | 'error';

export type Modo = 'cola' | 'directo';

export type ReceiptEstado = 'entregado' | 'leido' | 'error';
/**
 * Why a message ended in `error` (core/sending/failure-class.ts): `rechazado`, the
 * network refused it for good; `no_enviado`, it never reached the network;
 * `incierto`, it may have reached the recipient; `fallido`, the network took
 * it and reported later that it failed; `cancelado`, someone cancelled it
 * while it waited in the queue (never sent, refunded); `caducado`, its
 * validity (`vigencia`) passed before it was handed to the gateway (never
 * sent, refunded: docs/validity.md).
 */
export const ERROR_CLASES = ['rechazado', 'no_enviado', 'incierto', 'fallido', 'cancelado', 'caducado'] as const;
export type ErrorClase = (typeof ERROR_CLASES)[number];

/** What a gateway needs to send a stored message. */
export interface MensajePayload {
  texto?: string;
  url?: string;
  /**
   * Where the base64-decoded bytes are: an AcceptedMedia reference (a file
   * of this node's tmp/ named by msg_id, or chunks in PostgreSQL for a queued
   * message on that store); removed when the send ends.
   */
  file?: string;
  mime?: string;
  filename?: string;
  caption?: string;
  ptt?: boolean;
  preview_url?: boolean;
}

export interface MensajeRow {
  msg_id: string;
  cliente_id: number;
  celular_id: number;
  destinatario: string;
  tipo: Tipo;
  modo: Modo;
  estado: MensajeEstado;
  /** Text, or the caption of a media message. */
  texto: string | null;
  /** JSON: `{url}` or `{filename, mime, bytes}`; never the bytes themselves. */
  media: string | null;
  gateway_msg_id: string | null;
  error: string | null;
  /** Set with `error`: what became of it, for code to read (the text is for people). */
  error_clase: ErrorClase | null;
  cobrado: number;
  cargo: 'celular' | 'global' | null;
  payload: string | null;
  intentos: number;
  proximo_intento_at: number | null;
  lease_until: number | null;
  /** The send's slot in its line's caps (see core/sending/caps.ts): its claim's end while in flight, then enviado_at. */
  cupo_at: number | null;
  expira_at: number | null;
  created_at: number;
  enviado_at: number | null;
  entregado_at: number | null;
  leido_at: number | null;
  /** The failed message this one retries (`mensaje reintentar`); null (or absent, on rows read before migration 22) otherwise. */
  reintento_de?: string | null;
  /** A queued send's validity: not handed to the gateway by then, it ends `caducado` (docs/validity.md); null (or absent) otherwise. */
  vigencia_hasta?: number | null;
  /** A scheduled send's due time (D-162); null (or absent, on rows read before migration 31) when sent as soon as possible. */
  enviar_en?: number | null;
}

/**
 * The columns a send's record and a receipt answer (D-155): what the status
 * event and the state paths read, not the message's text or payload. A store
 * may answer the whole row.
 */
export type MensajeEstadoRow = Pick<
  MensajeRow,
  | 'msg_id'
  | 'cliente_id'
  | 'celular_id'
  | 'destinatario'
  | 'tipo'
  | 'modo'
  | 'estado'
  | 'gateway_msg_id'
  | 'error'
  | 'error_clase'
  | 'intentos'
  | 'cupo_at'
  | 'enviado_at'
  | 'entregado_at'
  | 'leido_at'
>;

export interface RecibidoRow {
  id: number;
  cliente_id: number;
  celular_id: number;
  de: string;
  tipo: string;
  texto: string | null;
  /** JSON of the metadata, or null. */
  media: string | null;
  gateway_msg_id: string | null;
  fecha: number;
  /** When pasarela recorded it (ms, the store's writer's clock): the inbox's order, date filters and retention. */
  created_at: number;
}

export interface WebhookConfig {
  cliente_id: number;
  url: string;
  secret: string | null;
  /** Subscribed kinds: messages.received, message.status, session.status, or all. */
  eventos: string[];
  activo: boolean;
  updated_at: number;
}

export interface EntregaRow {
  id: string;
  cliente_id: number;
  evento: string;
  body: string;
  estado: 'pendiente' | 'entregado' | 'fallido';
  intentos: number;
  proximo_intento_at: number;
  created_at: number;
  entregado_at: number | null;
  ultimo_error: string | null;
}

/**
 * A temporary extra destination of a client's events (`webhook listen`): it
 * gets a copy of each event it subscribes to, signed with its own secret,
 * while its lease (`expira_at`) is renewed.
 */
export interface EscuchaRow {
  id: string;
  cliente_id: number;
  url: string;
  /** Signs the copies; generated by the server, returned once. */
  secret: string;
  eventos: string[];
  created_at: number;
  expira_at: number;
}

/** An event as journaled with the change that caused it (docs/design.md §6 names and data). */
export interface JournalEvent {
  evento: string;
  cliente_id: number;
  celular_id: number | null;
  data: Record<string, unknown>;
  fecha: number;
}

export type GatewayServerEstado = 'activo' | 'drenando';

/** One gateway server (an Evolution API or WAHA process) that holds line instances. */
export interface GatewayServerRow {
  id: number;
  nombre: string;
  /** Its kind: the `--gateway` adapter that speaks to it. */
  tipo: string;
  url: string;
  /** Its global API key: a secret, never answered by the API. */
  key: string;
  /** `drenando`: keeps its lines, takes no new ones. */
  estado: GatewayServerEstado;
  /** How many lines it should hold at most; null: no cap. */
  max_lineas: number | null;
  created_at: number;
  updated_at: number;
}
