import { InvalidArgumentError, Option, type Command } from 'commander';
import type { Ctx } from '../context.js';
import { usage } from '../exit-codes.js';
import type { CtxOf } from '../main.js';
import { painted, printJson, printTable, type Cell } from '../output.js';
import { truncateWidth } from '../terminal-text.js';
import { int, phone, positiveInt } from '../parse.js';

/** One record of GET /api/historial_listar.php (docs/design.md §8). */
interface Mensaje {
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
}

interface Page {
  ok: true;
  page: number;
  por_pagina: number;
  total: number;
  total_paginas: number;
  mensajes: Mensaje[];
}

interface Opts {
  celular?: number;
  estado?: string;
  desde?: string;
  hasta?: string;
  destinatario?: string;
  page?: number;
  porPagina?: number;
  all?: boolean;
  format?: Format;
}

const FORMATS = ['table', 'json', 'ndjson', 'csv'] as const;
type Format = (typeof FORMATS)[number];
const ESTADOS = ['enviado', 'entregado', 'leido', 'error', 'pendiente'];

/** Every field of a record, in the order of docs/design.md §8: the csv columns. */
const CSV_COLUMNS: Array<keyof Mensaje> = [
  'msg_id', 'celular_id', 'destinatario', 'tipo', 'modo', 'estado', 'texto', 'media',
  'gateway_msg_id', 'error', 'created_at', 'enviado_at', 'entregado_at', 'leido_at',
];

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

/** A calendar date YYYY-MM-DD; anything else is a usage error (exit 2) before any request. */
function date(value: string): string {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(value);
  if (m) {
    const [y, mo, d] = [Number(m[1]), Number(m[2]), Number(m[3])];
    const t = new Date(Date.UTC(2000, mo - 1, d));
    t.setUTCFullYear(y);
    if (y >= 1 && t.getUTCFullYear() === y && t.getUTCMonth() === mo - 1 && t.getUTCDate() === d) return value;
  }
  throw new InvalidArgumentError('expected a calendar date YYYY-MM-DD');
}

/**
 * RFC 4180: a field with a comma, quote, CR or LF is quoted, quotes doubled;
 * records end with CRLF. A text that a spreadsheet would run as a formula
 * (it starts with = + - @, a tab or a CR: message texts come from anyone) gets
 * a leading `'`, the usual guard against CSV formula injection.
 */
