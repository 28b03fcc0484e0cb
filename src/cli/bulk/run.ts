import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { TextDecoder } from 'node:util';
import type { Ctx } from '../context.js';
import { CliError, usage } from '../exit-codes.js';
import { EXIT } from '../../shared/exit-codes.js';
import { sleep as realSleep } from '../retry.js';
import { csvRows, CsvFileError, type Delimiter } from './csv.js';
import { rowKey } from './keys.js';
import { BulkReport } from './report.js';
import { lineCountry, numeroCheck } from './dry-run-numbers.js';
import { prepareRow, specMissing, type BulkSpec, type NumeroCheck, type Prepared } from './rows.js';
import { Gate, localFileProblem, requestOf, sendRow, type RowResult, type StopReason } from './send-row.js';

export interface BulkOptions {
  file: string;
  delimiter?: Delimiter;
  spec: BulkSpec;
  celular?: number;
  directo?: boolean;
  dryRun?: boolean;
  concurrency: number;
  retry: number;
}

export interface BulkDeps {
  /** Every wait of the run (429 retry_after, backoff); tests pass one that moves a driven clock. */
  sleep?: (ms: number) => Promise<void>;
  /** Resolves the line to send from (send.ts: a client key's only line); absent: --celular as given. */
  line?: () => Promise<number | undefined>;
}

/**
 * A stream of the file's bytes that also hashes them and, with `utf8`, checks
 * they are UTF-8: a file saved in another encoding would have its accents
 * replaced in every text, so it is refused instead (exit 2).
 */
function hashedStream(file: string, hash: ReturnType<typeof createHash>, utf8?: TextDecoder): NodeJS.ReadableStream {
  const s = createReadStream(file);
  s.on('data', (c: Buffer | string) => {
    hash.update(c);
    try {
      utf8?.decode(typeof c === 'string' ? Buffer.from(c) : c, { stream: true });
    } catch {
      s.destroy(new CsvFileError(`${file} is not UTF-8 text; save it as "CSV UTF-8" (or convert it, e.g. with iconv -f latin1 -t utf-8)`));
    }
  });
  return s;
}

interface FirstPass {
  sha256: string;
  total: number;
  invalid: number;
  /** Every sendable row names a pool (a `grupo` column). */
  allPooled: boolean;
}

/**
 * Reads the whole file once before sending: its hash (the rows' keys), that it
 * is CSV with the columns the flags and the template name (else exit 2 and
 * nothing sent), how many rows (the bar's total) and how many a check here
 * refuses. Streaming, so a large file costs time, not memory.
 */
async function firstPass(o: BulkOptions, numero?: NumeroCheck): Promise<FirstPass> {
  const info = await stat(o.file).catch((err: NodeJS.ErrnoException) => {
    throw usage(`cannot read ${o.file}: ${err.code === 'ENOENT' ? 'no such file' : err.message}`);
  });
  if (!info.isFile()) throw usage(`${o.file} is not a file`);
  const hash = createHash('sha256');
  let total = 0;
  let invalid = 0;
  let pooled = 0;
  const checked = new Map<string, boolean>();
  try {
    const utf8 = new TextDecoder('utf-8', { fatal: true });
    const rows = csvRows(
      hashedStream(o.file, hash, utf8),
      (header) => {
        const missing = specMissing(o.spec, header);
        if (missing.length) {
          throw new CsvFileError(`${o.file} has no column ${missing.map((c) => `"${c}"`).join(', ')} (its columns: ${header.join(', ')})`);
        }
      },
      o.delimiter,
    );
    for await (const { row, record } of rows) {
      total += 1;
      const p = prepareRow(o.spec, row, record, numero);
      if (p.ok && p.grupo !== undefined) pooled += 1;
      let ok = p.ok;
      if (p.ok && p.media && !/^https?:\/\//i.test(p.media.source)) {
        // A campaign sends the same few files: each is checked once here (the send checks again).
        const k = `${p.media.kind}\0${p.media.source}`;
        if (!checked.has(k) && checked.size < 10_000) checked.set(k, (await localFileProblem(p.media.source, p.media.kind)) === undefined);
        ok = checked.get(k) ?? true;
      }
      if (!ok) invalid += 1;
    }
    try {
      utf8.decode(); // a character cut at the end of the file
    } catch {
      throw new CsvFileError(`${o.file} is not UTF-8 text: it ends inside a character`);
    }
  } catch (err) {
    if (err instanceof CsvFileError) throw usage(err.message);
    throw err;
  }
  if (total === 0) throw usage(`${o.file} has a header and no rows`);
  return { sha256: hash.digest('hex'), total, invalid, allPooled: pooled === total - invalid };
}

