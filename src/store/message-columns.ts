// The message table's columns as both stores name them in their statements.
import type { MensajeEstadoRow } from '../core/ports/model.js';

/** A message row as the port returns it: every column but `seq` (an arrival order SQLite keeps as its rowid). */
export const MSG_COLS = [
  'msg_id',
  'cliente_id',
  'celular_id',
  'destinatario',
  'tipo',
  'modo',
  'estado',
  'texto',
  'media',
  'gateway_msg_id',
  'error',
  'error_clase',
  'cobrado',
  'created_at',
  'enviado_at',
  'entregado_at',
  'leido_at',
  'payload',
  'cargo',
  'intentos',
  'proximo_intento_at',
  'lease_until',
  'expira_at',
  'cupo_at',
  'reintento_de',
];
/** MensajeEstadoRow's columns: a send's record and a receipt read these, not the text and payload (D-155). */
export const ESTADO_COLUMNS = [
  'msg_id',
  'cliente_id',
  'celular_id',
  'destinatario',
  'tipo',
  'modo',
  'estado',
  'gateway_msg_id',
  'error',
  'error_clase',
  'intentos',
  'cupo_at',
  'enviado_at',
  'entregado_at',
  'leido_at',
] as const satisfies ReadonlyArray<keyof MensajeEstadoRow>;
