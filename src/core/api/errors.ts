/**
 * The one table of errors. Every refusal the service gives is an AppError built
 * from a row here, so routes never hand-build error bodies and the
 * `api_codigo` table, docs/api-codigo.md, is generated from the same rows.
 */
export interface ErrorRow {
  /** Stable numeric code sent as `api_codigo`. */
  codigo: number;
  /** HTTP status. */
  status: number;
  /** Short stable tag sent as `api_texto`. */
  texto: string;
  /** What it means, for the docs. */
  meaning: string;
}

export const ERRORS = {
  INVALID_PARAMS: {
    codigo: 100,
    status: 400,
    texto: 'PARAMETROS_INVALIDOS',
    meaning:
      'A field is missing, has the wrong type, is out of range, or is not exact text (bytes that are not UTF-8, a broken percent escape, an unpaired surrogate).',
  },
  MALFORMED_BODY: { codigo: 101, status: 400, texto: 'CUERPO_INVALIDO', meaning: 'The body could not be parsed (malformed JSON or form data).' },
  BODY_TOO_LARGE: { codigo: 102, status: 413, texto: 'CUERPO_DEMASIADO_GRANDE', meaning: 'The request body is larger than the route allows.' },
  UNSUPPORTED_BODY: {
    codigo: 103,
    status: 415,
    texto: 'TIPO_DE_CUERPO_NO_SOPORTADO',
    meaning:
      'The body is neither JSON nor form-encoded, or declares a charset pasarela does not read (JSON: UTF-8 only; forms: UTF-8 or windows-1252, also named latin1 or iso-8859-1).',
  },
  ROUTE_NOT_FOUND: { codigo: 104, status: 404, texto: 'RUTA_NO_ENCONTRADA', meaning: 'No endpoint at this method and path.' },
  MEDIA_TOO_LARGE: {
    codigo: 105,
    status: 413,
    texto: 'ARCHIVO_DEMASIADO_GRANDE',
    meaning: 'The media is larger than its type allows (the message states the maximum).',
  },
  MEDIA_TYPE_NOT_ALLOWED: {
    codigo: 106,
    status: 415,
    texto: 'TIPO_MIME_NO_PERMITIDO',
    meaning: "The media's MIME type (sniffed from the bytes) is not allowed for this message type.",
  },
  MEDIA_URL_INVALID: {
    codigo: 107,
    status: 400,
    texto: 'URL_INVALIDA',
    meaning: 'The media URL is not http(s), points at a private address, or is not reachable.',
  },
  BASE64_INVALID: { codigo: 108, status: 400, texto: 'BASE64_INVALIDO', meaning: 'The base64 content is empty, uses another alphabet, or has bad padding.' },
  REQUEST_TIMEOUT: {
    codigo: 109,
    status: 408,
    texto: 'TIEMPO_AGOTADO',
    meaning:
      'The request did not arrive in time: headers too slow, a body that did not start or came too slowly, or the whole request over its time limit; the connection is closed.',
  },
  HEADERS_TOO_LARGE: { codigo: 110, status: 431, texto: 'CABECERAS_DEMASIADO_GRANDES', meaning: 'The request headers are larger than the server accepts.' },
  UNAUTHORIZED: { codigo: 200, status: 401, texto: 'NO_AUTORIZADO', meaning: 'The credential is missing, unknown, or does not match.' },
  FORBIDDEN: { codigo: 201, status: 403, texto: 'PROHIBIDO', meaning: 'The credential is valid but may not perform this action.' },
  AUTH_THROTTLED: {
    codigo: 202,
    status: 429,
    texto: 'DEMASIADOS_INTENTOS',
    meaning:
      'Too many failed authentications with this credential from this address (or, for a credential not yet used successfully from it, from this address in all); wait `retry_after` seconds.',
  },
  UNAUTHENTICATED_BODY_LIMIT: {
    codigo: 203,
    status: 429,
    texto: 'DEMASIADOS_DATOS_SIN_AUTENTICAR',
    meaning:
      'This address has too many body bytes in flight on requests whose credential is not yet verified; send the key in the Authorization header, or retry after `retry_after` seconds.',
  },
  INSUFFICIENT_BALANCE: {
    codigo: 300,
    status: 402,
    texto: 'SALDO_INSUFICIENTE',
    meaning: "Neither the celular's balance nor the client's global balance can pay for the send.",
  },
  CELULAR_NOT_ACTIVE: { codigo: 301, status: 403, texto: 'CELULAR_NO_ACTIVO', meaning: 'The celular is `suspendido` or `desconectado`.' },
  CLIENT_NOT_ACTIVE: { codigo: 302, status: 403, texto: 'CLIENTE_NO_ACTIVO', meaning: 'The client is `suspendido` or `baja`.' },
  OUTSIDE_HOURS: {
    codigo: 303,
    status: 403,
    texto: 'FUERA_DE_HORARIO',
    meaning: "A direct send outside the celular's allowed hours; `retry_after` is the wait until they open.",
  },
  RATE_CAP: {
    codigo: 304,
    status: 429,
    texto: 'LIMITE_DE_ENVIOS',
    meaning: "A direct send over the celular's per-minute, per-hour or per-day cap; `retry_after` says when a slot frees.",
  },
  QUEUE_FULL: { codigo: 305, status: 429, texto: 'COLA_LLENA', meaning: 'The celular already has `--queue-max-pending` messages waiting.' },
  DUPLICATE_BLOCK: { codigo: 306, status: 429, texto: 'DUPLICADO', meaning: 'Duplicate protection: 3 identical sends in 120 s block the celular for 300 s.' },
  CELULAR_NOT_FOUND: { codigo: 600, status: 404, texto: 'CELULAR_NO_ENCONTRADO', meaning: 'No such celular for this credential.' },
  CLIENT_NOT_FOUND: { codigo: 601, status: 404, texto: 'CLIENTE_NO_ENCONTRADO', meaning: 'No such client.' },
  NUMBER_TAKEN: { codigo: 602, status: 409, texto: 'NUMERO_YA_REGISTRADO', meaning: 'The number is already registered as a celular.' },
  CELULAR_CAP: { codigo: 603, status: 403, texto: 'LIMITE_DE_CELULARES', meaning: 'The client has reached `max_celulares`.' },
  CONFLICT: {
    codigo: 604,
    status: 409,
    texto: 'CONFLICTO',
    meaning: 'The request conflicts with the current state (for example, a balance that would go negative).',
  },
  DELIVERY_NOT_FOUND: { codigo: 605, status: 404, texto: 'ENTREGA_NO_ENCONTRADA', meaning: 'No webhook delivery with that id for this client.' },
  GATEWAY_SERVER_NOT_FOUND: {
    codigo: 606,
    status: 404,
    texto: 'SERVIDOR_GATEWAY_NO_ENCONTRADO',
    meaning: 'No gateway server with that name (`GET /admin/gateways` lists them).',
  },
  IDEMPOTENCY_CONFLICT: {
    codigo: 607,
    status: 409,
    texto: 'IDEMPOTENCIA_CONFLICTO',
    meaning:
      'This `Idempotency-Key` was used (within 24 h) for a different request: another endpoint, line, recipient or content. Use a new key for a new message.',
  },
  IDEMPOTENCY_IN_PROGRESS: {
    codigo: 608,
    status: 409,
    texto: 'IDEMPOTENCIA_EN_CURSO',
    meaning: 'A request with this `Idempotency-Key` is still being processed (a direct send in flight); retry after `retry_after` seconds to get its answer.',
  },
  LISTENER_NOT_FOUND: {
    codigo: 609,
    status: 404,
    texto: 'ESCUCHA_NO_ENCONTRADA',
    meaning: 'No live webhook listener with that id for this client: it was removed, or its lease expired (register it again).',
  },
  MENSAJE_NOT_FOUND: {
    codigo: 611,
    status: 404,
    texto: 'MENSAJE_NO_ENCONTRADO',
    meaning: "No message with that msg_id for this credential (unknown, or another client's).",
  },
  LISTENER_CAP: {
    codigo: 610,
    status: 409,
    texto: 'LIMITE_DE_ESCUCHAS',
    meaning: "The client already has the most live webhook listeners allowed (5): remove one, or wait for an abandoned one's lease to expire.",
  },
  STREAM_CAP: {
    codigo: 614,
    status: 429,
    texto: 'LIMITE_DE_FLUJOS',
    meaning: 'The client already has the most event streams (`/api/eventos.php`) open on this node (10): close one, or retry after `retry_after` seconds.',
  },
  EVENT_NOT_KEPT: {
    codigo: 615,
    status: 410,
    texto: 'EVENTO_NO_DISPONIBLE',
    meaning:
      "The event a stream was asked to resume after (`Last-Event-ID` or `desde_id`) is not in the client's log: older than 72 h, or never this client's. Nothing was streamed; connect again without it and read the state afresh (history, inbox).",
  },
  NO_SESSION: {
    codigo: 625,
    status: 409,
    texto: 'SIN_SESION',
    meaning:
      'The celular has no gateway session to log out or restart: it was never linked, or it is logged out already. Link it first (its QR or pairing code).',
  },
  RETRY_NOT_ALLOWED: {
    codigo: 630,
    status: 409,
    texto: 'REINTENTO_NO_PERMITIDO',
    meaning:
      'The message cannot be retried: it has not failed, or its error_clase does not allow it (rechazado fails again; incierto may have reached the recipient), or its uploaded media is no longer kept. Send it anew instead.',
  },
  LINE_BRAKED: {
    codigo: 639,
    status: 403,
    texto: 'CELULAR_FRENADO',
    meaning:
      'A direct send on a celular whose brake is set (`frenado`: its failures, refusals or undelivered messages crossed a threshold, docs/brake.md); nothing was charged. Queued sends are accepted and wait. Resume the line with `POST /api/celular_reanudar.php?id=` once its cause is dealt with.',
  },
  GROUP_NOT_FOUND: { codigo: 643, status: 404, texto: 'GRUPO_NO_ENCONTRADO', meaning: 'No pool with that id or name for this client.' },
  GROUP_NAME_TAKEN: { codigo: 644, status: 409, texto: 'GRUPO_YA_EXISTE', meaning: 'The client already has a pool with that name.' },
  GROUP_NO_LINE: {
    codigo: 645,
    status: 503,
    texto: 'GRUPO_SIN_LINEA',
    meaning:
      'No line of the pool can send now: each is disconnected, without a session or suspended (or the pool has none); `retry_after` says when to look again.',
  },
  GROUP_NO_ROOM: {
    codigo: 646,
    status: 429,
    texto: 'GRUPO_SIN_CUPO',
    meaning: 'Every usable line of the pool is at its caps (its queue counted); `retry_after` says when to look again.',
  },
  GATEWAY_ERROR: {
    codigo: 700,
    status: 502,
    texto: 'ERROR_DE_GATEWAY',
    meaning:
      'The messaging gateway failed the call before anything went out (unreachable, session not open); for a direct send nothing was sent, the charge was refunded, and it may succeed if sent again.',
  },
  GATEWAY_RATE_LIMITED: {
    codigo: 702,
    status: 429,
    texto: 'GATEWAY_LIMITADO',
    meaning: 'A direct send the messaging network refused as rate-limited; the charge was refunded; `retry_after` says when to try again.',
  },
  GATEWAY_UNSUPPORTED: {
    codigo: 703,
    status: 415,
    texto: 'TIPO_NO_SOPORTADO_POR_GATEWAY',
    meaning: 'The configured gateway cannot send this message type (for example, WAHA has no sticker route); nothing was charged.',
  },
  GATEWAY_REFUSED: {
    codigo: 704,
    status: 502,
    texto: 'DESTINATARIO_RECHAZADO',
    meaning:
      'A direct send the gateway refused for good (a number not on the network, a request it will never accept): a 5xx as the spec says for a network error, told apart from a transient 700 by this code; the charge was refunded; sending it again will fail again.',
  },
  GATEWAY_UNCERTAIN: {
    codigo: 705,
    status: 502,
    texto: 'RESULTADO_INCIERTO',
    meaning:
      "A direct send whose outcome is unknown: the gateway may have delivered it (a timeout, a connection lost mid-call, a gateway fault after it took the call). The message is recorded as `error` and the charge was refunded, but pasarela cannot learn later whether it went (the gateway gave no message id): check the recipient's chat before sending it again with a new Idempotency-Key; a repeat under the same key replays this answer.",
  },
  GATEWAY_NOT_SIM: { codigo: 701, status: 404, texto: 'SIMULADOR_INACTIVO', meaning: 'Simulator controls exist only when `serve --gateway sim`.' },
  INTERNAL: { codigo: 900, status: 500, texto: 'ERROR_INTERNO', meaning: 'An unexpected server fault; the log has the details, the answer never does.' },
  SHUTTING_DOWN: { codigo: 901, status: 503, texto: 'APAGANDO', meaning: 'The server is stopping; retry on another node or later.' },
  STORE_UNAVAILABLE: {
    codigo: 903,
    status: 507,
    texto: 'ALMACEN_NO_DISPONIBLE',
    meaning:
      "The store cannot take writes (a full disk, an I/O error, a read-only file); the message names the store. Nothing of the refused request was kept; `/health` answers 503 until a write succeeds again. Also a full disk under the server's temporary files (a base64 file, a backup's copy): the message names the folder.",
  },
  SERVER_BUSY: {
    codigo: 902,
    status: 503,
    texto: 'SERVIDOR_OCUPADO',
    meaning: 'The server holds too many body bytes of requests whose credential is not yet verified; retry after `retry_after` seconds.',
  },
} as const satisfies Record<string, ErrorRow>;

