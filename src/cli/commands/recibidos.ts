import { Option, type Command } from 'commander';
import { API } from '../../core/api/api-routes.js';
import type { Ctx } from '../context.js';
import { addListingOptions, runListing, type ListingOpts } from '../listing.js';
import type { CtxOf } from '../main.js';
import type { Cell } from '../output.js';
import { truncateWidth } from '../../shared/terminal-text.js';
import { sender } from '../parse.js';

/** One record of GET /api/recibidos_listar.php (docs/design.md §10). */
interface Recibido {
  id: number;
  celular_id: number;
  de: string;
  tipo: string;
  texto: string | null;
  media: { url?: string; filename?: string; mime?: string; bytes?: number; ptt?: boolean } | null;
  gateway_msg_id: string | null;
  fecha: string;
  created_at: string;
}

export interface RecibidosOptions extends ListingOpts {
  celular?: number;
  remitente?: string;
}

/** Every field of a record, in the order of docs/design.md §10: the csv columns. */
const CSV_COLUMNS: Array<keyof Recibido> = ['id', 'celular_id', 'de', 'tipo', 'texto', 'media', 'gateway_msg_id', 'fecha', 'created_at'];

/** Query fields and the flag that sets each, to explain a 400 in the command's terms. */
const RECIBIDOS_FIELDS = {
  celular_id: '--celular',
  remitente: '--remitente',
  desde: '--desde',
  hasta: '--hasta',
  page: '--page',
  por_pagina: '--por-pagina',
} as const;

const TABLE_HEADERS = ['recibido', 'id', 'celular', 'de', 'tipo', 'texto'];

/** The text comes from whoever wrote to the line: printTable escapes its control characters (and bidi overrides) in every cell. */
function tableRow(_ctx: Ctx, r: Recibido, tty: boolean): Cell[] {
  const texto = r.texto ?? r.media?.filename ?? r.media?.url ?? r.media?.mime ?? null;
  // On a terminal at most 40 columns of it, cut between characters (printTable may cut it further to fit).
  const short = tty && texto !== null ? truncateWidth(texto.replace(/\s+/g, ' '), 40) : texto;
  return [r.created_at, r.id, r.celular_id, r.de, r.tipo, short];
}

export async function runRecibidos(o: RecibidosOptions, ctx: Ctx): Promise<void> {
  await runListing<Recibido>(ctx, o, {
    path: API.recibidos,
    field: 'recibidos',
    query: { celular_id: o.celular, desde: o.desde, hasta: o.hasta, remitente: o.remitente },
    fields: RECIBIDOS_FIELDS,
    id: (r) => r.id,
    csvColumns: CSV_COLUMNS,
    tableHeaders: TABLE_HEADERS,
    tableRow,
  });
}

/** `pasarela recibidos`: the inbox, one page or all of it, as a table, JSON, NDJSON or CSV (the flags of `historial`). */
export function registerRecibidos(program: Command, ctxOf: CtxOf): void {
  const command = program.command('recibidos').description("incoming messages (the inbox), newest first (dates are days in the server's time zone)");
  addListingOptions(command, {
    afterDays: [new Option('--remitente <numero>', 'only messages from this number (or this contact id, …@lid)').argParser(sender())],
  }).action((o: RecibidosOptions, cmd: Command) => runRecibidos(o, ctxOf(cmd)));
}
