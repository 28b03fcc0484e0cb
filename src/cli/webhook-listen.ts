import type { webhookView } from '../webhooks/config.js';
import type { escuchaView } from '../webhooks/listeners.js';
import { toText } from '../core/api/to-text.js';
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { API } from '../core/api/api-routes.js';
import { ERRORS } from '../core/api/errors.js';
import { verify } from '../webhooks/sign.js';
import type { Ctx } from './context.js';
import { ApiError, CliError } from './exit-codes.js';
import { EXIT } from '../shared/exit-codes.js';

/**
 * `pasarela webhook listen` (after `stripe listen`): a receiver on
 * 127.0.0.1 registered as a webhook listener (POST /api/webhook_escuchas.php),
 * so it gets a copy of the client's events, signed with a secret of its own,
 * while the client's webhook configuration stays as it is and keeps
 * receiving. It checks both signatures of docs/design.md §7 (with the signing
 * code's own verify), prints each event, optionally forwards it, renews the
 * listener's lease every third of it (registering again when the lease ran
 * out, after a suspend), and removes the listener on SIGINT/SIGTERM or when
 * the reader of its output goes away (`| jq` ended); a killed listen's
 * listener expires by itself.
 */
export interface ListenOptions {
  port: number;
  forwardTo?: string;
  eventos: string[];
  printSecret: boolean;
}

/** A listener as the server shows it (`vigencia_ms`: how long each renewal extends the lease). */
export type EscuchaView = ReturnType<typeof escuchaView>;

/** The webhook configuration as the server answers it; `aviso` on set only (e.g. the host does not resolve now). */
export type WebhookView = ReturnType<typeof webhookView> & { ok: boolean; aviso?: string };

export const TOLERANCE_SEC = 300;
const MAX_BODY = 8 * 1024 * 1024;
/**
 * The longest --forward-to may take, headers and body together: clearly
 * below the server's wait for a listener copy's answer (LISTENER_TIMEOUT_MS,
 * 5 s, webhooks/dispatcher.ts), so a slow app gets a 502 from here instead of
 * the server timing out and sending the same event again.
 */
export const FORWARD_TIMEOUT_MS = 4_000;

const header = (h: IncomingHttpHeaders, name: string): string | undefined => {
  const v = h[name];
  return Array.isArray(v) ? v[0] : v;
};

/**
 * Both signatures and a timestamp within five minutes of now (either side),
 * with the shared `verify` (webhooks/sign.ts), which says which signatures
 * fail; the header checks before it only make the reason precise (which header
 * is missing, how old).
 */
export function verifyDelivery(secret: string, headers: IncomingHttpHeaders, body: Buffer, nowSec: number): { ok: true } | { ok: false; reason: string } {
  const id = header(headers, 'webhook-id');
  const ts = header(headers, 'webhook-timestamp');
  const sig = header(headers, 'webhook-signature');
  const hexSig = header(headers, 'x-service-signature');
  if (!id || !ts || !sig || !hexSig) return { ok: false, reason: 'missing webhook-id, webhook-timestamp, webhook-signature or X-Service-Signature' };
  if (!/^[0-9]+$/.test(ts)) return { ok: false, reason: 'webhook-timestamp is not a number' };
  const t = Number(ts);
  if (nowSec - t > TOLERANCE_SEC) return { ok: false, reason: `webhook-timestamp is ${nowSec - t} s old (more than ${TOLERANCE_SEC} s)` };
  if (t - nowSec > TOLERANCE_SEC) return { ok: false, reason: `webhook-timestamp is ${t - nowSec} s in the future` };
  const text = body.toString('utf8');
  // (A blank X-Service-Signature is passed as it is: a mismatch, not a missing header.)
  const signed = { id, timestamp: ts, signature: sig, serviceSignature: hexSig.trim().toLowerCase() || hexSig };
  return verify(secret, signed, text, nowSec, TOLERANCE_SEC);
}

