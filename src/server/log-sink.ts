import { fstatSync, writeSync } from 'node:fs';
import { Writable } from 'node:stream';

/**
 * Where `serve`'s log lines go last (docs/logs.md, "When the log cannot be
 * written"): a log output that fails (a full disk, an I/O error, a pipe
 * whose reader went away, a closed descriptor) never stops the service. The
 * lines it cannot take are dropped and counted (`onDrop`, the
 * `pasarela_log_lines_dropped_total` metric), and the failure is said once on
 * stderr, if that still works; the service goes on.
 *
 * A file or a device (`serve >> /var/log/pasarela.log`) is written line by
 * line with writeSync, as Node writes such a stdout itself, but each failure
 * is of that line only: once the disk has room again, lines are written
 * again (and that is said too). A pipe or a socket is written through its
 * stream; once it fails (EPIPE: the reader went away) it stays failed, every
 * later line dropped. Lines a slow reader has not taken yet are held up to
 * MAX_HELD_BYTES; past that, lines are dropped rather than held without bound.
 */

/** Bytes of log lines held for a pipe whose reader is slower than the log. */
export const MAX_HELD_BYTES = 4 * 1024 * 1024;

export interface LogSinkOptions {
  /** Told how many lines were dropped, each time some are. */
  onDrop: (lines: number) => void;
  /** Where the failure (and a recovery) is said: stderr. Its own failures are ignored. */
  notice?: NodeJS.WritableStream;
  /** Bytes held for a slow reader before lines are dropped; MAX_HELD_BYTES by default. */
  maxHeldBytes?: number;
}

/** Lines in a chunk of pino's output (one per line; a chunk without a newline counts as one). */
const linesIn = (text: string): number => {
  let n = 0;
  for (let i = text.indexOf('\n'); i >= 0; i = text.indexOf('\n', i + 1)) n += 1;
  return Math.max(n, 1);
};

const reasonOf = (err: unknown): string => {
  const e = err as NodeJS.ErrnoException | undefined;
  return e?.message ?? String(err);
};

/** The descriptor of `out` when it is a file or a device (not a terminal, pipe or socket): written with writeSync. */
function fileDescriptor(out: NodeJS.WritableStream): number | undefined {
  const fd = (out as { fd?: unknown }).fd;
  if (typeof fd !== 'number' || (out as { isTTY?: boolean }).isTTY) return undefined;
  try {
    const st = fstatSync(fd);
    return st.isFile() || st.isCharacterDevice() ? fd : undefined;
  } catch {
    return undefined;
  }
}

/** A writable for pino (or the pretty format) over `out` that never throws, never emits 'error' and never holds more than a bound. */
export function logSink(out: NodeJS.WritableStream, opts: LogSinkOptions): Writable {
  const maxHeld = opts.maxHeldBytes ?? MAX_HELD_BYTES;
  let failing = false;
  let dropped = 0;
  const say = (text: string): void => {
    const n = opts.notice;
    if (!n) return;
    try {
      n.write(text, () => undefined);
    } catch {
      // stderr is gone too: nothing left to tell.
    }
  };
  const drop = (lines: number, err: unknown): void => {
    dropped += lines;
    opts.onDrop(lines);
    if (failing) return;
    failing = true;
    say(`pasarela: the log output failed (${reasonOf(err)}): log lines are dropped and counted in pasarela_log_lines_dropped_total; the service goes on\n`);
  };
  const recovered = (): void => {
    if (!failing) return;
    failing = false;
    say(`pasarela: the log output works again (${dropped} lines dropped so far)\n`);
  };

  const fd = fileDescriptor(out);
  /** A file line cut short by a failure: the next line starts on a line of its own. */
  let cut = false;
  const writeFile = (text: string): void => {
    let buf = Buffer.from(cut ? `\n${text}` : text, 'utf8');
    try {
      while (buf.length > 0) {
        const n = writeSync(fd!, buf);
        cut = n < buf.length;
        buf = buf.subarray(n);
      }
      recovered();
    } catch (err) {
      drop(linesIn(text), err);
    }
  };

  /** A stream that failed for good (its reader went away): every later line is dropped. */
  let broken = false;
  if (fd === undefined) {
    out.on('error', (err: unknown) => {
      broken = true;
      if (!failing) drop(0, err);
    });
  }
  const writeStream = (text: string): void => {
    const o = out as NodeJS.WritableStream & { destroyed?: boolean; writableLength?: number };
    if (broken || o.destroyed || !o.writable) return drop(linesIn(text), 'the output is closed');
    if ((o.writableLength ?? 0) > maxHeld) return drop(linesIn(text), `its reader is more than ${maxHeld} bytes behind`);
    try {
      out.write(text, (err?: Error | null) => {
        if (err) {
          broken = true;
          drop(linesIn(text), err);
        }
      });
      if (!broken) recovered();
    } catch (err) {
      broken = true;
      drop(linesIn(text), err);
    }
  };

  return new Writable({
    decodeStrings: false,
    write(chunk: string | Buffer, _enc, cb) {
      const text = String(chunk);
      if (fd === undefined) writeStream(text);
      else writeFile(text);
      cb();
    },
  });
}
