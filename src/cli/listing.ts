import { DAY_OR_INSTANT_EXPECTED, parseInstant, parseYmd } from '../core/history/historial.js';
import { csvRecord } from '../core/api/csv.js';
import { type Command, InvalidArgumentError, Option } from 'commander';
import type { ApiPath } from '../core/api/api-routes.js';
import type { Ctx } from './context.js';
import { usage } from './exit-codes.js';
import type { FieldFlags } from './field-errors.js';
import { printJson, printTable, type Cell } from './output.js';
import { int, positiveInt } from './parse.js';
import { escapeControls } from '../shared/terminal-text.js';

/**
 * What every paged listing command (`historial`, `recibidos`) shares: the
 * formats, the date flag, CSV, and the walk over one page or all of them.
 * Each command names its path, its filters and how a record looks.
 */

export const FORMATS = ['table', 'json', 'ndjson', 'csv'] as const;
export type Format = (typeof FORMATS)[number];

/** The flags every listing has besides its filters. */
export interface ListingOpts {
  desde?: string;
  hasta?: string;
  page?: number;
  porPagina?: number;
  all?: boolean;
  format?: Format;
}

/**
 * The flags every listing takes (--celular, the days, the page, --all,
 * --format), with the listing's own filters among them: `beforeDays` after
 * --celular, `afterDays` after --hasta, in the help's order.
 */
export function addListingOptions(cmd: Command, filters: { beforeDays?: Option[]; afterDays?: Option[] } = {}): Command {
  cmd.option('--celular <id>', 'only this line (a celular key sees its own line only)', positiveInt);
  for (const o of filters.beforeDays ?? []) cmd.addOption(o);
  cmd
    .option('--desde <day|instant>', "from this day (YYYY-MM-DD, server's zone) or RFC 3339 instant (2026-11-26T10:00:00Z), included", dayOrInstant)
    .option('--hasta <day|instant>', 'up to this day (included) or RFC 3339 instant (excluded)', dayOrInstant);
  for (const o of filters.afterDays ?? []) cmd.addOption(o);
  return cmd
    .option('--page <n>', 'page to show (default 1)', positiveInt)
    .option('--por-pagina <n>', 'records per page, 1-500 (default 50)', int(1, 500))
    .option('--all', 'every page, from --page on (streamed for ndjson, csv and plain output)')
    .addOption(new Option('--format <format>', 'output format (--json means json)').choices(FORMATS));
}

/** A page as the list endpoints answer it; the records are under the listing's own field. */
interface Page {
  ok: true;
  page: number;
  por_pagina: number;
  /** null: more records than the service counts (the movements' listing); the pages then end at a short one. */
  total: number | null;
  total_paginas: number | null;
  [field: string]: unknown;
}

export interface Listing<R> {
  /** GET path of the list endpoint. */
  path: ApiPath;
  /** The field of a page holding its records (`mensajes`, `recibidos`). */
  field: string;
  /** The listing's filters (page and por_pagina are added). */
  query: Record<string, string | number | undefined>;
  /** Query fields and the flag that sets each, to explain a 400 in the command's terms. */
  fields: FieldFlags;
  /** A record's identity: `--all` skips one seen on an earlier page. */
  id(r: R): string | number;
  /** Every field of a record, in order: the csv columns. */
  csvColumns: ReadonlyArray<keyof R & string>;
  /** The credential to call with (the operator's token); the command's key by default. */
  key?: string;
  tableHeaders: string[];
  /** `tty`: cut free text to fit a terminal. */
  tableRow(ctx: Ctx, r: R, tty: boolean): Cell[];
}

/** A listing bound: a calendar day, or an RFC 3339 instant with its offset (a cron job's exact window); anything else is a usage error (exit 2) before any request. */
export function dayOrInstant(value: string): string {
  if (parseYmd(value) || parseInstant(value) !== null) return value;
  throw new InvalidArgumentError(DAY_OR_INSTANT_EXPECTED);
}

/**
 * Writes data to stdout and waits when the pipe is full, so a large export
 * does not pile up in memory. Control characters (ESC, C1, bidi overrides:
 * message texts come from anyone) are escaped visibly, record ends, tabs and
 * line breaks kept, on a terminal or not: a pipe or a file may end on one
 * (`| grep`, `cat export.csv`). NDJSON keeps its values exactly (the escape
 * is JSON's own); CSV shows them as `\u001b` (docs/decisions.md D-60).
 */