export interface Forwarded {
  status?: number;
  duracion_ms: number;
  error?: string;
}

/** Headers passed on to --forward-to: all but the hop-by-hop ones and those undici sets itself. */
const HOP = new Set(['host', 'connection', 'keep-alive', 'transfer-encoding', 'content-length', 'expect', 'upgrade', 'proxy-connection', 'te', 'trailer']);

export async function forward(url: string, headers: IncomingHttpHeaders, body: Buffer): Promise<Forwarded> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers)) if (v !== undefined && !HOP.has(k)) out[k] = Array.isArray(v) ? v.join(', ') : v;
  const { request } = await import('undici');
  const start = Date.now();
  const signal = AbortSignal.timeout(FORWARD_TIMEOUT_MS);
  try {
    // undici.request follows no redirects, as the service's own deliveries.
    const res = await request(url, { method: 'POST', headers: out, body, signal });
    await res.body.dump();
    return { status: res.statusCode, duracion_ms: Date.now() - start };
  } catch (err) {
    if (signal.aborted) return { duracion_ms: Date.now() - start, error: `no answer within ${FORWARD_TIMEOUT_MS} ms` };
    const e = err as { code?: string; message?: string };
    return { duracion_ms: Date.now() - start, error: e.code ?? e.message ?? String(err) };
  }
}

function readBody(req: IncomingMessage): Promise<Buffer | null> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size <= MAX_BODY) chunks.push(c);
    });
    req.on('end', () => resolve(size > MAX_BODY ? null : Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

const str = (v: unknown): string => (v === null || v === undefined || v === '' ? '-' : toText(v));
const clip = (s: string, n = 60) => (s.length > n ? `${s.slice(0, n - 1)}…` : s);

/** The human summary of an event's data, by kind (docs/design.md §6). */
function summary(evento: string, data: Record<string, unknown> | undefined): string {
  const d = data ?? {};
  switch (evento) {
    case 'message.status':
      return `msg_id ${str(d.msg_id)}  estado ${str(d.estado_anterior)} -> ${str(d.estado)}${d.error ? `  error ${str(d.error)}` : ''}`;
    case 'session.status':
      return `celular ${str(d.celular_id)}  status ${str(d.status_anterior)} -> ${str(d.status)}  estado ${str(d.estado)}`;
    case 'messages.received':
      return `celular ${str(d.celular_id)}  de ${str(d.de)}  ${d.texto !== undefined && d.texto !== null ? JSON.stringify(clip(toText(d.texto))) : str(d.tipo)}`;
    case 'webhook.test':
      return 'test event';
    default:
      return clip(JSON.stringify(d), 100);
  }
}

/** One event as `webhook listen` shows it: a line on a terminal, NDJSON otherwise; and what forwarding it answered. */
export function printEvent(ctx: Ctx, e: { id: string; evento: string; parsed: unknown; note: string; forwardTo?: string; fwd?: Forwarded }): void {
  const term = ctx.term;
  const c = term.color;
  const obj = e.parsed && typeof e.parsed === 'object' ? (e.parsed as Record<string, unknown>) : {};
  if (term.io.stdoutIsTTY && !ctx.json) {
    term.out(
      `${c.green('-->')} ${c.cyan.bold(e.evento)} ${c.dim(e.id)}  ${summary(e.evento, obj.data as Record<string, unknown> | undefined)}  ${c.dim(`(${e.note})`)}`,
    );
    if (e.fwd) {
      const f = e.fwd;
      const st = f.status === undefined ? c.red(`failed: ${f.error}`) : f.status < 300 ? c.green(String(f.status)) : c.yellow(String(f.status));
      term.out(`${c.magenta('<--')} ${st} POST ${e.forwardTo} ${c.dim(`${f.duracion_ms}ms`)}`);
    }
  } else {
    term.out(JSON.stringify({ id: e.id, evento: e.evento, verified: true, body: e.parsed, ...(e.fwd ? { forward: { url: e.forwardTo, ...e.fwd } } : {}) }));
  }
}

function listenOn(server: Server, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException) => {
      server.off('listening', onListening);
      reject(
        new CliError(
          err.code === 'EADDRINUSE'
            ? `port ${port} on 127.0.0.1 is in use; pick another with --port (0 takes any free one)`
            : `cannot listen on 127.0.0.1:${port}: ${err.message}`,
          EXIT.ERROR,
        ),
      );
    };
    const onListening = () => {
      server.off('error', onError);
      resolve((server.address() as AddressInfo).port);
    };
    server.once('error', onError);
    server.once('listening', onListening);
    server.listen(port, '127.0.0.1');
  });
}

