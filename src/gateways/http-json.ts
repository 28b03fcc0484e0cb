import { Agent, request } from 'undici';
import { GatewayFailure } from '../core/ports/gateway.js';
import { FileBodyError, jsonBody } from './json-body.js';

/**
 * JSON over HTTP to a gateway the operator configured (`--gateway-url`). The
 * URL is trusted configuration, so no private-address checks here (unlike
 * media and webhook URLs). Transport failures become transient
 * GatewayFailures; HTTP statuses are left to the adapter to classify.
 * A body holding a file (json-body.ts) is streamed from disk. Each call has
 * one deadline for all of it (connect, upload, headers, reading the answer),
 * so a gateway that reads or answers a byte at a time is cut there, and the
 * answer read is bounded (MAX_ANSWER_BYTES).
 */
export interface JsonReply {
  status: number;
  body: unknown;
  headers: Record<string, string | string[] | undefined>;
}

export interface CallOptions {
  /** The body, as JSON; a Base64File in it is streamed (json-body.ts). */
  json?: unknown;
  query?: Record<string, string>;
  /** The whole call's deadline; longer for sends (Evolution holds the call while it shows "typing"). */
  timeoutMs?: number;
}

/** Gateways answer small JSON (a QR image is the largest, a few kB): more is refused, not read. */
export const MAX_ANSWER_BYTES = 1024 * 1024;

class AnswerTooLarge extends Error {}

/** The answer's bytes, refusing past `max`. */
async function readAnswer(body: AsyncIterable<Buffer> & { destroy(): void }, max: number): Promise<string> {
  const chunks: Buffer[] = [];
  let n = 0;
  for await (const chunk of body) {
    n += chunk.length;
    if (n > max) {
      body.destroy();
      throw new AnswerTooLarge();
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** Transport errors raised before any byte of the request could reach the gateway. */
const NEVER_CONNECTED = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'UND_ERR_CONNECT_TIMEOUT', 'ERR_INVALID_URL']);

export class GatewayHttp {
  private readonly agent: Agent;

  constructor(private readonly opts: { name: string; baseUrl: string; headers: Record<string, string>; timeoutMs: number }) {
    this.agent = new Agent({ connections: 32, keepAliveTimeout: 10_000 });
  }

  async call(method: 'GET' | 'POST' | 'PUT' | 'DELETE', path: string, o: CallOptions = {}): Promise<JsonReply> {
    const url = new URL(path.replace(/^\//, ''), this.opts.baseUrl.endsWith('/') ? this.opts.baseUrl : `${this.opts.baseUrl}/`);
    for (const [k, v] of Object.entries(o.query ?? {})) url.searchParams.set(k, v);
    const timeout = o.timeoutMs ?? this.opts.timeoutMs;
    const headers: Record<string, string> = { accept: 'application/json', ...this.opts.headers };
    const json = o.json === undefined ? undefined : jsonBody(o.json);
    if (json) headers['content-type'] = 'application/json';
    if (json?.kind === 'file') headers['content-length'] = String(json.length);
    try {
      const res = await request(url, {
        method,
        headers,
        // Built here, per call: a stream is read once, so a retried call opens the file again.
        body: json === undefined ? undefined : json.kind === 'text' ? json.text : json.body(),
        dispatcher: this.agent,
        headersTimeout: timeout,
        bodyTimeout: timeout,
        // The deadline of the whole call: undici's two timers above only bound the pauses.
        signal: AbortSignal.timeout(timeout),
      });
      const text = await readAnswer(res.body, MAX_ANSWER_BYTES);
      let body: unknown = text;
      try {
        body = text === '' ? null : JSON.parse(text);
      } catch {
        // Not JSON: the adapter sees the text.
      }
      return { status: res.statusCode, body, headers: res.headers };
    } catch (err) {
      const e = err as NodeJS.ErrnoException & { cause?: NodeJS.ErrnoException };
      // The gateway got a cut body, which it cannot take as a send.
      const file = [e, e.cause].find((x): x is FileBodyError => x instanceof FileBodyError);
      if (file) throw new GatewayFailure(`${file.message}; nothing was sent to the ${this.opts.name} gateway`, file.kind);
      if (err instanceof AnswerTooLarge) {
        throw new GatewayFailure(
          `${this.opts.name} gateway answered more than ${MAX_ANSWER_BYTES} bytes on ${method} ${url.pathname}`,
          'transient',
          undefined,
          true,
        );
      }
      const code = e.code ?? e.cause?.code ?? e.name;
      // AbortSignal.timeout's DOMException has the numeric code 23: its name says what it is.
      const what = /Timeout|ABORT/i.test(`${String(code)} ${e.name}`) ? `no answer within ${timeout} ms` : `unreachable (${code})`;
      // Only a connection never made proves the gateway got nothing; after that, a send may have gone.
      const mayHaveSent = !NEVER_CONNECTED.has(String(code));
      throw new GatewayFailure(`${this.opts.name} gateway ${what} on ${method} ${url.pathname}`, 'transient', undefined, mayHaveSent);
    }
  }

  close(): Promise<void> {
    return this.agent.close();
  }
}

/** A short, single-line rendering of a gateway's error body, for reasons stored on messages. */
export function describeBody(body: unknown, max = 300): string {
  const s = typeof body === 'string' ? body : JSON.stringify(body);
  const one = (s ?? '').replace(/\s+/g, ' ').trim();
  return one.length > max ? `${one.slice(0, max)}...` : one;
}

export type Json = Record<string, unknown>;

/** `v` when it is a JSON object, else an empty one (gateway bodies are read defensively). */
export const obj = (v: unknown): Json => (v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Json) : {});

/** `v` when it is a non-empty string. */
export const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);

/** A 2xx answer. */
export const ok = (r: JsonReply): boolean => r.status >= 200 && r.status < 300;

/** `text` with every value of `redact` (API keys, secrets) replaced by `***`. */
export function scrub(text: string, redact: string[]): string {
  let out = text;
  for (const s of redact) if (s) out = out.split(s).join('***');
  return out;
}
