/**
 * The sizes and ranges of request fields, written once: the route schemas
 * read them (so the documentation states them) and the rules that check a
 * field themselves read the same numbers. IDEM_KEY (idempotency.ts) lives
 * beside its rule.
 */
export const FIELD_LIMITS = {
  /** A text message (sent, or received by the simulator) and the legacy route's `mensaje`. */
  mensaje: 4096,
  caption: 1024,
  /** A file name, with its extension. */
  filename: 255,
  /** A media or webhook URL. */
  url: 2048,
  /** A recipient as typed (the number is normalised after). */
  destinatario: 40,
  /** A line's number as typed, and the simulator's sender. */
  numero: 32,
  /** A number a listing is filtered by, as typed: the history's `destinatario`, the inbox's `remitente` (or its …@lid contact id). */
  numeroFiltro: 32,
  mime: 100,
  /** A webhook's signing secret. */
  webhookSecret: 256,
  /** A webhook listener id (esc_...) or delivery id. */
  webhookId: 64,
  clienteNombre: 200,
  email: 254,
  /** A client's line cap; null is no cap. */
  maxCelulares: 100_000,
  /** The largest balance given or moved in one call. */
  saldo: 1_000_000_000,
  /** The reason written with a balance change or a simulated failure. */
  motivo: 200,
  /** A legacy token set by the operator. */
  legacyToken: [16, 128],
  /** A gateway server's base URL and key. */
  gatewayUrl: 2000,
  gatewayKey: 500,
} as const;

/** A document's file name: a name with an extension, no folder (the send routes' schema and the CLI's --filename). */
export const FILENAME_PATTERN = '^[^/\\\\]+\\.[A-Za-z0-9]{1,10}$';

/** A send's validity (`vigencia`, docs/validity.md), whole seconds: a queued message not handed to the gateway within it ends `caducado`. */
export const VIGENCIA_S = { min: 10, max: 86_400 } as const;

/** Ranges of celular_editar's fields. */
export const CELULAR_LIMITS = {
  nombre_interno: 80,
  max_envios_por_minuto: [1, 1000],
  max_envios_por_hora: [1, 50000],
  max_envios_por_dia: [1, 100000],
} as const;

/** A pool (docs/pools.md): its name's length, its members, its failover wait in seconds. */
export const GRUPO_LIMITS = {
  nombre: 64,
  celulares: 100,
  conmutacion_s: [10, 86_400],
} as const;

export const HORA_PATTERN = '^([01][0-9]|2[0-3]):[0-5][0-9](:[0-5][0-9])?$';

/** Pages of the listings that are not history pages (historial.ts has those). */
export const LIST_LIMITS = {
  webhookEntregas: { max: 500, default: 50 },
  auditoria: { max: 1000, default: 100 },
} as const;