export function csvField(v: unknown): string {
  let s = v === null || v === undefined ? '' : typeof v === 'object' ? JSON.stringify(v) : String(v);
  if (typeof v === 'string' && /^[=+\-@\t\r]/.test(s)) s = `'${s}`;
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

const csvRecord = (cells: unknown[]) => `${cells.map(csvField).join(',')}\r\n`;

function tableRow(ctx: Ctx, m: Mensaje, tty: boolean): Cell[] {
  const texto = m.texto ?? m.media?.url ?? m.media?.filename ?? null;
  // On a terminal at most 40 columns of it, cut between characters (printTable may cut it further to fit).
  const short = tty && texto !== null ? truncateWidth(texto.replace(/\s+/g, ' '), 40) : texto;
  const c = ctx.term.color;
  const estado = painted(m.estado, m.estado === 'error' ? c.red : m.estado === 'pendiente' ? c.yellow : m.estado === 'leido' ? c.green : (s: string) => s);
  return [m.created_at, m.msg_id, m.celular_id, m.destinatario, m.tipo, m.modo, estado, short, m.error];
}

/** Writes to stdout and waits when the pipe is full, so a large export does not pile up in memory. */
async function write(ctx: Ctx, text: string): Promise<void> {
  if (text === '') return;
  if (!ctx.term.io.stdout.write(text)) await new Promise<void>((resolve) => ctx.term.io.stdout.once('drain', resolve));
}

/** `pasarela historial`: the message history, one page or all of it, as a table, JSON, NDJSON or CSV. */
export function registerHistorial(program: Command, ctxOf: CtxOf): void {
  program
    .command('historial')
    .description('message history, newest first (dates are days in the server\'s time zone)')
    .option('--celular <id>', 'only this line (a celular key sees its own line only)', positiveInt)
    .addOption(new Option('--estado <estado>', 'only messages in this state').choices(ESTADOS))
    .option('--desde <YYYY-MM-DD>', 'from this day (included)', date)
    .option('--hasta <YYYY-MM-DD>', 'up to this day (included)', date)
    .option('--destinatario <numero>', 'only messages to this number', phone())
    .option('--page <n>', 'page to show (default 1)', positiveInt)
    .option('--por-pagina <n>', 'records per page, 1-500 (default 50)', int(1, 500))
    .option('--all', 'every page, from --page on (streamed for ndjson, csv and plain output)')
    .addOption(new Option('--format <format>', 'output format (--json means json)').choices(FORMATS))
    .action(async (o: Opts, cmd: Command) => {
      const ctx = ctxOf(cmd);
      if (ctx.json && o.format !== undefined && o.format !== 'json') throw usage(`--json and --format ${o.format} disagree; give one of them`);
      if (o.desde !== undefined && o.hasta !== undefined && o.desde > o.hasta) throw usage(`--desde ${o.desde} is after --hasta ${o.hasta}`);
      const format: Format = ctx.json ? 'json' : (o.format ?? 'table');
      const key = ctx.key();
      const client = ctx.client();
      const fetchPage = (page: number) =>
        client.call<Page>('GET', '/api/historial_listar.php', {
          key,
          query: {
            celular_id: o.celular,
            estado: o.estado,
            desde: o.desde,
            hasta: o.hasta,
            destinatario: o.destinatario,
            page,
            por_pagina: o.porPagina,
          },
          fields: HISTORIAL_FIELDS,
        });
      const term = ctx.term;
      const stdoutTty = term.io.stdoutIsTTY;

      if (!o.all) {
        const b = await fetchPage(o.page ?? 1);
        if (format === 'json') printJson(term, b);
        else if (format === 'ndjson') await write(ctx, b.mensajes.map((m) => `${JSON.stringify(m)}\n`).join(''));
        else if (format === 'csv') await write(ctx, csvRecord(CSV_COLUMNS) + b.mensajes.map((m) => csvRecord(CSV_COLUMNS.map((k) => m[k]))).join(''));
        else {
          printTable(term, TABLE_HEADERS, b.mensajes.map((m) => tableRow(ctx, m, stdoutTty)));
          if (stdoutTty && b.total > 0) term.out(term.color.dim(`page ${b.page}/${b.total_paginas}, ${b.total} total`));
        }
        return;
      }

      // --all: page after page until the last one. Newer messages arriving meanwhile push older ones
      // to later pages, so a record seen once is skipped when it shows up again.
      const streaming = format === 'ndjson' || format === 'csv' || (format === 'table' && !stdoutTty);
      const collected: Mensaje[] = [];
      const seen = new Set<string>();
      const progress = term.io.stderrIsTTY;
      // In place when stdout goes elsewhere; one line per page when both share the terminal.
      const inPlace = progress && !stdoutTty;
      let shown = false;
      if (format === 'csv') await write(ctx, csvRecord(CSV_COLUMNS));
      for (let page = o.page ?? 1; ; page += 1) {
        const b = await fetchPage(page);
        if (progress && b.total_paginas > 1) {
          const line = term.errColor.dim(`page ${page}/${b.total_paginas}`);
          if (inPlace) term.io.stderr.write(`\r${line}\u001b[K`);
          else term.err(line);
          shown = true;
        }
        const fresh = b.mensajes.filter((m) => !seen.has(m.msg_id));
        for (const m of fresh) seen.add(m.msg_id);
        if (!streaming) collected.push(...fresh);
        else if (format === 'ndjson') await write(ctx, fresh.map((m) => `${JSON.stringify(m)}\n`).join(''));
        else if (format === 'csv') await write(ctx, fresh.map((m) => csvRecord(CSV_COLUMNS.map((k) => m[k]))).join(''));
        else printTable(term, TABLE_HEADERS, fresh.map((m) => tableRow(ctx, m, false)));
        if (b.mensajes.length === 0 || page >= b.total_paginas) break;
      }
      if (inPlace && shown) term.io.stderr.write('\r\u001b[K');
      if (format === 'json') printJson(term, { ok: true, total: collected.length, mensajes: collected });
      else if (!streaming) printTable(term, TABLE_HEADERS, collected.map((m) => tableRow(ctx, m, stdoutTty)));
    });
}