async function write(ctx: Ctx, text: string): Promise<void> {
  if (text === '') return;
  const io = ctx.term.io;
  const out = text
    .split('\r\n')
    .map((part) => escapeControls(part))
    .join('\r\n');
  if (!io.stdout.write(out)) await new Promise<void>((resolve) => io.stdout.once('drain', resolve));
}

/** One page, or with `--all` every page from `--page` on, printed in the chosen format. */
export async function runListing<R>(ctx: Ctx, o: ListingOpts, l: Listing<R>): Promise<void> {
  if (ctx.json && o.format !== undefined && o.format !== 'json') throw usage(`--json and --format ${o.format} disagree; give one of them`);
  // Two days compare as text; an instant's order is the server's to judge (a day is read in its zone).
  if (o.desde !== undefined && o.hasta !== undefined && parseYmd(o.desde) && parseYmd(o.hasta) && o.desde > o.hasta) {
    throw usage(`--desde ${o.desde} is after --hasta ${o.hasta}`);
  }
  const format: Format = ctx.json ? 'json' : (o.format ?? 'table');
  const key = l.key ?? ctx.key();
  const client = ctx.client();
  const fetchPage = async (page: number) => {
    const b = await client.call<Page>('GET', l.path, { key, query: { ...l.query, page, por_pagina: o.porPagina }, fields: l.fields });
    return { body: b, records: (b[l.field] ?? []) as R[] };
  };
  const term = ctx.term;
  const stdoutTty = term.io.stdoutIsTTY;
  const cols = l.csvColumns;
  const ndjsonOf = (rs: R[]) => rs.map((r) => `${JSON.stringify(r)}\n`).join('');
  const csvOf = (rs: R[]) => rs.map((r) => csvRecord(cols.map((k) => r[k]))).join('');

  if (!o.all) {
    const { body: b, records } = await fetchPage(o.page ?? 1);
    if (format === 'json') printJson(term, b);
    else if (format === 'ndjson') await write(ctx, ndjsonOf(records));
    else if (format === 'csv') await write(ctx, csvRecord([...cols]) + csvOf(records));
    else {
      printTable(
        term,
        l.tableHeaders,
        records.map((r) => l.tableRow(ctx, r, stdoutTty)),
      );
      if (stdoutTty && b.total === null) term.out(term.color.dim(`page ${b.page}, more records than are counted`));
      else if (stdoutTty && b.total !== null && b.total > 0) term.out(term.color.dim(`page ${b.page}/${b.total_paginas}, ${b.total} total`));
    }
    return;
  }

  // --all: page after page until the last one. Newer records arriving meanwhile push older ones
  // to later pages, so a record seen once is skipped when it shows up again.
  const streaming = format === 'ndjson' || format === 'csv' || (format === 'table' && !stdoutTty);
  const collected: R[] = [];
  const seen = new Set<string | number>();
  const progress = term.io.stderrIsTTY;
  // In place when stdout goes elsewhere; one line per page when both share the terminal.
  const inPlace = progress && !stdoutTty;
  let shown = false;
  if (format === 'csv') await write(ctx, csvRecord([...cols]));
  for (let page = o.page ?? 1; ; page += 1) {
    const { body: b, records } = await fetchPage(page);
    if (progress && (b.total_paginas === null || b.total_paginas > 1)) {
      const line = term.errColor.dim(`page ${page}/${b.total_paginas ?? '?'}`);
      if (inPlace) term.io.stderr.write(`\r${line}\u001b[K`);
      else term.err(line);
      shown = true;
    }
    const fresh = records.filter((r) => !seen.has(l.id(r)));
    for (const r of fresh) seen.add(l.id(r));
    if (!streaming) collected.push(...fresh);
    else if (format === 'ndjson') await write(ctx, ndjsonOf(fresh));
    else if (format === 'csv') await write(ctx, csvOf(fresh));
    else
      printTable(
        term,
        l.tableHeaders,
        fresh.map((r) => l.tableRow(ctx, r, false)),
      );
    // Without a total, the last page is the first one short of a full page.
    if (records.length === 0 || (b.total_paginas === null ? records.length < b.por_pagina : page >= b.total_paginas)) break;
  }
  if (inPlace && shown) term.io.stderr.write('\r\u001b[K');
  if (format === 'json') printJson(term, { ok: true, total: collected.length, [l.field]: collected });
  else if (!streaming)
    printTable(
      term,
      l.tableHeaders,
      collected.map((r) => l.tableRow(ctx, r, stdoutTty)),
    );
}
