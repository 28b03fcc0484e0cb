import { ApiError, CliError, exitForStatus } from './exit-codes.js';
import { EXIT } from '../shared/exit-codes.js';
import { CODIGO_INVALID_PARAMS, explainInvalid, type FieldFlags } from './field-errors.js';

/**
 * The CLI's only way to the service: HTTP through an HttpTransport (undici by
 * default). Non-2xx answers become ApiErrors carrying the server's body and
 * the exit code for its status and api_codigo.
 */
export interface CallOptions {
  key?: string;
  json?: Record<string, unknown>;
  query?: Record<string, string | number | undefined>;
  /** Extra request headers (Idempotency-Key). */
  headers?: Record<string, string>;
  timeoutMs?: number;
  /** API field -> the flag or argument that sets it, to explain a 400 in the command's terms. */
  fields?: FieldFlags;
}

/**
 * A server text without a trailing wait of its own ("; retry in N s", "; they
 * open in N s"): the hint is added once, from retry_after.
 */
function withoutRetryHint(text: string): string {
  return text.replace(/[\s;,.]*\(?\s*(?:retry|they open) in [0-9]+ s\s*\)?\.?$/i, '');
}

/** One request as the client sends it: the whole URL (query included), headers, a text body. */
export interface HttpRequest {
  method: string;
  url: URL;
  headers: Record<string, string>;
  body?: string;
  /** Deadline for the answer's headers, and again for each wait on its body. */
  timeoutMs: number;
}

/** The answer: status, headers (lower-case names) and the body as a stream of bytes. */
export interface HttpAnswer {
  statusCode: number;
  headers: Record<string, string | string[] | undefined>;
  body: AsyncIterable<Buffer | Uint8Array | string> & NodeJS.ReadableStream;
}

/**
 * How the client reaches the service. A transport rejects when no answer
 * came (refused, reset, timed out); the body stream fails when the answer is
 * cut. Tests hand main() one over Fastify's inject (no socket, no port).
 */
export type HttpTransport = (req: HttpRequest) => Promise<HttpAnswer>;

/** The real one: undici, loaded on first use (commands that never call the server start faster). */
export const undiciTransport: HttpTransport = async (req) => {
  const { request } = await import('undici');
  const res = await request(req.url, {
    method: req.method as 'GET',
    headers: req.headers,
    body: req.body,
    headersTimeout: req.timeoutMs,
    bodyTimeout: req.timeoutMs,
  });
  return { statusCode: res.statusCode, headers: res.headers, body: res.body };
};

async function readText(body: HttpAnswer['body']): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of body) chunks.push(typeof c === 'string' ? Buffer.from(c) : Buffer.from(c));
  return Buffer.concat(chunks).toString('utf8');
}

/** Connection errors that mean the request never reached any server. */
const NEVER_CONNECTED = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'UND_ERR_CONNECT_TIMEOUT']);

export class ApiClient {
  constructor(
    readonly baseUrl: string,
    private readonly transport: HttpTransport = undiciTransport,
    /** Where an API key came from (`the key from PASARELA_KEY`), said when the server refuses it (401); undefined: not said. */
    private readonly keySource?: (key: string) => string | undefined,
  ) {}

  /** A 401 for `key` says where the key came from: a stale variable or profile is the usual cause. */
  private sourced(err: ApiError, key: string | undefined): ApiError {
    const from = key !== undefined && err.status === 401 ? this.keySource?.(key) : undefined;
    if (from === undefined) return err;
    const e = new ApiError(`${err.message} (${from})`, err.exitCode, err.body, err.status, err.apiCodigo, err.retryAfter, err.reason, err.replayed);
    e.neverSent = err.neverSent;
    return e;
  }

  /** The request through the transport; one that never reached the server is exit 8, marked when nothing can have been sent. */
  private async send(req: HttpRequest): Promise<HttpAnswer> {
    try {
      return await this.transport(req);
    } catch (err) {
      const code = (err as { code?: string }).code ?? '';
      const e = new CliError(
        `cannot reach the server at ${this.baseUrl} (${code || (err as Error).message}); is \`pasarela serve\` running?`,
        EXIT.UNREACHABLE,
      );
      // No connection was ever made: the request cannot have been acted on.
      if (NEVER_CONNECTED.has(code)) e.neverSent = true;
      throw e;
    }
  }

  /** An answer's JSON body (empty: {}); a body that is not JSON is not a pasarela server's. */
  private json(status: number, text: string): unknown {
    try {
      return text === '' ? {} : JSON.parse(text);
    } catch {
      throw new CliError(
        `the server at ${this.baseUrl} answered ${status} with a body that is not JSON; is it a pasarela server?`,
        status >= 500 ? EXIT.SERVER : EXIT.ERROR,
      );
    }
  }

  /** A non-2xx answer as the ApiError `call` throws (an answer cut short reads as not JSON). */
  private async refusal(res: HttpAnswer, key: string | undefined, fields?: FieldFlags): Promise<never> {
    const text = await readText(res.body).catch(() => '\u0000');
    throw this.sourced(apiErrorOf(res.statusCode, this.json(res.statusCode, text), res.headers, fields), key);
  }

