import { CliError, EXIT, exitForStatus } from './exit-codes.js';

/**
 * The CLI's only way to the service: HTTP with undici. Non-2xx answers become
 * CliErrors carrying the server's body and the exit code for its status.
 */
export interface CallOptions {
  key?: string;
  json?: Record<string, unknown>;
  query?: Record<string, string | number | undefined>;
  timeoutMs?: number;
}

export class ApiClient {
  constructor(readonly baseUrl: string) {}

  async call<T = Record<string, unknown>>(method: 'GET' | 'POST' | 'PATCH' | 'DELETE', path: string, opts: CallOptions = {}): Promise<T> {
    const url = new URL(path.replace(/^\//, ''), this.baseUrl.endsWith('/') ? this.baseUrl : `${this.baseUrl}/`);
    for (const [k, v] of Object.entries(opts.query ?? {})) if (v !== undefined) url.searchParams.set(k, String(v));
    const headers: Record<string, string> = { accept: 'application/json', 'user-agent': 'pasarela-cli' };
    if (opts.key) headers.authorization = `Bearer ${opts.key}`;
    let body: string | undefined;
    if (opts.json) {
      headers['content-type'] = 'application/json';
      body = JSON.stringify(opts.json);
    }
    const timeout = opts.timeoutMs ?? 30_000;
    // Loaded on first use: commands that never call the server start faster.
    const { request } = await import('undici');
    let res;
    try {
      res = await request(url, { method, headers, body, headersTimeout: timeout, bodyTimeout: timeout });
    } catch (err) {
      const code = (err as { code?: string }).code ?? '';
      throw new CliError(`cannot reach the server at ${this.baseUrl} (${code || (err as Error).message}); is \`pasarela serve\` running?`, EXIT.UNREACHABLE);
    }
    const text = await res.body.text();
    let parsed: unknown;
    try {
      parsed = text === '' ? {} : JSON.parse(text);
    } catch {
      throw new CliError(`the server at ${this.baseUrl} answered ${res.statusCode} with a body that is not JSON; is it a pasarela server?`, res.statusCode >= 500 ? EXIT.SERVER : EXIT.ERROR);
    }
    if (res.statusCode >= 200 && res.statusCode < 300) return parsed as T;
    const b = parsed as { error?: string; retry_after?: number };
    const retry = b.retry_after !== undefined ? ` (retry in ${b.retry_after} s)` : '';
    throw new CliError(`${b.error ?? `HTTP ${res.statusCode}`}${retry}`, exitForStatus(res.statusCode), parsed);
  }
}

/** Lets the process end at once instead of waiting for idle keep-alive sockets. */
export async function closeConnections(): Promise<void> {
  const { getGlobalDispatcher } = await import('undici');
  await getGlobalDispatcher().close();
}
