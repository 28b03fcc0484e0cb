import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Ctx } from './context.js';
import { CliError, EXIT } from './exit-codes.js';

/**
 * `pasarela webhook listen` (after `stripe listen`): a receiver on
 * 127.0.0.1 that the client's webhook points at while it runs. It checks both
 * signatures of DESIGN §7 (independently of the server's own code), prints
 * each event, optionally forwards it, and on SIGINT/SIGTERM puts back the
 * configuration it replaced (POST /api/webhook_restaurar.php).
 */
export interface ListenOptions {
  port: number;
  forwardTo?: string;
  eventos: string[];
  printSecret: boolean;
}

export interface WebhookView {
  ok: boolean;
  configurado: boolean;
  cliente_id: number;
  url: string;
  has_secret: boolean;
  eventos: string[];
  activo: boolean;
  updated_at: string | null;
}

/** 32 random bytes as base64url (43 characters, no `whsec_` prefix: raw-format secret). */
/** 32 random bytes, base64url, never starting with '-' (so it can be pasted after --secret). */
export function generateSecret(): string {
  for (;;) {
    const s = randomBytes(32).toString('base64url');
    if (!s.startsWith('-')) return s;
  }
}

export const TOLERANCE_SEC = 300;
const MAX_BODY = 8 * 1024 * 1024;
const FORWARD_TIMEOUT_MS = 9_000;

const header = (h: IncomingHttpHeaders, name: string): string | undefined => {
  const v = h[name];
  return Array.isArray(v) ? v[0] : v;
};

const same = (a: string, b: string): boolean => {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
};

/** Both signatures, in constant time, and a timestamp within five minutes of now (either side). */
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
  const key = Buffer.from(secret, 'utf8');
  const wantHex = `sha256=${createHmac('sha256', key).update(body).digest('hex')}`;
  const hexOk = same(wantHex, hexSig.trim().toLowerCase());
  const wantV1 = `v1,${createHmac('sha256', key).update(`${id}.${ts}.`, 'utf8').update(body).digest('base64')}`;
  // Standard Webhooks: a space-separated list of versioned signatures; any v1 match counts.
  let v1Ok = false;
  for (const s of sig.split(' ')) if (same(wantV1, s)) v1Ok = true;
  if (!hexOk && !v1Ok) return { ok: false, reason: 'neither X-Service-Signature nor webhook-signature matches the secret' };
  if (!hexOk) return { ok: false, reason: 'X-Service-Signature does not match' };
  if (!v1Ok) return { ok: false, reason: 'webhook-signature does not match' };
  return { ok: true };
}

interface Forwarded {
  status?: number;
  duracion_ms: number;
  error?: string;
}

/** Headers passed on to --forward-to: all but the hop-by-hop ones and those undici sets itself. */
const HOP = new Set(['host', 'connection', 'keep-alive', 'transfer-encoding', 'content-length', 'expect', 'upgrade', 'proxy-connection', 'te', 'trailer']);

