import { celularInScope, type ClientPrincipal } from '../auth/auth.js';
import { iso } from '../time/clock.js';
import type { Core } from '../context.js';
import { fail } from '../api/errors.js';
import { countryOf, normalizeNumero } from '../accounts/phone.js';
import type { HistoryFilter } from '../ports/messages.js';
import type { CelularRow, MensajeEstado, MensajeRow } from '../ports/model.js';

/**
 * Message history (docs/design.md §8): newest first, a page at a time, with the
 * total. Dates are whole days in the server's zone (`serve --tz`); a celular
 * credential sees its own line only.
 */

export const ESTADOS: readonly MensajeEstado[] = ['enviado', 'entregado', 'leido', 'error', 'pendiente'];
/** Every field of a history record, in the order of docs/design.md §8 (the answer's and the CLI's CSV columns). */
export const MENSAJE_FIELDS = [
  'msg_id',
  'celular_id',
  'destinatario',
  'tipo',
  'modo',
  'estado',
  'texto',
  'media',
  'gateway_msg_id',
  'error',
  'created_at',
  'enviado_at',
  'entregado_at',
  'leido_at',
  // Added after the fields of docs/design.md §8: last, so CSV columns keep their places.
  'error_clase',
  'reintento_de',
  'vigencia_hasta',
  'enviar_en',
] as const;
export const POR_PAGINA_DEFAULT = 50;
export const POR_PAGINA_MAX = 500;

export interface HistorialQuery extends ListingQuery {
  estado?: string;
  destinatario?: string;
}

/** Media of a history record: where it came from, never its bytes. */
export interface MediaView {
  url?: string;
  filename?: string;
  mime?: string;
  /** Size in bytes. */
  bytes?: number;
}

export function mensajeView(m: MensajeRow) {
  const at = (ms: number | null) => (ms === null ? null : iso(ms));
  return {
    msg_id: m.msg_id,
    celular_id: m.celular_id,
    destinatario: m.destinatario,
    tipo: m.tipo,
    modo: m.modo,
    estado: m.estado,
    texto: m.texto,
    media: mediaView(m.media),
    gateway_msg_id: m.gateway_msg_id,
    error: m.error,
    created_at: iso(m.created_at),
    enviado_at: at(m.enviado_at),
    entregado_at: at(m.entregado_at),
    leido_at: at(m.leido_at),
    error_clase: m.error_clase,
    reintento_de: m.reintento_de ?? null,
    vigencia_hasta: at(m.vigencia_hasta ?? null),
    enviar_en: m.enviar_en ? iso(m.enviar_en) : null,
  };
}

export type MensajeView = ReturnType<typeof mensajeView>;

/** The stored media JSON as an object, or null (none, unparsable, not an object). */
export function mediaObject(raw: string | null): Record<string, unknown> | null {
  if (raw === null) return null;
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    return null;
  }
  return parsed && typeof parsed === 'object' && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : null;
}

/** A media object reduced to its documented fields; anything else stays on the server. */
export function mediaFields(o: Record<string, unknown>): MediaView {
  const out: MediaView = {};
  if (typeof o.url === 'string') out.url = o.url;
  if (typeof o.filename === 'string') out.filename = o.filename;
  if (typeof o.mime === 'string') out.mime = o.mime;
  if (typeof o.bytes === 'number' && Number.isFinite(o.bytes)) out.bytes = o.bytes;
  return out;
}

/** The stored media JSON reduced to its documented fields; anything else (or unparsable) stays on the server. */
export function mediaView(raw: string | null): MediaView | null {
  const o = mediaObject(raw);
  return o === null ? null : mediaFields(o);
}

interface Ymd {
  y: number;
  m: number;
  d: number;
}

const DATE_RE = /^(\d{4})-(\d{2})-(\d{2})$/;