export type ErrorName = keyof typeof ERRORS;

export interface ErrorExtras {
  /** Seconds until a retry may succeed; also sent as the `Retry-After` header. */
  retryAfter?: number;
  /** Duplicate-block detail text (`detalle`). */
  detalle?: string;
  /** Balance to report in `saldo`, when one is in context. */
  saldo?: number | null;
  /** A 401 for a credential presented and refused, not a missing one (the challenge says `invalid_token`). */
  credentialRejected?: boolean;
  /** A 401 of a route not authenticated by a Bearer credential (the gateway callback's secret): no Bearer challenge. */
  notBearer?: boolean;
}

export class AppError extends Error {
  readonly row: ErrorRow;
  readonly extras: ErrorExtras;
  constructor(name: ErrorName, message: string, extras: ErrorExtras = {}) {
    super(message);
    this.name = 'AppError';
    this.row = ERRORS[name];
    this.extras = extras;
  }
  get status(): number {
    return this.row.status;
  }
}

export function fail(name: ErrorName, message: string, extras?: ErrorExtras): never {
  throw new AppError(name, message, extras);
}

/** What a write that found its disk full fails with, in Node's fs and in SQLite. */
const DISK_FULL: Readonly<Record<string, string>> = { ENOSPC: 'the disk is full', EDQUOT: 'the disk quota is used up', SQLITE_FULL: 'the disk is full' };

/**
 * A write to `what` (a file the server makes besides its store: a base64
 * body's temp file, a backup's copy) that failed on a full disk: 507 with the
 * store-full code, naming it and why, rather than a 500. Any other error is
 * returned as it is.
 */
export function diskFull(err: unknown, what: string): unknown {
  if (err instanceof AppError) return err;
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code !== 'string') return err;
  const reason = DISK_FULL[code];
  return reason ? new AppError('STORE_UNAVAILABLE', `${what} cannot be written: ${reason} (${code}); retry once the operator has made room`) : err;
}

/** The error body of docs/design.md §4: both error shapes at once. */
export function errorBody(err: AppError): Record<string, unknown> {
  const body: Record<string, unknown> = {
    ok: false,
    error: err.message,
    api_codigo: err.row.codigo,
    api_texto: err.row.texto,
    api_descripcion: err.message,
    saldo: err.extras.saldo ?? null,
  };
  if (err.row.codigo === ERRORS.DUPLICATE_BLOCK.codigo) {
    body.codigo = err.row.codigo;
    body.detalle = err.extras.detalle ?? err.message;
  }
  if (err.extras.retryAfter !== undefined) body.retry_after = err.extras.retryAfter;
  return body;
}
