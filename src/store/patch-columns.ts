/** The columns a patch may set, the same for every store dialect (a patch key outside them is a bug, refused). */
export const CELULAR_COLUMNS = new Set([
  'nombre_interno',
  'estado',
  'max_envios_por_minuto',
  'max_envios_por_hora',
  'max_envios_por_dia',
  'hora_inicio_permitido',
  'hora_fin_permitido',
  'gateway_instancia',
  'legacy_token_hash',
  'key_hash',
  'last_status',
  'last_status_check',
  'vinculado',
  'servidor_id',
  'calentamiento',
  'calentamiento_desde',
  'freno',
]);
export const CLIENTE_COLUMNS = new Set(['nombre', 'email', 'plan', 'estado', 'max_celulares', 'key_hash']);

/** A patch's columns to set, in its order: undefined values left out, a key outside `allowed` refused (a bug). */
export function patchColumns(patch: Record<string, unknown>, allowed: Set<string>): Array<[string, unknown]> {
  const entries = Object.entries(patch).filter(([, v]) => v !== undefined);
  for (const [k] of entries) if (!allowed.has(k)) throw new Error(`unknown column ${k}`);
  return entries;
}