function daysInMonth(y: number, m: number): number {
  if (m === 2) return (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0 ? 29 : 28;
  return [4, 6, 9, 11].includes(m) ? 30 : 31;
}

/** A real calendar date written YYYY-MM-DD, or null. */
export function parseYmd(s: string): Ymd | null {
  const r = DATE_RE.exec(s);
  if (!r) return null;
  const y = Number(r[1]);
  const m = Number(r[2]);
  const d = Number(r[3]);
  if (y < 1 || m < 1 || m > 12 || d < 1 || d > daysInMonth(y, m)) return null;
  return { y, m, d };
}

function nextDay({ y, m, d }: Ymd): Ymd {
  if (d < daysInMonth(y, m)) return { y, m, d: d + 1 };
  return m < 12 ? { y, m: m + 1, d: 1 } : { y: y + 1, m: 1, d: 1 };
}

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatter(tz: string): Intl.DateTimeFormat {
  let f = formatters.get(tz);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone: tz,
      era: 'short',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
      hourCycle: 'h23',
    });
    formatters.set(tz, f);
  }
  return f;
}

/** The wall-clock reading of instant `t` in `tz`, as if that reading were UTC (ms, whole seconds). */
function wallClock(f: Intl.DateTimeFormat, t: number): number {
  const p: Record<string, string> = {};
  for (const part of f.formatToParts(t)) p[part.type] = part.value;
  const year = p.era === 'BC' || p.era === 'B' ? 1 - Number(p.year) : Number(p.year);
  const date = new Date(Date.UTC(2000, Number(p.month) - 1, Number(p.day), Number(p.hour), Number(p.minute), Number(p.second)));
  date.setUTCFullYear(year);
  return date.getTime();
}

function utcMidnight({ y, m, d }: Ymd): number {
  const date = new Date(Date.UTC(2000, m - 1, d));
  date.setUTCFullYear(y);
  return date.getTime();
}

/**
 * The first instant (ms) of day `day` in zone `tz`: local midnight, or, where
 * a clock change skips midnight, the first instant that reads that day.
 * Intl gives the zone's offsets; no time-zone library is needed.
 */
export function startOfDay(day: Ymd, tz: string): number {
  const f = formatter(tz);
  const midnight = utcMidnight(day);
  // "Does instant t already read day `day` (or later) there?" Local midnight as a UTC reading is `midnight`.
  const reached = (t: number) => wallClock(f, t) >= midnight;
  // Two rounds of "midnight minus the offset in force" settle on local midnight whenever it exists.
  const offsetAt = (t: number) => wallClock(f, t) - Math.floor(t / 1000) * 1000;
  let t = midnight - offsetAt(midnight);
  t = midnight - offsetAt(t);
  if (reached(t) && !reached(t - 1)) return t;
  // Midnight does not exist that day (a clock change skips it): search for the first instant of the day.
  // Offsets lie within ±14 h, so the answer lies within ±18 h of UTC midnight.
  let lo = midnight - 18 * 3_600_000; // not reached
  let hi = midnight + 18 * 3_600_000; // reached
  while (hi - lo > 1) {
    const mid = lo + Math.floor((hi - lo) / 2);
    if (reached(mid)) hi = mid;
    else lo = mid;
  }
  return hi;
}

/** The first instant of the calendar month that instant `now` falls in, in zone `tz`. */
export function startOfMonth(now: number, tz: string): number {
  const local = new Date(wallClock(formatter(tz), now));
  return startOfDay({ y: local.getUTCFullYear(), m: local.getUTCMonth() + 1, d: 1 }, tz);
}

function isZone(tz: string): boolean {
  try {
    formatter(tz);
    return true;
  } catch {
    return false;
  }
}