const STOP_TEXT: Record<StopReason, string> = {
  balance: 'the balance ran out (402)',
  auth: 'the key was refused',
  refused_now: 'the line or the client cannot send now',
  unreachable: 'the server could not be reached',
};

/**
 * `pasarela send bulk FILE.csv`: one message per row, at most --concurrency at
 * a time, each under its row's Idempotency-Key. Exit 0 when every row was
 * accepted, 12 when some were refused, 130 after Ctrl-C (the rows in flight
 * finish; a rerun sends the rest), the stop's own code when a row's answer
 * stops the run (402 counts as refused rows: 12).
 */
export async function runSendBulk(o: BulkOptions, ctx: Ctx, deps: BulkDeps = {}): Promise<void> {
  // The dry run reads each recipient as the server will: in the sending line's country, when it can be known.
  let numero: NumeroCheck | undefined;
  if (o.dryRun) {
    const line = await lineCountry(ctx, o.celular);
    if (line.country === undefined)
      ctx.term.err(`note: the sending line's country is not known (${line.why}); numbers are checked with their country code only`);
    numero = await numeroCheck(line);
  }
  const first = await firstPass(o, numero);
  const report = new BulkReport(ctx, first.total);
  if (first.invalid > 0 && ctx.term.io.stderrIsTTY)
    ctx.term.err(`${first.invalid} of ${first.total} rows cannot be sent as they are; they are reported as refused`);
  const common = { ...(o.directo ? { directo: 1 } : {}), ...(o.celular !== undefined ? { celular_id: o.celular } : {}) };
  const modo = o.directo ? 'directo' : 'cola';

  if (o.dryRun) {
    for await (const { row, record } of csvRows(createReadStream(o.file), undefined, o.delimiter)) {
      const p = prepareRow(o.spec, row, record, numero);
      const problem = p.ok && p.media && !/^https?:\/\//i.test(p.media.source) ? await localFileProblem(p.media.source, p.media.kind) : undefined;
      const ok = p.ok && problem === undefined;
      const error = !p.ok ? p.error : (problem ?? null);
      if (ctx.json || !ctx.term.io.stdoutIsTTY) {
        ctx.term.io.stdout.write(
          `${JSON.stringify({ row, destinatario: p.destinatario, ok, msg_id: null, modo, http: null, api_codigo: null, error, dry_run: true, texto: p.ok ? p.texto : null })}\n`,
        );
      } else if (row <= 5 || !ok) {
        ctx.term.out(`row ${row}\t${p.destinatario}\t${ok && p.ok ? p.texto : `refused: ${error}`}`);
      }
    }
    ctx.term.err(`dry run: ${first.total - first.invalid} of ${first.total} rows would be sent (${modo}), ${first.invalid} refused; nothing was sent`);
    if (first.invalid > 0) throw new CliError(`${first.invalid} rows would be refused`, EXIT.SOME_REFUSED);
    return;
  }

  const key = ctx.key();
  // Every row names its pool: no line to resolve (a client of several lines needs no --celular).
  const celular = deps.line && !first.allPooled ? await deps.line() : o.celular;
  if (celular !== undefined) Object.assign(common, { celular_id: celular });

  // Ctrl-C: no new rows; the ones in flight finish; waits end at once.
  const halt = new AbortController();
  let interrupted = false;
  let stop: { reason: StopReason; row: number } | undefined;
  const offSignal = ctx.term.io.onSignal?.(() => {
    if (!interrupted && ctx.term.io.stderrIsTTY) ctx.term.err('\nstopping: the rows in flight finish; run the same command again to send the rest');
    interrupted = true;
    halt.abort();
  });
  const baseSleep = deps.sleep ?? realSleep;
  const sleep = (ms: number) =>
    new Promise<void>((resolve, reject) => {
      if (halt.signal.aborted) return reject(new Error('stopped'));
      const onAbort = () => reject(new Error('stopped'));
      halt.signal.addEventListener('abort', onAbort, { once: true });
      baseSleep(ms).then(() => {
        halt.signal.removeEventListener('abort', onAbort);
        resolve();
      }, reject);
    });
  const gate = new Gate(sleep);
  const notes = new Set<string>();
  const d = {
    client: ctx.client(),
    key,
    gate,
    sleep,
    retries: o.retry,
    stopped: () => halt.signal.aborted,
    note: (text: string) => {
      // Said once per kind of wait off a TTY: a 429 storm is one line, not one per row.
      const kind = text.replace(/[0-9]+/g, 'N');
      report.status(text, !notes.has(kind));
      notes.add(kind);
    },
  };

  const one = async (p: Prepared): Promise<void> => {
    let r: RowResult;
    if (!p.ok) {
      r = { outcome: { row: p.row, destinatario: p.destinatario, ok: false, msg_id: null, modo: null, http: null, api_codigo: null, error: p.error } };
    } else {
      const req = await requestOf(p, common).catch((err: Error) => `cannot read ${p.media?.source ?? 'the file'}: ${err.message}`);
      r =
        typeof req === 'string'
          ? { outcome: { row: p.row, destinatario: p.destinatario, ok: false, msg_id: null, modo: null, http: null, api_codigo: null, error: req } }
          : await sendRow(d, p, req, rowKey(first.sha256, p.row));
    }
    if (r.stop && !stop) {
      stop = { reason: r.stop, row: p.row };
      halt.abort();
    }
    report.row(r.outcome, r.unsent);
  };

  await report.start();
  const inFlight = new Set<Promise<void>>();
  let unreached = 0;
  // Hashed again as it is sent: a file changed between the two reads is said (its rows' keys are the first read's).
  const again = createHash('sha256');
  try {
    for await (const { row, record } of csvRows(hashedStream(o.file, again), undefined, o.delimiter)) {
      const p = prepareRow(o.spec, row, record);
      if (halt.signal.aborted) {
        if (interrupted) break;
        // Stopped by an answer (402...): the rest of the rows are reported as not sent, so a script sees which.
        unreached += 1;
        report.row(
          {
            row,
            destinatario: p.destinatario,
            ok: false,
            msg_id: null,
            modo: null,
            http: null,
            api_codigo: null,
            error: `not sent: ${STOP_TEXT[stop!.reason]}`,
          },
          true,
        );
        continue;
      }
      const job = one(p).finally(() => inFlight.delete(job));
      inFlight.add(job);
      if (inFlight.size >= o.concurrency) await Promise.race(inFlight);
    }
    await Promise.all(inFlight);
  } finally {
    offSignal?.();
    report.finish();
  }

  const t = report.tally;
  if (!interrupted && !stop && again.digest('hex') !== first.sha256) {
    ctx.term.err(`warning: ${o.file} changed while it was being sent; its rows went under the keys of the file as first read`);
  }
  if (interrupted) {
    const left = t.total - t.accepted - t.refused;
    throw new CliError(
      `stopped by a signal: ${left} rows not sent; run the same command again to send them (rows already accepted are not sent twice)`,
      EXIT.INTERRUPTED,
    );
  }
  if (stop) {
    const text = `stopped at row ${stop.row}: ${STOP_TEXT[stop.reason]}; ${t.unsent} rows not sent (${unreached} never tried); fix it and run the same command again to send them`;
    throw new CliError(text, stop.reason === 'balance' ? EXIT.SOME_REFUSED : stopExit(stop.reason));
  }
  if (t.refused > 0) throw new CliError(`${t.refused} of ${t.total} rows refused`, EXIT.SOME_REFUSED);
}

function stopExit(reason: StopReason): number {
  return reason === 'auth' ? EXIT.AUTH : reason === 'refused_now' ? EXIT.REFUSED_NOW : EXIT.UNREACHABLE;
}
