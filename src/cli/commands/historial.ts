import { Option, type Command } from 'commander';
import { API } from '../../core/api/api-routes.js';
import { MENSAJE_FIELDS } from '../../core/history/historial.js';
import type { Ctx } from '../context.js';
import { addListingOptions, runListing, type ListingOpts } from '../listing.js';
import type { CtxOf } from '../main.js';
import { painted, type Cell } from '../output.js';
import { truncateWidth } from '../../shared/terminal-text.js';
import { phone } from '../parse.js';

/** One record of GET /api/historial_listar.php (docs/design.md §8). */
export interface Mensaje {
  msg_id: string;
  celular_id: number;
  destinatario: string;
  tipo: string;
  modo: string;
  estado: string;
  texto: string | null;
  media: { url?: string; filename?: string; mime?: string; bytes?: number } | null;
  gateway_msg_id: string | null;
  error: string | null;
  created_at: string;
  enviado_at: string | null;
  entregado_at: string | null;
  leido_at: string | null;
  error_clase: string | null;
  /** The failed message this one retries (absent from servers before it). */
  reintento_de?: string | null;
  /** A queued send's validity end (absent from servers before it). */
  vigencia_hasta?: string | null;
  /** A scheduled send's due time (absent from servers before it). */
  enviar_en?: string | null;
}

export interface HistorialOptions extends ListingOpts {
  celular?: number;
  estado?: string;
  destinatario?: string;
}

const ESTADOS = ['enviado', 'entregado', 'leido', 'error', 'pendiente'];

/** Every field of a record, in the order of docs/design.md §8: the csv columns. */
const CSV_COLUMNS: ReadonlyArray<keyof Mensaje> = MENSAJE_FIELDS;

/** Query fields and the flag that sets each, to explain a 400 in the command's terms. */
const HISTORIAL_FIELDS = {
  celular_id: '--celular',
  estado: '--estado',
  desde: '--desde',
  hasta: '--hasta',
  destinatario: '--destinatario',
  page: '--page',
  por_pagina: '--por-pagina',
} as const;

const TABLE_HEADERS = ['fecha', 'msg_id', 'celular', 'destinatario', 'tipo', 'modo', 'estado', 'texto', 'error'];

function tableRow(ctx: Ctx, m: Mensaje, tty: boolean): Cell[] {
  const texto = m.texto ?? m.media?.url ?? m.media?.filename ?? null;
  // On a terminal at most 40 columns of it, cut between characters (printTable may cut it further to fit).
  const short = tty && texto !== null ? truncateWidth(texto.replace(/\s+/g, ' '), 40) : texto;
  const c = ctx.term.color;
  const estado = painted(m.estado, m.estado === 'error' ? c.red : m.estado === 'pendiente' ? c.yellow : m.estado === 'leido' ? c.green : (s: string) => s);
  return [m.created_at, m.msg_id, m.celular_id, m.destinatario, m.tipo, m.modo, estado, short, m.error];
}

export async function runHistorial(o: HistorialOptions, ctx: Ctx): Promise<void> {
  await runListing<Mensaje>(ctx, o, {
    path: API.historial,
    field: 'mensajes',
    query: { celular_id: o.celular, estado: o.estado, desde: o.desde, hasta: o.hasta, destinatario: o.destinatario },
    fields: HISTORIAL_FIELDS,
    id: (m) => m.msg_id,
    csvColumns: CSV_COLUMNS,
    tableHeaders: TABLE_HEADERS,
    tableRow,
  });
}

/** `pasarela historial`: the message history, one page or all of it, as a table, JSON, NDJSON or CSV. */
export function registerHistorial(program: Command, ctxOf: CtxOf): void {
  const command = program.command('historial').description("message history, newest first (dates are days in the server's time zone)");
  addListingOptions(command, {
    beforeDays: [new Option('--estado <estado>', 'only messages in this state').choices(ESTADOS)],
    afterDays: [new Option('--destinatario <numero>', 'only messages to this number').argParser(phone())],
  }).action((o: HistorialOptions, cmd: Command) => runHistorial(o, ctxOf(cmd)));
}