const INSTANT_RE = /^(\d{4}-\d{2}-\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(?:([Zz])|([+-])(\d{2}):(\d{2}))$/;

/**
 * An RFC 3339 instant (a date, a time and Z or an offset; fractions of a
 * second kept to the millisecond, rounded up so that a bound never takes in
 * a millisecond before it), or null when `s` is not one. A time without an
 * offset names no instant: it is not one.
 */
export function parseInstant(s: string): number | null {
  const r = INSTANT_RE.exec(s);
  if (!r) return null;
  const ymd = parseYmd(r[1]!);
  const [h, mi, sec] = [Number(r[2]), Number(r[3]), Number(r[4])];
  // 60: a leap second, read as the last millisecond of its minute.
  if (!ymd || h > 23 || mi > 59 || sec > 60) return null;
  const offH = r[8] === undefined ? 0 : Number(r[8]);
  const offM = r[9] === undefined ? 0 : Number(r[9]);
  if (offH > 23 || offM > 59) return null;
  const frac = r[5] === undefined ? 0 : Math.ceil(Number(`0.${r[5]}`) * 1000);
  const offset = (r[7] === '-' ? -1 : 1) * (offH * 60 + offM) * 60_000;
  const t = utcMidnight(ymd) + ((h * 60 + mi) * 60 + Math.min(sec, 59)) * 1000 + (sec === 60 ? 999 : frac) - offset;
  return t;
}

/** What a listing's day or instant must look like, in the words the CLI, the API and the panel all use. */
export const DAY_OR_INSTANT_EXPECTED = 'expected a calendar date YYYY-MM-DD or an RFC 3339 instant with its offset, such as 2026-11-26T10:00:00Z';

/**
 * A listing's `desde` (first instant included) or `hasta` (first instant
 * excluded) in ms: a day in the server's zone (hasta: the day included), or
 * an RFC 3339 instant taken as it is, so that a cron job's windows [desde,
 * hasta) follow each other without overlap or gap.
 */
export function boundParam(name: 'desde' | 'hasta', value: string, tz: string): number {
  const ymd = parseYmd(value);
  if (ymd) return startOfDay(name === 'hasta' ? nextDay(ymd) : ymd, tz);
  const t = parseInstant(value);
  if (t === null) fail('INVALID_PARAMS', `${name}: "${value}": ${DAY_OR_INSTANT_EXPECTED}`);
  return t;
}

/** Both bounds of a listing, refused when desde comes after hasta (two days compare as days; instants may make an empty window). */
export function boundsParam(q: { desde?: string; hasta?: string }, tz: string): { desde?: number; hasta?: number } {
  const out: { desde?: number; hasta?: number } = {};
  if (q.desde !== undefined) out.desde = boundParam('desde', q.desde, tz);
  if (q.hasta !== undefined) out.hasta = boundParam('hasta', q.hasta, tz);
  if (out.desde !== undefined && out.hasta !== undefined) {
    const backwards = parseYmd(q.desde!) && parseYmd(q.hasta!) ? q.desde! > q.hasta! : out.desde > out.hasta;
    if (backwards) fail('INVALID_PARAMS', `desde (${q.desde}) is after hasta (${q.hasta})`);
  }
  return out;
}

function intParam(name: string, value: number | undefined, def: number, min: number, max: number): number {
  if (value === undefined) return def;
  if (!Number.isInteger(value) || value < min || value > max) {
    fail('INVALID_PARAMS', `${name}: an integer from ${min}${max === Number.MAX_SAFE_INTEGER ? ' up' : ` to ${max}`} is required`);
  }
  return value;
}

/** The zone a listing's days are read in (and its answer names): the server's, or UTC when that is not a zone. */
export function listingZone(core: Pick<Core, 'config'>): string {
  return isZone(core.config.tz) ? core.config.tz : 'UTC';
}

/** What every listing (history, inbox) takes: a page, a line, whole days or instants. */
export interface ListingQuery {
  celular_id?: number;
  /** YYYY-MM-DD, first day included; or an RFC 3339 instant, included. */
  desde?: string;
  /** YYYY-MM-DD, last day included; or an RFC 3339 instant, excluded. */
  hasta?: string;
  page?: number;
  por_pagina?: number;
}

/** The part of a listing's store filter every listing shares. */
export interface ListingScope {
  cliente_id: number;
  page: number;
  por_pagina: number;
  celular_id?: number;
  desde?: number;
  hasta?: number;
}

/**
 * The paging, line and days of a listing's query, or a refusal (400, or
 * 403/404 for a line out of the credential's scope). `celular` is the line
 * whose country reads a national number: the credential's, or the one named.
 */
export async function listingScope(
  core: Pick<Core, 'store' | 'config'>,
  p: ClientPrincipal,
  q: ListingQuery,
): Promise<{ scope: ListingScope; celular: CelularRow | null }> {
  const page = intParam('page', q.page, 1, 1, Number.MAX_SAFE_INTEGER);
  const porPagina = intParam('por_pagina', q.por_pagina, POR_PAGINA_DEFAULT, 1, POR_PAGINA_MAX);
  if (page > Math.floor(Number.MAX_SAFE_INTEGER / porPagina)) fail('INVALID_PARAMS', 'page: too large');

  let celular: CelularRow | null = p.kind === 'celular' ? p.celular : null;
  if (q.celular_id !== undefined) {
    if (!Number.isInteger(q.celular_id) || q.celular_id < 1) fail('INVALID_PARAMS', 'celular_id: a positive integer is required');
    // A celular credential asking for its own line is fine; a sibling is 403, anything else 404.
    celular = await celularInScope(core, p, q.celular_id);
  }

  const scope: ListingScope = { cliente_id: p.cliente.id, page, por_pagina: porPagina };
  if (celular) scope.celular_id = celular.id;

  const bounds = boundsParam(q, listingZone(core));
  if (bounds.desde !== undefined) scope.desde = bounds.desde;
  if (bounds.hasta !== undefined) scope.hasta = bounds.hasta;
  return { scope, celular };
}

/** A phone-number filter, normalised like a send's recipient (in the line's country when one is in context); 400 naming `field` otherwise. */
export function numeroParam(field: string, value: string, celular: CelularRow | null): string {
  const n = normalizeNumero(value, celular ? countryOf(celular.numero) : undefined);
  if (!n.ok) fail('INVALID_PARAMS', `${field}: ${n.reason}`);
  return n.numero;
}

/** The page fields of a listing's answer, and the zone its days were read in. */
export function pageFields(core: Pick<Core, 'config'>, f: { page: number; por_pagina: number }, total: number) {
  return { page: f.page, por_pagina: f.por_pagina, total, total_paginas: Math.ceil(total / f.por_pagina), zona_horaria: listingZone(core) };
}

/** Turns the query of historial_listar into a store filter, or refuses it with 400/403/404. */
export async function historyFilter(core: Pick<Core, 'store' | 'config'>, p: ClientPrincipal, q: HistorialQuery): Promise<HistoryFilter> {
  const { scope, celular } = await listingScope(core, p, q);
  const f: HistoryFilter = { ...scope };
  if (q.estado !== undefined) {
    if (!ESTADOS.includes(q.estado as MensajeEstado)) fail('INVALID_PARAMS', `estado: one of ${ESTADOS.join(', ')}`);
    f.estado = q.estado as MensajeEstado;
  }
  if (q.destinatario !== undefined) f.destinatario = numeroParam('destinatario', q.destinatario, celular);
  return f;
}

export async function listHistorial(core: Pick<Core, 'store' | 'config'>, p: ClientPrincipal, q: HistorialQuery) {
  const f = await historyFilter(core, p, q);
  const { total, rows } = await core.store.listMensajes(f);
  return { ...pageFields(core, f, total), mensajes: rows.map(mensajeView) };
}

/**
 * Every record a history query selects (its page and por_pagina aside),
 * newest first, one store page at a time through the same read as a listing:
 * an export of any size holds one page in memory. The window is closed at
 * the instant the export starts (hasta, if later, is brought down to it), so
 * messages accepted meanwhile do not shift the pages under it.
 */
export async function* exportHistorial(core: Pick<Core, 'store' | 'clock' | 'config'>, p: ClientPrincipal, q: HistorialQuery): AsyncGenerator<MensajeView[]> {
  const { page: _p, por_pagina: _pp, ...filters } = q;
  const f = await historyFilter(core, p, filters);
  const hasta = Math.min(f.hasta ?? Number.MAX_SAFE_INTEGER, core.clock.now() + 1);
  // Each page starts after the last row of the one before (keyset, no offset) and counts no total: a page costs the
  // same at the end of a million rows as at the start.
  let despues: string | undefined;
  for (;;) {
    const { rows } = await core.store.listMensajes({ ...f, hasta, page: 1, por_pagina: POR_PAGINA_MAX, sinTotal: true, ...(despues ? { despues } : {}) });
    if (rows.length > 0) yield rows.map(mensajeView);
    if (rows.length < POR_PAGINA_MAX) return;
    despues = rows[rows.length - 1]!.msg_id;
  }
}
