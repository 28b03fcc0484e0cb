import { CELULAR_ESTADOS, SESSION_STATUSES } from '../../core/ports/model.js';
import { AUDIT_ACCIONES } from '../../core/auth/audit.js';
import { CELULAR_LIMITS, FIELD_LIMITS, HORA_PATTERN, LIST_LIMITS } from '../../core/api/limits.js';
import { ESTADOS, POR_PAGINA_DEFAULT, POR_PAGINA_MAX } from '../../core/history/historial.js';
import { STREAM_EVENT_KINDS } from '../../core/events/event-stream.js';
import { MOVIMIENTO_TIPOS } from '../../core/billing/movimientos.js';
import { WARMUP_NAME_MAX, WARMUP_PLAN_NAMES } from '../../core/sending/warmup.js';
import { Flag, Nullable, StringEnum, Type, type TProperties } from './typed.js';

/**
 * JSON schemas shared by routes. They validate requests, serialise responses
 * (fields not listed here never leave the server) and are the source of
 * /openapi.json.
 */

export const ts = { type: 'string', format: 'date-time' } as const;
export const tsOrNull = { ...ts, nullable: true } as const;
export const strOrNull = { type: 'string', nullable: true } as const;
/** A day or an RFC 3339 instant: the shape here, the calendar and the clock read by core/history/historial.ts (which says what is wrong). */
const dayOrInstant = { type: 'string', minLength: 10, maxLength: 40, pattern: '^[0-9]{4}-[0-9]{2}-[0-9]{2}' } as const;
const nullable = <T extends object>(s: T) => ({ ...s, nullable: true }) as const;

/** Fields every success body carries (docs/design.md §4: both success shapes at once). */
export const envelope = {
  ok: { type: 'boolean', const: true },
  api_codigo: { type: 'integer', description: '0 on success; see the api_codigo table' },
  api_texto: { type: 'string', description: '"OK" on success' },
  api_descripcion: { type: 'string' },
  texto: { type: 'string', description: 'message for display to a user' },
  desc: { type: 'string' },
  saldo: { type: 'integer', nullable: true, description: 'balance of the celular in context, when there is one' },
} as const;

export const errorSchema = {
  $id: 'Error',
  type: 'object',
  description: 'Every refusal, in both error shapes at once: ok:false with error, and api_codigo with api_texto and api_descripcion.',
  properties: {
    ok: { type: 'boolean', const: false },
    error: { type: 'string' },
    api_codigo: { type: 'integer' },
    api_texto: { type: 'string' },
    api_descripcion: { type: 'string' },
    saldo: { type: 'integer', nullable: true },
    codigo: { type: 'integer', description: 'duplicate block only: 306' },
    detalle: { type: 'string', description: 'duplicate block only' },
    retry_after: { type: 'integer', description: 'seconds; also sent as the Retry-After header' },
  },
  required: ['ok', 'error', 'api_codigo', 'api_texto', 'api_descripcion', 'saldo'],
} as const;

export const errorResponses = {
  '4xx': { $ref: 'Error#' },
  '5xx': { $ref: 'Error#' },
} as const;

export const celularSchema = {
  $id: 'Celular',
  type: 'object',
  properties: {
    id: { type: 'integer' },
    cliente_id: { type: 'integer' },
    numero: { type: 'string', description: 'country code first, digits only' },
    nombre_interno: nullable({ type: 'string' }),
    estado: { type: 'string', enum: ['activo', 'suspendido', 'desconectado'] },
    saldo_actual: { type: 'integer' },
    max_envios_por_minuto: { type: 'integer' },
    max_envios_por_hora: { type: 'integer' },
    max_envios_por_dia: nullable({ type: 'integer' }),
    hora_inicio_permitido: { type: 'string' },
    hora_fin_permitido: { type: 'string' },
    calentamiento: nullable({ type: 'string', description: `the warm-up plan the line follows (${WARMUP_PLAN_NAMES.join(', ')}), or null` }),
    calentamiento_desde: nullable({ ...ts, description: "when the plan was set: its day 1 is that day in the server's zone" }),
    calentamiento_dia: nullable({ type: 'integer', description: "the plan's day today while it holds; null without a plan or once it is over" }),
    max_envios_por_minuto_efectivo: { type: 'integer', description: 'the cap per minute today, the warm-up plan applied' },
    max_envios_por_hora_efectivo: { type: 'integer', description: 'the cap per hour today, the warm-up plan applied' },
    max_envios_por_dia_efectivo: nullable({ type: 'integer', description: 'the cap per day today, the warm-up plan applied (null: none)' }),
    gateway_instancia: nullable({ type: 'string' }),
    tiene_gateway_token: { type: 'boolean' },
    tiene_token_legacy: { type: 'boolean' },
    last_status_check: nullable(ts),
    last_status: nullable({ type: 'string' }),
    freno: { type: 'boolean', description: 'true: a crossing of the health thresholds pauses the queue (docs/brake.md); false: it only alerts' },
    frenado: { type: 'boolean', description: 'true while the queue waits for a resume (POST /api/celular_reanudar.php)' },
    frenado_motivo: nullable({ type: 'string' }),
    created_at: ts,
  },
  required: ['id', 'numero', 'estado', 'saldo_actual'],
} as const;

