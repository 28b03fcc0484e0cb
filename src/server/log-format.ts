import { Writable } from 'node:stream';
import { Chalk, type ChalkInstance } from 'chalk';
import { cellSafe, escapeControls } from '../shared/terminal-text.js';
import { toText } from '../core/api/to-text.js';
import { LOG_EVENTS } from './log-events.js';

/**
 * `serve --log-format pretty` (docs/logs.md): pino writes its JSON lines
 * into this stream, which writes one readable line per entry instead:
 *
 *     12:03:04.123 INFO  3f2a9c01d4e5 GET /api/enviar.php 200 4.21ms from 127.0.0.1
 *     12:03:09.870 INFO  line 3 (cliente 1) connected → logged_out instancia=pasarela-3 estado=desconectado
 *
 * It reformats what pino already wrote, so what pino redacted (credentials
 * in headers, bodies, query strings) is never seen here. Values that come
 * from outside are shown with their control characters escaped, so a log
 * line cannot move the cursor or forge another line.
 */
export const LOG_FORMATS = ['pretty', 'json'] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];

const LEVELS: Record<number, string> = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO', 40: 'WARN', 50: 'ERROR', 60: 'FATAL' };

type Entry = Record<string, unknown>;

const pad = (n: number, w = 2) => String(n).padStart(w, '0');

/** Local time of day with milliseconds: 12:03:04.123. */
function clockTime(ms: number): string {
  const d = new Date(ms);
  return `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}.${pad(d.getMilliseconds(), 3)}`;
}

