import { Command, InvalidArgumentError, Option } from 'commander';
import { DELIMITERS, type Delimiter } from '../bulk/csv.js';
import { MEDIA_KINDS, type BulkSpec, type MediaKind } from '../bulk/rows.js';
import { runSendBulk, type BulkDeps } from '../bulk/run.js';
import { parseTemplate, TemplateError } from '../bulk/template.js';
import type { Ctx } from '../context.js';
import { usage } from '../exit-codes.js';
import type { CtxOf } from '../main.js';
import { int, positiveInt } from '../parse.js';
import { cappedSleep } from '../retry.js';
import { sendingLine } from './send.js';

export interface SendBulkOptions {
  file: string;
  delimiter?: Delimiter;
  text?: string;
  textColumn?: string;
  toColumn: string;
  mediaColumn?: string;
  mediaType?: MediaKind;
  celular?: number;
  directo?: boolean;
  dryRun?: boolean;
  concurrency: number;
  retry: number;
}

/** The flags as a BulkSpec; contradictions are usage errors (exit 2, nothing read or sent). */
export function specOf(o: SendBulkOptions): BulkSpec {
  if (o.text !== undefined && o.textColumn !== undefined) throw usage('give the text with --text TEMPLATE or --text-column COL, not both');
  if (o.text === undefined && o.textColumn === undefined && o.mediaColumn === undefined) {
    throw usage('missing the text: --text "Hola {nombre}" (a template over the columns) or --text-column COL');
  }
  if (o.mediaType !== undefined && o.mediaColumn === undefined) throw usage('--media-type needs --media-column');
  let template;
  if (o.text !== undefined) {
    try {
      template = parseTemplate(o.text);
    } catch (err) {
      if (err instanceof TemplateError) throw usage(err.message);
      throw err;
    }
  }
  return {
    ...(template ? { template } : {}),
    ...(o.textColumn !== undefined ? { textColumn: o.textColumn } : {}),
    toColumn: o.toColumn,
    ...(o.mediaColumn !== undefined ? { mediaColumn: o.mediaColumn } : {}),
    ...(o.mediaType !== undefined ? { mediaType: o.mediaType } : {}),
  };
}

export async function runSendBulkCommand(o: SendBulkOptions, ctx: Ctx, deps: BulkDeps = {}): Promise<void> {
  const spec = specOf(o);
  const line =
    deps.line ?? (() => sendingLine(ctx, { retry: o.retry, ...(o.celular !== undefined ? { celular: o.celular } : {}) }, ctx.key(), cappedSleep(ctx.env)));
  await runSendBulk(
    {
      file: o.file,
      ...(o.delimiter !== undefined ? { delimiter: o.delimiter } : {}),
      spec,
      ...(o.celular !== undefined ? { celular: o.celular } : {}),
      directo: Boolean(o.directo),
      dryRun: Boolean(o.dryRun),
      concurrency: o.concurrency,
      retry: o.retry,
    },
    ctx,
    { sleep: deps.sleep ?? cappedSleep(ctx.env), line },
  );
}

/** `pasarela send bulk FILE.csv`: a campaign, one message per row (docs/design.md §10). */
export function registerSendBulk(send: Command, ctxOf: CtxOf): void {
  send
    .command('bulk <archivo.csv>')
    .description(
      'send one message per row of a CSV file (a header row names the columns); a rerun of the same file sends no row twice. ' +
        'A column enviar_en (an RFC 3339 instant) schedules its row. ' +
        'Off a TTY: one JSON line per row. Exit 0 all accepted, 12 some refused, 2 a bad file or template (nothing sent)',
    )
    .option('--text <template>', 'the text, with {columna} replaced by that column of the row ({{ and }} for literal braces); with media, the caption')
    .option('--text-column <col>', 'the text as it is in this column')
    .addOption(new Option('--to-column <col>', 'the column with the recipient').default('destinatario'))
    .option('--media-column <col>', 'a column with a URL or a local file to send with each row (the text is its caption)')
    .addOption(new Option('--media-type <tipo>', "what the files are (default: by each file's extension, else document)").choices([...MEDIA_KINDS]))
    .option('--delimiter <char>', 'what separates the fields: "," (default), ";" or "\\t" (tab)', delimiterArg)
    .option('--celular <id>', "line to send from (with a client key; default: the client's only line)", positiveInt)
    .option('--directo', 'send each row now and wait for the gateway (default: the humanized queue)')
    .option('--dry-run', 'check the file and print what each row would send; send nothing')
    .addOption(new Option('--concurrency <n>', 'rows sent at once').default(4).argParser(int(1, 32)))
    .addOption(
      new Option('--retry <n>', 'retries of a row on 5xx or a lost connection (a 429 is waited out as its retry_after says)').default(2).argParser(int(0, 10)),
    )
    .action((file: string, o: Omit<SendBulkOptions, 'file'>, cmd: Command) => runSendBulkCommand({ file, ...o }, ctxOf(cmd)));
}

/** --delimiter: one of DELIMITERS; `\t` and `tab` name the tab. */
function delimiterArg(v: string): Delimiter {
  const d = v === '\\t' || v.toLowerCase() === 'tab' ? '\t' : v;
  const found = DELIMITERS.find((x) => x === d);
  if (!found) throw new InvalidArgumentError('expected ",", ";" or "\\t" (tab)');
  return found;
}