export const clienteSchema = {
  $id: 'Cliente',
  type: 'object',
  properties: {
    id: { type: 'integer' },
    nombre: { type: 'string' },
    email: { type: 'string' },
    estado: { type: 'string', enum: ['activo', 'suspendido', 'baja'] },
    plan: { type: 'string', enum: ['medido', 'ilimitado'] },
    max_celulares: nullable({ type: 'integer' }),
    consumo_mes_actual: { type: 'integer' },
    created_at: ts,
  },
  required: ['id', 'nombre', 'email', 'estado', 'plan', 'max_celulares', 'consumo_mes_actual', 'created_at'],
} as const;

/** Client info (`info.php`) and the operator's client summary. */
export const clienteSummaryProps = {
  cliente: { $ref: 'Cliente#' },
  saldo_global: { type: 'integer' },
  num_celulares: { type: 'integer' },
  num_celulares_activos: { type: 'integer' },
  mensajes_30d: { type: 'integer' },
} as const;

export const sharedSchemas = [errorSchema, celularSchema, clienteSchema];

/** The credential as a query parameter, for clients that cannot set headers. */
export const keyQuery = Type.String({ description: 'credential, when no Authorization header is sent' });

/** `id` of the celular endpoints (docs/design.md §1): in the query string (the body is accepted too). */
export const idQueryProps = {
  id: Type.Optional(Type.Integer({ minimum: 1, description: 'celular id (required; may also be sent in the body)' })),
  key: Type.Optional(keyQuery),
};
export const idQuery = Type.Object(idQueryProps);

export const keyField = Type.String({ description: 'credential (same value as the Bearer token)' });

const range = ([minimum, maximum]: readonly [number, number]) => ({ minimum, maximum });

/** A line's warm-up plan and brake: set at its creation or by an edit. */
export const lineProtection = {
  calentamiento: Type.Optional(
    Nullable(
      Type.String({
        maxLength: WARMUP_NAME_MAX,
        description: `a warm-up plan (${WARMUP_PLAN_NAMES.join(', ')}): it starts today unless the line already follows it; null ends it`,
      }),
    ),
  ),
  freno: Type.Optional(Flag('1: a crossing of the health thresholds pauses the queue (docs/brake.md); 0: it only alerts (the default)')),
};

export const celularEditBody = Type.Object(
  {
    key: Type.Optional(keyField),
    id: Type.Optional(Type.Integer({ minimum: 1 })),
    estado: Type.Optional(StringEnum(CELULAR_ESTADOS, { description: 'client key only' })),
    nombre_interno: Type.Optional(Nullable(Type.String({ maxLength: CELULAR_LIMITS.nombre_interno }))),
    max_envios_por_minuto: Type.Optional(Type.Integer(range(CELULAR_LIMITS.max_envios_por_minuto))),
    max_envios_por_hora: Type.Optional(Type.Integer(range(CELULAR_LIMITS.max_envios_por_hora))),
    max_envios_por_dia: Type.Optional(Nullable(Type.Integer(range(CELULAR_LIMITS.max_envios_por_dia)))),
    hora_inicio_permitido: Type.Optional(Type.String({ pattern: HORA_PATTERN })),
    hora_fin_permitido: Type.Optional(Type.String({ pattern: HORA_PATTERN })),
    ...lineProtection,
  },
  { additionalProperties: false },
);

const linkProps = {
  celular_id: { type: 'integer' },
  gateway_instancia: { type: 'string' },
  status: {
    type: 'string',
    enum: SESSION_STATUSES,
    description:
      'need_scan: waiting for the phone; connecting: the gateway is starting the session (ask again shortly); connected; logged_out; disconnected; unknown',
  },
  estado: { type: 'string', description: 'the celular estado after this call' },
} as const;

export const qrProps = {
  ...linkProps,
  qr: {
    type: 'string',
    description: 'QR content; render it with any QR library. Empty when already connected, or while the gateway is still starting the session.',
  },
} as const;

export const codigoProps = {
  ...linkProps,
  codigo: {
    type: 'string',
    description: 'Pairing code to type on the phone (WhatsApp > Linked devices > Link with phone number). Empty when already connected.',
  },
} as const;

/**
 * The schema of an alias path (another URL of the same endpoint): the
 * canonical schema with its own operationId (`<canonical>Alias<Form>`, so
 * every operation in the document has a unique one), a summary naming the
 * canonical path, and `x-alias-of` naming the canonical operationId.
 */
export function aliasSchema<T extends { operationId: string }>(schema: T, operationId: string, canonicalPath: string) {
  return { ...schema, operationId, summary: `Alias of ${canonicalPath}`, 'x-alias-of': schema.operationId };
}