export async function listen(ctx: Ctx, o: ListenOptions): Promise<void> {
  const key = ctx.key();
  const client = ctx.client();
  const term = ctx.term;
  const pretty = term.io.stdoutIsTTY && !ctx.json;
  const c = term.color;
  const ec = term.errColor;
  /** The listener registered now, and the secrets that may sign what arrives (the newest first: a delivery in flight across a new registration still verifies). */
  let current: { escucha: EscuchaView; secret: string } | undefined;
  let secrets: string[] = [];

  const check = (headers: IncomingHttpHeaders, raw: Buffer): { ok: true } | { ok: false; reason: string } => {
    const now = Math.floor(Date.now() / 1000);
    let first: { ok: false; reason: string } = { ok: false, reason: 'no listener is registered yet' };
    for (const secret of secrets) {
      const v = verifyDelivery(secret, headers, raw, now);
      if (v.ok) return v;
      if (secret === secrets[0]) first = v;
    }
    return first;
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const reply = (status: number, body: Record<string, unknown>) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (req.method !== 'POST') return reply(405, { ok: false, error: 'webhook listen accepts POST deliveries only' });
    const raw = await readBody(req);
    if (raw === null) return reply(413, { ok: false, error: 'body too large' });
    const v = check(req.headers, raw);
    let parsed: unknown;
    try {
      parsed = JSON.parse(raw.toString('utf8'));
    } catch {
      parsed = raw.toString('utf8');
    }
    const obj = parsed && typeof parsed === 'object' ? (parsed as Record<string, unknown>) : {};
    const id = str(obj.id ?? header(req.headers, 'webhook-id'));
    const evento = str(obj.evento ?? header(req.headers, 'x-service-event'));
    if (!v.ok) {
      term.err(ec.yellow(`warning: rejected delivery ${id} (${evento}): ${v.reason}; answered 401`));
      if (pretty) term.out(`${c.red('-->')} ${c.bold(evento)} ${c.dim(id)}  ${c.red('(bad signature)')}`);
      else term.out(JSON.stringify({ id, evento, verified: false, error: v.reason, body: parsed }));
      return reply(401, { ok: false, error: `signature check failed: ${v.reason}` });
    }
    let fwd: Forwarded | undefined;
    if (o.forwardTo) fwd = await forward(o.forwardTo, req.headers, raw);
    printEvent(ctx, { id, evento, parsed, note: 'signature ok', forwardTo: o.forwardTo, fwd });
    if (!fwd) return reply(200, { ok: true });
    if (fwd.status === undefined) {
      term.err(ec.yellow(`warning: forwarding ${id} to ${o.forwardTo} failed (${fwd.error}); answered 502`));
      return reply(502, { ok: false, error: `forward to ${o.forwardTo} failed: ${fwd.error}` });
    }
    // A 1xx cannot be a final answer; anything else is passed on as is.
    return reply(fwd.status < 200 ? 502 : fwd.status, { ok: fwd.status >= 200 && fwd.status < 300, forward_status: fwd.status });
  };

  const server = createServer((req, res) => {
    handle(req, res).catch((err) => {
      term.err(ec.red(`error handling a delivery: ${(err as Error).message}`));
      if (!res.headersSent) res.writeHead(500).end();
    });
  });

  // Signals are caught from now on, so one arriving during the registration still leads to a removal.
  let stopped!: (sig: string) => void;
  const stop = new Promise<string>((r) => (stopped = r));
  let firstSignalAt: number | undefined;
  const onSignal = (sig: NodeJS.Signals) => {
    if (firstSignalAt === undefined) {
      firstSignalAt = performance.now();
      stopped(sig);
    } else if (performance.now() - firstSignalAt > ECHO_MS) {
      term.err('still removing the listener; one moment');
    }
  };
  const offSignal = term.io.onSignal?.(onSignal);
  // `webhook listen | jq` whose reader went away: main ends the process then, so the removal below
  // is the command's last work (io.lastWork), which main waits for, bounded.
  const closed = term.io.closed;
  const onClosed = () => stopped('output closed');
  closed?.addEventListener('abort', onClosed, { once: true });
  let finished!: () => void;
  const removal = new Promise<void>((r) => (finished = r));
  term.io.lastWork?.add(removal);
  if (closed?.aborted) onClosed();
  const closeServer = () =>
    new Promise<void>((r) => {
      server.close(() => r());
      server.closeAllConnections();
    });

  let stopping = false;
  let timer: NodeJS.Timeout | undefined;
  let renewing: Promise<void> | undefined;
  try {
    const port = await listenOn(server, o.port);
    const url = `http://127.0.0.1:${port}/`;
    const register = async () => {
      const r = await registerListener(ctx, key, url, o.eventos);
      current = { escucha: r.escucha, secret: r.secret };
      secrets = [r.secret, ...secrets].slice(0, 2);
      return current;
    };
    const reg = await register();
    const to = o.forwardTo ? ` and on to ${o.forwardTo}` : '';
    const shown = o.printSecret ? `(secret: ${reg.secret})` : '(secret hidden; --print-secret shows it)';
    term.err(
      `Ready: forwarding ${o.eventos.join(',')} events to ${url}${to} ${shown}. ` +
        `Listener ${reg.escucha.id}, beside the webhook configuration (left as it is). Ctrl-C stops listening.`,
    );
    await noteOldListen(ctx, key);

    // Renewed every third of the lease; a lease that ran out (a suspend, a pause) is registered again.
    const everyMs = () => Math.max(100, Math.floor((current?.escucha.vigencia_ms ?? 30_000) / 3));
    const renew = async () => {
      const id = current!.escucha.id;
      try {
        const r = await client.call<{ escucha: EscuchaView }>('POST', API.webhookEscuchasRenovar, {
          key,
          query: { id },
          timeoutMs: Math.max(2000, everyMs()),
        });
        if (current?.escucha.id === id) current.escucha = r.escucha;
      } catch (err) {
        if (stopping) return;
        if (apiCodigo(err) !== LISTENER_GONE) {
          term.err(ec.yellow(`warning: could not renew the listener ${id} (${(err as Error).message}); trying again in ${Math.ceil(everyMs() / 1000)} s`));
          return;
        }
        try {
          const again = await register();
          const secretNote = o.printSecret ? ` (secret: ${again.secret})` : ' with a new secret';
          term.err(ec.yellow(`warning: the listener ${id} had expired (was this process suspended?); registered again as ${again.escucha.id}${secretNote}`));
        } catch (e) {
          term.err(
            ec.yellow(
              `warning: the listener ${id} had expired and registering again failed (${(e as Error).message}); trying again in ${Math.ceil(everyMs() / 1000)} s`,
            ),
          );
        }
      }
    };
    const schedule = () => {
      timer = setTimeout(() => {
        renewing = renew().finally(() => {
          renewing = undefined;
          if (!stopping) schedule();
        });
      }, everyMs());
    };
    schedule();

    const sig = await stop;
    stopping = true;
    clearTimeout(timer);
    await renewing;
    term.err(`${sig}: removing the listener ${current!.escucha.id}`);
    await closeServer();
    await removeListener(ctx, key, current!.escucha);
  } finally {
    stopping = true;
    clearTimeout(timer);
    offSignal?.();
    closed?.removeEventListener('abort', onClosed);
    if (server.listening) await closeServer();
    finished();
    term.io.lastWork?.delete(removal);
  }
}

