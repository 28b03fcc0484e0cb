import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { ManualClock, type Clock } from '../../src/core/time/clock.js';
import type { FastifyInstance } from 'fastify';
import { SERVE_DEFAULTS, startServer, type RunningServer, type ServeOptions } from '../../src/server/serve.js';

/**
 * A real server on a loopback port with its own data directory, its JSON log
 * captured in memory. Tests talk to it over HTTP with `api`.
 */
export interface TestServer extends RunningServer {
  adminToken: string;
  logs: string[];
  clock: Clock;
  /**
   * One full look of the queue worker at the clock's time, and the sends it
   * started, ended: what a test asserts after it the worker has seen. Tests
   * move the clock and step, instead of waiting for the worker's poll.
   */
  stepQueue(): Promise<void>;
  /** Closes the server and removes its data directory. */
  stop(): Promise<void>;
}

export function tempDir(prefix = 'pasarela-test-'): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

/** Test servers whose routes `api` reaches through the app's `inject` instead of the socket (by URL). */
const injected = new Map<string, FastifyInstance>();

/**
 * `how.inject`: `api(s.url, ...)` calls go through Fastify's inject (no
 * socket, no connection): for route shape and refusal tests. The server
 * still listens, for what needs a socket (receipts, raw requests).
 */
export async function startTestServer(over: Partial<ServeOptions> = {}, how: { inject?: boolean } = {}): Promise<TestServer> {
  const dataDir = over.dataDir ?? tempDir();
  const logs: string[] = [];
  const logStream = new Writable({
    write(chunk, _enc, cb) {
      logs.push(...String(chunk).split('\n').filter(Boolean));
      cb();
    },
  });
  const clock = over.clock ?? new ManualClock(Date.now());
  const s = await startServer({ ...SERVE_DEFAULTS, port: 0, logLevel: 'info', ...over, dataDir, clock, logStream });
  const adminToken = over.adminToken ?? readFileSync(join(dataDir, 'admin-token'), 'utf8').trim();
  if (how.inject) injected.set(s.url, s.app);
  return {
    ...s,
    adminToken,
    logs,
    clock,
    stepQueue: async () => {
      const worker = s.queue;
      if (!worker) throw new Error('the queue worker runs on the background thread (system clock): it cannot be stepped');
      await worker.step();
    },
    stop: async () => {
      injected.delete(s.url);
      await s.close();
      if (!over.dataDir) rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export interface ApiOptions {
  key?: string;
  json?: unknown;
  form?: Record<string, string | string[]>;
  /** A raw body sent as is, with `contentType`. */
  raw?: string | Buffer;
  contentType?: string;
  headers?: Record<string, string>;
}

export interface ApiResponse {
  status: number;
  headers: Headers;
  body: any;
  text: string;
}

/** One HTTP call; the body is parsed as JSON when it is JSON. */
export async function api(base: string, method: string, path: string, opts: ApiOptions = {}): Promise<ApiResponse> {
  const headers: Record<string, string> = { ...(opts.headers ?? {}) };
  if (opts.key) headers.authorization = `Bearer ${opts.key}`;
  let body: string | Buffer | undefined;
  if (opts.json !== undefined) {
    headers['content-type'] = 'application/json';
    body = JSON.stringify(opts.json);
  } else if (opts.form) {
    headers['content-type'] = 'application/x-www-form-urlencoded';
    const p = new URLSearchParams();
    for (const [k, v] of Object.entries(opts.form)) for (const x of Array.isArray(v) ? v : [v]) p.append(k, x);
    body = p.toString();
  } else if (opts.raw !== undefined) {
    body = opts.raw;
    if (opts.contentType) headers['content-type'] = opts.contentType;
  }
  const app = injected.get(base);
  const res = app ? await injectCall(app, method, path, headers, body) : await fetch(base + path, { method, headers, body: body as RequestInit['body'] });
  const text = await res.text();
  let parsed: unknown = undefined;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  return { status: res.status, headers: res.headers, body: parsed, text };
}

/** One call through inject, answered in fetch's shape (a text body without a type is sent as fetch would: text/plain). */
async function injectCall(app: FastifyInstance, method: string, path: string, headers: Record<string, string>, body: string | Buffer | undefined) {
  const h = { ...headers };
  if (typeof body === 'string' && !Object.keys(h).some((k) => k.toLowerCase() === 'content-type')) h['content-type'] = 'text/plain;charset=UTF-8';
  const res = await app.inject({ method: method as 'GET', url: path, headers: h, ...(body !== undefined ? { payload: body } : {}) });
  const out = new Headers();
  for (const [k, v] of Object.entries(res.headers)) for (const x of Array.isArray(v) ? v : v === undefined ? [] : [v]) out.append(k, String(x));
  return { status: res.statusCode, headers: out, text: async () => res.payload };
}

export interface Seeded {
  clienteId: number;
  clientKey: string;
  celularId: number;
  celularKey: string;
  gatewayToken: string;
  numero: string;
}

let seq = 0;
/** A fresh client with one celular, through the public API. */
export async function seedClient(s: TestServer, opts: { saldo?: number; numero?: string; max_celulares?: number | null } = {}): Promise<Seeded> {
  seq += 1;
  const c = await api(s.url, 'POST', '/admin/clientes', {
    key: s.adminToken,
    json: { nombre: `Cliente ${seq}`, email: `c${seq}@example.com`, saldo: opts.saldo ?? 0, max_celulares: opts.max_celulares ?? null },
  });
  if (c.status !== 201) throw new Error(`seed client: ${c.status} ${c.text}`);
  const numero = opts.numero ?? `52155${String(10000000 + Math.floor(Math.random() * 89999999)).slice(0, 8)}`;
  const cel = await api(s.url, 'POST', '/api/celular_crear.php', { key: c.body.api_key, json: { numero } });
  if (cel.status !== 201) throw new Error(`seed celular: ${cel.status} ${cel.text}`);
  return {
    clienteId: c.body.cliente.id,
    clientKey: c.body.api_key,
    celularId: cel.body.celular_id,
    celularKey: cel.body.api_key,
    gatewayToken: cel.body.gateway_token,
    numero: cel.body.celular.numero,
  };
}