export function okResponse(properties: Record<string, unknown>, description?: string) {
  return {
    type: 'object',
    ...(description ? { description } : {}),
    properties: { ...envelope, ...properties },
  } as const;
}

/**
 * The query string of a paged listing (history §8, inbox §10): the line, the
 * listing's own filters around the days (`beforeDays`, then `afterDays`, in
 * that order in the document), the page, and the key.
 */
export function listingQuerystring<B extends TProperties, A extends TProperties>(beforeDays: B, afterDays: A) {
  return Type.Partial(
    Type.Object({
      celular_id: Type.Integer({ minimum: 1 }),
      ...beforeDays,
      desde: Type.String({
        ...dayOrInstant,
        description: "first day (YYYY-MM-DD, in the server's zone), included; or an RFC 3339 instant (2026-11-26T10:00:00Z), included",
      }),
      hasta: Type.String({ ...dayOrInstant, description: "last day (YYYY-MM-DD, in the server's zone), included; or an RFC 3339 instant, excluded" }),
      ...afterDays,
      page: Type.Integer({ minimum: 1, default: 1 }),
      por_pagina: Type.Integer({ minimum: 1, maximum: POR_PAGINA_MAX, default: POR_PAGINA_DEFAULT }),
      key: keyQuery,
    }),
  );
}

/** The query of GET /api/historial_listar.php, which the panel's history page and its exports read too. */
export const historialQuerystring = listingQuerystring(
  { estado: StringEnum(ESTADOS) },
  { destinatario: Type.String({ minLength: 1, maxLength: FIELD_LIMITS.numeroFiltro }) },
);

/** The query of GET /api/recibidos_listar.php, which the panel's inbox page reads too. */
export const recibidosQuerystring = listingQuerystring(
  {
    remitente: Type.String({
      minLength: 1,
      maxLength: FIELD_LIMITS.numeroFiltro,
      description: "only messages from this number (normalised like a send's recipient), or from this contact id (…@lid), exactly",
    }),
  },
  {},
);

/** The event stream's filters and resume point (GET /api/eventos.php), which the panel's event monitor and its stream read too. */
export const eventosFilterProps = {
  eventos: Type.String({ maxLength: 200, description: `a comma list of ${STREAM_EVENT_KINDS.join(', ')}, or all (default)` }),
  celular_id: Type.Integer({ minimum: 1, description: "one line's events only (a celular credential: its own line)" }),
  desde_id: Type.String({ maxLength: FIELD_LIMITS.webhookId, description: 'as the Last-Event-ID header, for clients that cannot set headers' }),
};

/** The query of GET /admin/auditoria, which the panel's audit page reads too (core/auth/audit.ts says what each means). */
export const auditoriaQuerystring = Type.Object({
  cliente_id: Type.Optional(Type.Integer({ minimum: 1, description: 'only records of this client' })),
  accion: Type.Optional(Type.String({ minLength: 3, maxLength: 61, description: `only records of this action, exactly: ${AUDIT_ACCIONES.join(', ')}` })),
  desde: Type.Optional(
    Type.String({ ...dayOrInstant, description: "first day (YYYY-MM-DD, in the server's zone), included; or an RFC 3339 instant, included" }),
  ),
  hasta: Type.Optional(
    Type.String({ ...dayOrInstant, description: "last day (YYYY-MM-DD, in the server's zone), included; or an RFC 3339 instant, excluded" }),
  ),
  antes: Type.Optional(Type.Integer({ minimum: 1, description: 'the older page: records with a smaller id (paginas.antes of the page before)' })),
  despues: Type.Optional(Type.Integer({ minimum: 0, description: 'the newer page: records with a larger id (paginas.despues); 0 for the oldest page' })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: LIST_LIMITS.auditoria.max, default: LIST_LIMITS.auditoria.default })),
});

/** The query of GET /api/movimientos.php (and the operator's /admin/movimientos), which the panel's movements page reads too. */
export const movimientosQuerystring = listingQuerystring(
  { tipo: StringEnum(MOVIMIENTO_TIPOS, { description: 'cobro (a send charged), reembolso (a failed send refunded), manual (added or removed by hand)' }) },
  {
    format: StringEnum(['json', 'csv', 'ndjson'] as const, {
      description: 'csv or ndjson: every movement the filters select, streamed (page and por_pagina aside)',
    }),
  },
);

/** The 200 answer of a paged listing: the page fields, then its records under `field`. */
export function listingResponse<F extends string, I extends object>(field: F, items: I) {
  return okResponse({
    page: { type: 'integer' },
    por_pagina: { type: 'integer' },
    total: { type: 'integer', description: 'records matching the filters' },
    total_paginas: { type: 'integer', description: '0 when nothing matches' },
    zona_horaria: { type: 'string', description: "the server's time zone (serve --tz), in which desde/hasta days are read" },
    [field]: { type: 'array', items },
  });
}