/**
 * A second signal this soon after the first is the settings file's exit hook
 * (conf's atomically, via when-exit) raising the first again, not a person.
 */
const ECHO_MS = 250;

/** The server's api_codigo for a listener that is gone (removed, or its lease expired). */
const LISTENER_GONE = ERRORS.LISTENER_NOT_FOUND.codigo;
/** The api_codigo of a server's refusal; undefined for anything else. */
const apiCodigo = (err: unknown): number | undefined => (err instanceof ApiError ? err.apiCodigo : undefined);

/** The server will not deliver to this machine's 127.0.0.1 (it runs elsewhere): the stream can serve instead. */
export class ListenerUnreachable extends CliError {}

/** POST /api/webhook_escuchas.php, with what to do when the server refuses. */
async function registerListener(ctx: Ctx, key: string, url: string, eventos: string[]): Promise<{ escucha: EscuchaView; secret: string }> {
  try {
    return await ctx.client().call<{ escucha: EscuchaView; secret: string }>('POST', API.webhookEscuchas, { key, json: { url, eventos } });
  } catch (err) {
    if (!(err instanceof CliError)) throw err;
    if (apiCodigo(err) === ERRORS.INVALID_PARAMS.codigo) {
      throw new ListenerUnreachable(
        `the server refused ${url} as a webhook listener: ${err.message}. ` +
          'It delivers to its own 127.0.0.1, so `webhook listen` needs the server on this machine (or `pasarela serve --allow-private-urls` where that address is the same).',
        EXIT.ERROR,
        err.body,
      );
    }
    if (apiCodigo(err) === ERRORS.ROUTE_NOT_FOUND.codigo) {
      throw new CliError(
        `this server has no webhook listeners (POST ${API.webhookEscuchas}): it is older than this pasarela; upgrade it`,
        EXIT.ERROR,
        err.body,
      );
    }
    throw err;
  }
}