  async call<T = Record<string, unknown>>(method: 'GET' | 'POST' | 'PATCH' | 'DELETE', path: string, opts: CallOptions = {}): Promise<T> {
    const url = new URL(path.replace(/^\//, ''), this.baseUrl.endsWith('/') ? this.baseUrl : `${this.baseUrl}/`);
    for (const [k, v] of Object.entries(opts.query ?? {})) if (v !== undefined) url.searchParams.set(k, String(v));
    const headers: Record<string, string> = { accept: 'application/json', 'user-agent': 'pasarela-cli', ...opts.headers };
    if (opts.key) headers.authorization = `Bearer ${opts.key}`;
    let body: string | undefined;
    if (opts.json) {
      headers['content-type'] = 'application/json';
      body = JSON.stringify(opts.json);
    }
    const timeout = opts.timeoutMs ?? 30_000;
    const res = await this.send({ method, url, headers, body, timeoutMs: timeout });
    let text: string;
    try {
      text = await readText(res.body);
    } catch (err) {
      // The request went out and the answer was cut: whether it was acted on is unknown.
      const code = (err as { code?: string }).code ?? '';
      throw new CliError(`lost the connection to the server at ${this.baseUrl} while reading its answer (${code || (err as Error).message})`, EXIT.UNREACHABLE);
    }
    const parsed = this.json(res.statusCode, text);
    if (res.statusCode >= 200 && res.statusCode < 300) {
      // A first answer given again under its Idempotency-Key says so in the body too (`--json`); the header alone was easy to miss.
      if (res.headers['idempotent-replayed'] === 'true' && typeof parsed === 'object' && parsed !== null) (parsed as Record<string, unknown>).replayed = true;
      return parsed as T;
    }
    throw this.sourced(apiErrorOf(res.statusCode, parsed, res.headers, opts.fields), opts.key);
  }

  /**
   * A GET whose 2xx answer is a stream read as it comes (`eventos`: Server-Sent
   * Events); `timeoutMs` bounds the headers and each wait for more bytes. A
   * non-2xx answer is the same ApiError as `call` throws.
   */
  async stream(path: string, opts: CallOptions): Promise<HttpAnswer> {
    const url = new URL(path.replace(/^\//, ''), this.baseUrl.endsWith('/') ? this.baseUrl : `${this.baseUrl}/`);
    for (const [k, v] of Object.entries(opts.query ?? {})) if (v !== undefined) url.searchParams.set(k, String(v));
    const headers: Record<string, string> = { accept: 'text/event-stream, application/json', 'user-agent': 'pasarela-cli', ...opts.headers };
    if (opts.key) headers.authorization = `Bearer ${opts.key}`;
    const res = await this.send({ method: 'GET', url, headers, timeoutMs: opts.timeoutMs ?? 30_000 });
    if (res.statusCode >= 200 && res.statusCode < 300) return res;
    return this.refusal(res, opts.key, opts.fields);
  }

  /**
   * A request whose 2xx answer is bytes, not JSON (`admin backup`): they are
   * written to `sink` as they come and hashed on the way (SHA-256, hex). A
   * non-2xx answer is the same ApiError as `call` throws.
   */
  async download(
    method: 'GET' | 'POST',
    path: string,
    sink: NodeJS.WritableStream,
    opts: { key?: string; timeoutMs?: number } = {},
  ): Promise<{ headers: Record<string, string | string[] | undefined>; bytes: number; sha256: string }> {
    const url = new URL(path.replace(/^\//, ''), this.baseUrl.endsWith('/') ? this.baseUrl : `${this.baseUrl}/`);
    const headers: Record<string, string> = { accept: 'application/octet-stream, application/json', 'user-agent': 'pasarela-cli' };
    if (opts.key) headers.authorization = `Bearer ${opts.key}`;
    const timeout = opts.timeoutMs ?? 30_000;
    const res = await this.send({ method, url, headers, timeoutMs: timeout });
    if (res.statusCode < 200 || res.statusCode >= 300) await this.refusal(res, opts.key);
    const { createHash } = await import('node:crypto');
    const { Transform } = await import('node:stream');
    const { pipeline } = await import('node:stream/promises');
    const hash = createHash('sha256');
    let bytes = 0;
    const tap = new Transform({
      transform(chunk: Buffer, _enc, cb) {
        hash.update(chunk);
        bytes += chunk.length;
        cb(null, chunk);
      },
    });
    let sinkFailed: Error | undefined;
    sink.once('error', (err: Error) => {
      sinkFailed = err;
    });
    try {
      await pipeline(res.body, tap, sink);
    } catch (err) {
      // Where the bytes go failed (a full disk): the caller says which file.
      if (sinkFailed !== undefined) throw sinkFailed;
      const code = (err as { code?: string }).code ?? '';
      throw new CliError(`lost the connection to the server at ${this.baseUrl} while reading its answer (${code || (err as Error).message})`, EXIT.UNREACHABLE);
    }
    return { headers: res.headers, bytes, sha256: hash.digest('hex') };
  }
}

/** The ApiError of a non-2xx answer and its parsed JSON body. */
function apiErrorOf(status: number, parsed: unknown, headers: Record<string, string | string[] | undefined>, fields?: FieldFlags): ApiError {
  const b = (parsed ?? {}) as { error?: unknown; api_codigo?: unknown; retry_after?: unknown };
  const apiCodigo = typeof b.api_codigo === 'number' ? b.api_codigo : undefined;
  const retryAfter = typeof b.retry_after === 'number' && b.retry_after >= 0 ? b.retry_after : undefined;
  const said = typeof b.error === 'string' && b.error !== '' ? b.error : `HTTP ${status}`;
  let reason = retryAfter !== undefined ? withoutRetryHint(said) : said;
  if (status === 400 && apiCodigo === CODIGO_INVALID_PARAMS && fields) reason = explainInvalid(reason, fields);
  const message = retryAfter !== undefined ? `${reason} (retry in ${retryAfter} s)` : reason;
  const replayed = headers['idempotent-replayed'] === 'true';
  return new ApiError(message, exitForStatus(status, apiCodigo), parsed, status, apiCodigo, retryAfter, reason, replayed);
}

/** Lets the process end at once instead of waiting for idle keep-alive sockets. */
export async function closeConnections(): Promise<void> {
  const { getGlobalDispatcher } = await import('undici');
  await getGlobalDispatcher().close();
}