async function forward(url: string, headers: IncomingHttpHeaders, body: Buffer): Promise<Forwarded> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers)) if (v !== undefined && !HOP.has(k)) out[k] = Array.isArray(v) ? v.join(', ') : v;
  const { request } = await import('undici');
  const start = Date.now();
  try {
    // undici.request follows no redirects, as the service's own deliveries.
    const res = await request(url, { method: 'POST', headers: out, body, headersTimeout: FORWARD_TIMEOUT_MS, bodyTimeout: FORWARD_TIMEOUT_MS });
    await res.body.dump();
    return { status: res.statusCode, duracion_ms: Date.now() - start };
  } catch (err) {
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

const str = (v: unknown): string => (v === null || v === undefined || v === '' ? '-' : String(v));
const clip = (s: string, n = 60) => (s.length > n ? `${s.slice(0, n - 1)}…` : s);

/** The human summary of an event's data, by kind (DESIGN §6). */
function summary(evento: string, data: Record<string, unknown> | undefined): string {
  const d = data ?? {};
  switch (evento) {
    case 'message.status':
      return `msg_id ${str(d.msg_id)}  estado ${str(d.estado_anterior)} -> ${str(d.estado)}${d.error ? `  error ${str(d.error)}` : ''}`;
    case 'session.status':
      return `celular ${str(d.celular_id)}  status ${str(d.status_anterior)} -> ${str(d.status)}  estado ${str(d.estado)}`;
    case 'messages.received':
      return `celular ${str(d.celular_id)}  de ${str(d.de)}  ${d.texto !== undefined && d.texto !== null ? JSON.stringify(clip(String(d.texto))) : str(d.tipo)}`;
    case 'webhook.test':
      return 'test event';
    default:
      return clip(JSON.stringify(d), 100);
  }
}

function listenOn(server: Server, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException) => {
      server.off('listening', onListening);
      reject(
        new CliError(
          err.code === 'EADDRINUSE' ? `port ${port} on 127.0.0.1 is in use; pick another with --port (0 takes any free one)` : `cannot listen on 127.0.0.1:${port}: ${err.message}`,
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
  const secret = generateSecret();

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const reply = (status: number, body: Record<string, unknown>) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (req.method !== 'POST') return reply(405, { ok: false, error: 'webhook listen accepts POST deliveries only' });
    const raw = await readBody(req);
    if (raw === null) return reply(413, { ok: false, error: 'body too large' });
    const v = verifyDelivery(secret, req.headers, raw, Math.floor(Date.now() / 1000));
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
    if (pretty) {
      term.out(`${c.green('-->')} ${c.cyan.bold(evento)} ${c.dim(id)}  ${summary(evento, obj.data as Record<string, unknown> | undefined)}  ${c.dim('(signature ok)')}`);
      if (fwd) {
        const st = fwd.status === undefined ? c.red(`failed: ${fwd.error}`) : fwd.status < 300 ? c.green(String(fwd.status)) : c.yellow(String(fwd.status));
        term.out(`${c.magenta('<--')} ${st} POST ${o.forwardTo} ${c.dim(`${fwd.duracion_ms}ms`)}`);
      }
    } else {
      term.out(JSON.stringify({ id, evento, verified: true, body: parsed, ...(fwd ? { forward: { url: o.forwardTo, ...fwd } } : {}) }));
    }
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

  // Signals are caught from now on, so one arriving during the set still leads to a restore.
  let stopped!: (sig: string) => void;
  const stop = new Promise<string>((r) => (stopped = r));
  let signals = 0;
  const onSignal = (sig: NodeJS.Signals) => {
    signals += 1;
    if (signals === 1) stopped(sig);
    else term.err('still restoring the previous webhook configuration; one moment');
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  const closeServer = () =>
    new Promise<void>((r) => {
      server.close(() => r());
      server.closeAllConnections();
    });

  try {
    const port = await listenOn(server, o.port);
    const url = `http://127.0.0.1:${port}/`;
    const before = await client.call<WebhookView>('GET', '/api/webhook.php', { key });
    if (/^http:\/\/(127\.0\.0\.1|localhost|\[::1\]):[0-9]+\/$/.test(before.url)) {
      term.err(
        ec.yellow(
          `note: the webhook now points at ${before.url} and will point there again when this listen ends. If that is a \`webhook listen\` that did not exit cleanly, stop this one and run \`pasarela webhook restore\` first.`,
        ),
      );
    }
    try {
      await client.call<WebhookView>('POST', '/api/webhook.php', { key, json: { url, secret, eventos: o.eventos, activo: true } });
    } catch (err) {
      if (err instanceof CliError && err.exitCode === EXIT.ERROR) {
        throw new CliError(
          `the server refused ${url} as the webhook URL: ${err.message}. ` +
            'The service refuses loopback and private addresses unless it runs with `pasarela serve --allow-private-urls`; `webhook listen` needs that, and a server on this machine (it delivers to 127.0.0.1).',
          EXIT.ERROR,
          err.body,
        );
      }
      throw err;
    }
    const to = o.forwardTo ? ` and on to ${o.forwardTo}` : '';
    const shown = o.printSecret ? `(secret: ${secret})` : '(secret hidden; --print-secret shows it)';
    term.err(`Ready: forwarding ${o.eventos.join(',')} events to ${url}${to} ${shown}. Ctrl-C puts back the previous webhook.`);

    const sig = await stop;
    term.err(`${sig}: putting back the previous webhook configuration`);
    await closeServer();
    await restore(ctx, key, url);
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    if (server.listening) await closeServer();
  }
}

/** Puts back what listen replaced, unless someone has changed the webhook meanwhile. */
async function restore(ctx: Ctx, key: string, ours: string): Promise<void> {
  const client = ctx.client();
  const now = await client.call<WebhookView>('GET', '/api/webhook.php', { key, timeoutMs: 10_000 });
  if (now.url !== ours) {
    ctx.term.err(`The webhook was changed while listening (it points at ${now.url || 'nothing'}); left as is.`);
    return;
  }
  try {
    const b = await client.call<WebhookView>('POST', '/api/webhook_restaurar.php', { key, timeoutMs: 10_000 });
    ctx.term.err(b.configurado ? `Restored the webhook: ${b.url} (${b.eventos.join(',')}${b.activo ? '' : ', inactive'}).` : 'Removed the webhook (none was configured before).');
  } catch (err) {
    if (!(err instanceof CliError) || err.exitCode !== EXIT.ERROR) throw err;
    // 409: nothing kept to go back to; do not leave the webhook pointing at a closed port.
    await client.call('DELETE', '/api/webhook.php', { key, timeoutMs: 10_000 });
    ctx.term.err('Nothing to restore; removed the listen webhook.');
  }
}