/** DELETE /api/webhook_escuchas.php; a listener already gone, or a server that does not answer, is reported, not an error: it expires by itself. */
async function removeListener(ctx: Ctx, key: string, e: EscuchaView): Promise<void> {
  try {
    await ctx.client().call('DELETE', API.webhookEscuchas, { key, query: { id: e.id }, timeoutMs: 10_000 });
    ctx.term.err(`Removed the listener ${e.id}; the webhook configuration was not touched.`);
  } catch (err) {
    if (!(err instanceof CliError)) throw err;
    if (apiCodigo(err) === LISTENER_GONE) ctx.term.err(`The listener ${e.id} had already expired; the webhook configuration was not touched.`);
    else
      ctx.term.err(
        ctx.term.errColor.yellow(
          `warning: could not remove the listener ${e.id} (${err.message}); it expires by itself within ${Math.ceil(e.vigencia_ms / 1000)} s`,
        ),
      );
  }
}

/** An older `webhook listen` replaced the configuration itself: say how to undo one that did not exit cleanly. */
async function noteOldListen(ctx: Ctx, key: string): Promise<void> {
  let cfg: WebhookView;
  try {
    cfg = await ctx.client().call<WebhookView>('GET', API.webhook, { key, timeoutMs: 10_000 });
  } catch {
    return;
  }
  if (/^http:\/\/(127\.0\.0\.1|localhost|\[::1\]):[0-9]+\/$/.test(cfg.url)) {
    ctx.term.err(
      ctx.term.errColor.yellow(
        `note: the webhook configuration points at ${cfg.url}, which looks like a \`webhook listen\` of an older pasarela that did not exit cleanly; \`pasarela webhook restore\` puts back what it replaced.`,
      ),
    );
  }
}
