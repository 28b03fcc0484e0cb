import { pino, type Logger } from 'pino';
import { loggerOptions } from '../app.js';
import type { ServeConfig } from '../config.js';
import { prettyStream } from '../log-format.js';
import { logSink } from '../log-sink.js';

export interface LogOutput {
  /** Where logs go (stdout when serving for real). */
  stream?: NodeJS.WritableStream;
  /** Where a failing log output is said (stderr when serving for real); nowhere without it. */
  notice?: NodeJS.WritableStream;
  /** Pretty lines in colour. */
  color?: boolean;
}

/**
 * The logger, made before any part so every part logs from its start; the
 * API's requests log through it too (app.ts). A log output that fails drops
 * lines, counted (`dropped`, read by the metrics), and never stops the
 * server (docs/logs.md).
 */
export function makeLogger(opts: Pick<ServeConfig, 'logLevel' | 'logFormat'>, out: LogOutput): { log: Logger; dropped: () => number } {
  let dropped = 0;
  const sink = logSink(out.stream ?? process.stdout, { onDrop: (n) => (dropped += n), notice: out.notice });
  const stream = opts.logFormat === 'pretty' ? prettyStream(sink, { color: out.color ?? false }) : sink;
  const { stream: _s, ...options } = loggerOptions(opts.logLevel, stream);
  return { log: pino(options, stream), dropped: () => dropped };
}