/** A value after `k=`: bare when it is one plain word, JSON (quoted, escaped) otherwise. */
function value(v: unknown): string {
  if (v === null || v === undefined) return '-';
  if (typeof v === 'string') return v !== '' && /^[^\s"=\\]+$/.test(v) ? escapeControls(v) : escapeControls(JSON.stringify(v));
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return escapeControls(JSON.stringify(v));
}

/** Free text inside the sentence: one line, controls escaped. */
const text = (v: unknown): string => cellSafe(v === null || v === undefined ? '-' : toText(v));

/** `k=v` pairs of what is left, nested objects as dotted keys. */
function pairs(rest: Entry, c: ChalkInstance, prefix = ''): string[] {
  const out: string[] = [];
  for (const [k, v] of Object.entries(rest)) {
    if (v === undefined) continue;
    if (v && typeof v === 'object' && !Array.isArray(v)) out.push(...pairs(v as Entry, c, `${prefix}${k}.`));
    else out.push(`${c.dim(`${cellSafe(prefix + k)}=`)}${value(v)}`);
  }
  return out;
}

/** Takes `keys` out of `e` and returns their values in order. */
function take(e: Entry, ...keys: string[]): unknown[] {
  return keys.map((k) => {
    const v = e[k];
    delete e[k];
    return v;
  });
}

/** Sentences of the events of log-events.ts; what they do not say stays as k=v. */
const EVENTS: Record<string, (e: Entry, c: ChalkInstance) => string> = {
  // app.ts's clientErrorHandler: a request refused before it could be routed (a timeout, a malformed request).
  [LOG_EVENTS.requestRefused]: (e, c) => {
    const [res, code, from] = take(e, 'res', 'code', 'remoteAddress');
    const status = res && typeof res === 'object' ? (res as Entry).statusCode : undefined;
    return [statusText(status, c), `refused before routing: ${text(code)}`, ...(from === undefined ? [] : [c.dim(`from ${text(from)}`)])].join(' ');
  },
  [LOG_EVENTS.lineStatus]: (e) => {
    const [celular, cliente, from, to] = take(e, 'celular_id', 'cliente_id', 'from', 'to');
    return `line ${text(celular)} (cliente ${text(cliente)}) ${from === null || from === undefined ? 'new' : text(from)} → ${text(to)}`;
  },
  [LOG_EVENTS.lineHolder]: (e) => {
    const [celular, from, to, reason] = take(e, 'celular_id', 'from', 'to', 'reason');
    const node = (n: unknown) => (n === null || n === undefined ? 'free' : `node ${text(n)}`);
    return `line ${text(celular)} session ${node(from)} → ${node(to)} (${text(reason)})`;
  },
  [LOG_EVENTS.lineBraked]: (e) => {
    const [celular, cliente, braked, reason] = take(e, 'celular_id', 'cliente_id', 'braked', 'reason');
    return `line ${text(celular)} (cliente ${text(cliente)}) ${braked === true ? 'braked, its queue waits for a resume' : 'health alert'}: ${text(reason)}`;
  },
  [LOG_EVENTS.lineResumed]: (e) => {
    const [celular, cliente, by] = take(e, 'celular_id', 'cliente_id', 'by');
    return `line ${text(celular)} (cliente ${text(cliente)}) resumed by ${text(by)}`;
  },
  [LOG_EVENTS.messageError]: (e) => {
    const [msgId, celular, cliente, error] = take(e, 'msg_id', 'celular_id', 'cliente_id', 'error');
    return `message ${text(msgId)} (line ${text(celular)}, cliente ${text(cliente)}) ended in error: ${text(error)}`;
  },
  [LOG_EVENTS.webhookFailing]: (e) => {
    const [cliente, failures, error] = take(e, 'cliente_id', 'failures', 'error');
    return `webhook receiver of cliente ${text(cliente)} failing: ${text(failures)} attempts in a row, the last: ${text(error)}`;
  },
  [LOG_EVENTS.webhookRecovered]: (e) => {
    const [cliente, failures] = take(e, 'cliente_id', 'failures');
    return `webhook receiver of cliente ${text(cliente)} delivering again after ${text(failures)} failed attempts`;
  },
  [LOG_EVENTS.webhookGivenUp]: (e) => {
    const [cliente, intentos, error] = take(e, 'cliente_id', 'intentos', 'error');
    return `webhook delivery for cliente ${text(cliente)} given up after ${text(intentos)} attempts: ${text(error)}`;
  },
};

function levelLabel(level: unknown, c: ChalkInstance): string {
  const n = typeof level === 'number' ? level : 30;
  const label = (LEVELS[n] ?? String(level)).padEnd(5);
  if (n >= 50) return c.red.bold(label);
  if (n >= 40) return c.yellow(label);
  if (n >= 30) return c.green(label);
  return c.gray(label);
}

function statusText(status: unknown, c: ChalkInstance): string {
  const s = typeof status === 'number' ? status : Number(status);
  const t = text(status);
  if (s >= 500) return c.red(t);
  if (s >= 400) return c.yellow(t);
  if (s >= 300) return c.cyan(t);
  return c.green(t);
}

/** One pino entry as a readable line (and, for errors and worse, the error's stack frames below it). */
export function formatEntry(entry: Entry, c: ChalkInstance): string {
  const e: Entry = { ...entry };
  const [level, time, msg, reqId, event] = take(e, 'level', 'time', 'msg', 'reqId', 'event');
  take(e, 'pid', 'hostname');
  const head = [c.dim(typeof time === 'number' ? clockTime(time) : text(time)), levelLabel(level, c)];
  if (reqId !== undefined) head.push(c.magenta(text(reqId)));

  let sentence: string;
  const req = e.req as Entry | undefined;
  if (req && typeof req === 'object' && 'method' in req) {
    // A request's line: method, URL (masked by the serializer), then status and time when it completed.
    const r: Entry = { ...req };
    const [method, url, from] = take(r, 'method', 'url', 'remoteAddress');
    delete e.req;
    if (Object.keys(r).length > 0) e.req = r;
    const parts = [text(method), text(url)];
    const res = e.res as Entry | undefined;
    if (msg === 'request completed' && res && typeof res === 'object') {
      delete e.res;
      const [rt] = take(e, 'responseTime');
      parts.push(statusText(res.statusCode, c), `${text(rt)}ms`);
    } else parts.push(c.dim(`(${text(msg)})`));
    if (from !== undefined) parts.push(c.dim(`from ${text(from)}`));
    sentence = parts.join(' ');
  } else if (typeof event === 'string' && EVENTS[event]) {
    sentence = EVENTS[event](e, c);
  } else {
    if (event !== undefined) e.event = event;
    sentence = text(msg);
  }

  // An error: its message (and code) inline; its stack frames below, for errors and worse.
  let stack = '';
  const err = e.err as Entry | undefined;
  if (err && typeof err === 'object') {
    delete e.err;
    const [message, st, , code] = take({ ...err }, 'message', 'stack', 'type', 'code');
    e.err = message;
    if (code !== undefined) e.err_code = code;
    if (typeof level === 'number' && level >= 50 && typeof st === 'string') {
      const frames = st.split('\n').filter((l) => /^\s+at /.test(l));
      if (frames.length > 0) stack = `\n${frames.map((l) => c.dim(`    ${escapeControls(l.trim())}`)).join('\n')}`;
    }
  }
  return [...head, sentence, ...pairs(e, c)].join(' ') + stack;
}

/**
 * A writable for pino's `stream` option that writes pretty lines to `out`.
 * A line that is not a JSON object (nothing pino writes) passes through,
 * its control characters escaped.
 */
export function prettyStream(out: NodeJS.WritableStream, opts: { color: boolean }): Writable {
  const c = new Chalk({ level: opts.color ? 1 : 0 });
  let partial = '';
  const line = (l: string): string => {
    let parsed: unknown;
    try {
      parsed = JSON.parse(l);
    } catch {
      return escapeControls(l);
    }
    return parsed && typeof parsed === 'object' && !Array.isArray(parsed) ? formatEntry(parsed as Entry, c) : escapeControls(l);
  };
  const flush = (s: string): void => {
    const lines = s.split('\n');
    partial = lines.pop() ?? '';
    const done = lines.filter((l) => l !== '').map(line);
    if (done.length > 0) out.write(`${done.join('\n')}\n`);
  };
  return new Writable({
    decodeStrings: false,
    write(chunk: string | Buffer, _enc, cb) {
      flush(partial + String(chunk));
      cb();
    },
    final(cb) {
      if (partial !== '') out.write(`${line(partial)}\n`);
      partial = '';
      cb();
    },
  });
}
