import { iso } from '../time/clock.js';
import { effectiveCaps } from '../sending/warmup.js';
import type { CelularRow, ClienteRow, EntregaRow } from '../ports/model.js';
import type { IntentoRow } from '../ports/webhooks.js';

/**
 * Public shapes of stored rows. Hashes and other server-side fields never leave
 * through here; the response schemas repeat the allow-list as a second guard.
 */
/**
 * A line as answers show it; `at` (now, and the server's zone) gives the caps
 * its warm-up plan leaves it today (`*_efectivo`: the configured ones when no
 * plan holds).
 */
/** What `celularView` needs of the core: the time now and the server's zone. */
export const viewAt = (core: { clock: { now(): number }; config: { tz: string } }) => ({ now: core.clock.now(), tz: core.config.tz });

export function celularView(c: CelularRow, at: { now: number; tz: string }) {
  const e = effectiveCaps(c, at.now, at.tz);
  return {
    id: c.id,
    cliente_id: c.cliente_id,
    numero: c.numero,
    nombre_interno: c.nombre_interno,
    estado: c.estado,
    saldo_actual: c.saldo_actual,
    max_envios_por_minuto: c.max_envios_por_minuto,
    max_envios_por_hora: c.max_envios_por_hora,
    max_envios_por_dia: c.max_envios_por_dia,
    hora_inicio_permitido: c.hora_inicio_permitido,
    hora_fin_permitido: c.hora_fin_permitido,
    calentamiento: c.calentamiento,
    calentamiento_desde: c.calentamiento_desde === null ? null : iso(c.calentamiento_desde),
    calentamiento_dia: e.dia,
    max_envios_por_minuto_efectivo: e.max_envios_por_minuto,
    max_envios_por_hora_efectivo: e.max_envios_por_hora,
    max_envios_por_dia_efectivo: e.max_envios_por_dia,
    gateway_instancia: c.gateway_instancia,
    tiene_gateway_token: c.gateway_token_hash !== null,
    tiene_token_legacy: c.legacy_token_hash !== null,
    last_status_check: c.last_status_check === null ? null : iso(c.last_status_check),
    last_status: c.last_status,
    freno: c.freno === 1,
    frenado: c.frenado === 1,
    frenado_motivo: c.frenado_motivo,
    created_at: iso(c.created_at),
  };
}

export type CelularView = ReturnType<typeof celularView>;

export function clienteView(c: ClienteRow, consumoMesActual: number) {
  return {
    id: c.id,
    nombre: c.nombre,
    email: c.email,
    estado: c.estado,
    plan: c.plan,
    max_celulares: c.max_celulares,
    consumo_mes_actual: consumoMesActual,
    created_at: iso(c.created_at),
  };
}

export type ClienteView = ReturnType<typeof clienteView>;

/** A webhook delivery with every attempt, as `webhook_entregas.php` answers it. */
export function entregaView(r: EntregaRow & { intentos_detalle: IntentoRow[] }) {
  const isoOrNull = (ms: number | null) => (ms === null ? null : iso(ms));
  return {
    id: r.id,
    evento: r.evento,
    estado: r.estado,
    intentos: r.intentos,
    created_at: iso(r.created_at),
    entregado_at: isoOrNull(r.entregado_at),
    proximo_intento_at: r.estado === 'pendiente' ? iso(r.proximo_intento_at) : null,
    ultimo_error: r.ultimo_error,
    intentos_detalle: r.intentos_detalle.map((a) => ({ ...a, fecha: iso(a.fecha) })),
  };
}

export type EntregaView = ReturnType<typeof entregaView>;

export const DAY_MS = 24 * 60 * 60 * 1000;
