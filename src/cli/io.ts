import { Chalk, type ChalkInstance } from 'chalk';
import { guardLine } from '../shared/terminal-text.js';

/**
 * The terminal, decided once at the edge: where data and messages go, whether
 * there is a person to prompt, and whether to colour. Tests pass their own.
 */
export interface IO {
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
  stdin: NodeJS.ReadableStream;
  stdoutIsTTY: boolean;
  stderrIsTTY: boolean;
  stdinIsTTY: boolean;
  /** Size of the terminal stdout writes to, read when asked (it follows resizes); 0 or absent: unknown. */
  readonly columns?: number;
  readonly rows?: number;
  /** Aborted once the reader of stdout or stderr has gone away (EPIPE: `pasarela ... | head -1`). */
  closed?: AbortSignal;
  /**
   * Called by a command that handles its own stdout/stderr failures (`serve`:
   * its log drops lines and it keeps serving, server/log-sink.ts): from then on
   * a failing stream neither aborts `closed` nor throws.
   */
  takeOutputErrors?: () => void;
  /**
   * Work a command must still finish once the reader has gone (removing a
   * webhook listener): main waits for it, bounded, before the process ends.
   */
  lastWork?: Set<Promise<unknown>>;
  /**
   * Calls `handler` on each SIGINT or SIGTERM until the returned function is
   * called (a command that must clean up, `webhook listen`); absent: no signals.
   */
  onSignal?: (handler: (sig: NodeJS.Signals) => void) => () => void;
}

export interface Term {
  io: IO;
  /** Colours for stdout (off unless stdout is a TTY and NO_COLOR is unset). */
  color: ChalkInstance;
  /** Colours for stderr. */
  errColor: ChalkInstance;
  /** A person can answer prompts: stdin and stdout are both TTYs. */
  canPrompt: boolean;
  /**
   * Columns of the terminal stdout is, when it is one and its width is known
   * (else COLUMNS); undefined off a terminal or when nothing says: then
   * nothing is fitted to a width.
   */
  columns(): number | undefined;
  /** Rows of that terminal, likewise (else LINES). */
  rows(): number | undefined;
  /**
   * A line to stdout. Control characters other than our colour codes are
   * escaped (see guardLine), on a terminal or not: piped output reaches a
   * terminal as often as not (`| grep`, `| cat`, `| less -R`).
   */
  out(text: string): void;
  /** A line to stderr, guarded the same way. */
  err(text: string): void;
}

/**
 * The real process streams. A reader that goes away (`| head -1`) makes the
 * next write fail with EPIPE: that is not an error of the command, so it is
 * recorded in `closed` (main then ends quietly) instead of crashing the
 * process with a stack trace. A command that took the streams' failures
 * (takeOutputErrors: `serve`) hears of them from its own streams instead.
 */
export function processIO(): IO {
  const gone = new AbortController();
  let taken = false;
  const onError = (err: NodeJS.ErrnoException) => {
    if (taken) return;
    // Once a reader is gone, later writes fail too (EPIPE, ERR_STREAM_DESTROYED): all expected.
    if (err.code === 'EPIPE' || gone.signal.aborted) {
      gone.abort();
      return;
    }
    throw err;
  };
  process.stdout.on('error', onError);
  process.stderr.on('error', onError);
  return {
    stdout: process.stdout,
    stderr: process.stderr,
    stdin: process.stdin,
    stdoutIsTTY: Boolean(process.stdout.isTTY),
    stderrIsTTY: Boolean(process.stderr.isTTY),
    stdinIsTTY: Boolean(process.stdin.isTTY),
    get columns() {
      return process.stdout.isTTY ? process.stdout.columns : undefined;
    },
    get rows() {
      return process.stdout.isTTY ? process.stdout.rows : undefined;
    },
    closed: gone.signal,
    takeOutputErrors: () => {
      taken = true;
    },
    lastWork: new Set(),
    onSignal: (handler) => {
      process.on('SIGINT', handler);
      process.on('SIGTERM', handler);
      return () => {
        process.off('SIGINT', handler);
        process.off('SIGTERM', handler);
      };
    },
  };
}

/** NO_COLOR (any non-empty value), TERM=dumb and --no-color turn colour off; FORCE_COLOR turns it on. */
export function colorLevel(isTTY: boolean, env: NodeJS.ProcessEnv, noColorFlag: boolean): 0 | 1 {
  if (noColorFlag || (env.NO_COLOR !== undefined && env.NO_COLOR !== '')) return 0;
  if (env.FORCE_COLOR !== undefined && env.FORCE_COLOR !== '0' && env.FORCE_COLOR !== 'false') return 1;
  if (env.TERM === 'dumb') return 0;
  return isTTY ? 1 : 0;
}

/** A positive whole number, or undefined. */
const size = (v: number | string | undefined): number | undefined => {
  const n = typeof v === 'number' ? v : v !== undefined && /^\d+$/.test(v.trim()) ? Number(v) : NaN;
  return Number.isInteger(n) && n > 0 ? n : undefined;
};

export function makeTerm(io: IO, env: NodeJS.ProcessEnv, noColorFlag = false): Term {
  const line = (text: string) => (text.endsWith('\n') ? text : `${text}\n`);
  const outLevel = colorLevel(io.stdoutIsTTY, env, noColorFlag);
  const errLevel = colorLevel(io.stderrIsTTY, env, noColorFlag);
  return {
    io,
    color: new Chalk({ level: outLevel }),
    errColor: new Chalk({ level: errLevel }),
    canPrompt: io.stdinIsTTY && io.stdoutIsTTY && !env.PASARELA_NO_PROMPT,
    columns: () => (io.stdoutIsTTY ? (size(io.columns) ?? size(env.COLUMNS)) : undefined),
    rows: () => (io.stdoutIsTTY ? (size(io.rows) ?? size(env.LINES)) : undefined),
    // JSON stays JSON with the same value: a control character can only be inside a string, where its escape means the same.
    out: (text) => void io.stdout.write(line(guardLine(text, outLevel > 0))),
    // (Some messages on stderr are coloured with the stdout palette: allow colour when either stream has it.)
    err: (text) => void io.stderr.write(line(guardLine(text, errLevel > 0 || outLevel > 0))),
  };
}

/** All of stdin as text, trimmed (a key piped in, kept out of the process list). */
export async function readStdin(stream: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(Buffer.isBuffer(c) ? c : Buffer.from(String(c)));
  return Buffer.concat(chunks).toString('utf8').trim();
}
