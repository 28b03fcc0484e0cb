import type { EntregaView } from '../../src/core/api/views.js';
import { createHmac } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { afterAll, expect } from 'vitest';
import { until } from '../helpers/poll.js';
import { systemClock } from '../../src/core/time/clock.js';
import type { ServeOptions } from '../../src/server/serve.js';
import { pgSchema } from '../contract/adapters.js';
import { api, startTestServer, type TestServer } from '../helpers/server.js';
import { schemaUrl } from '../helpers/services.js';

/**
 * Shared pieces of the webhook HTTP suites (webhook-*.test.ts): a real
 * receiver on 127.0.0.1 that records every request, the two signature checks
 * a receiver would run, and waits on deliveries.
 */

export interface Hit {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  /** The raw body bytes, as sent. */
  raw: Buffer;
  body: string;
  json: any;
  /** Date.now() when the request ended. */
  at: number;
}

/** A status code, a status with extra headers, or no answer at all. */
export type Answer = number | 'hang' | { status: number; headers?: Record<string, string> };

export interface Receiver {
  url: string;
  hits: Hit[];
  /** What the next requests get: a status code, or no answer at all. */
  answer: Answer | ((hit: Hit) => Answer);
  /** Requests left hanging so far (closed with the receiver). */
  hanging: ServerResponse[];
  /** Hits of one event id, in arrival order. */
  of(id: string): Hit[];
  /** Waits for a hit that matches (default: any), returns it. */
  wait(pred?: (h: Hit) => boolean, ms?: number, what?: string): Promise<Hit>;
  close(): Promise<void>;
}

export async function startReceiver(answer: Receiver['answer'] = 200): Promise<Receiver> {
  const r: Receiver = {
    url: '',
    hits: [],
    answer,
    hanging: [],
    of: (id) => r.hits.filter((h) => h.headers['webhook-id'] === id),
    wait: async (pred = () => true, ms = 5000, what = 'a webhook request') => {
      return until(() => r.hits.find(pred), { what, timeoutMs: ms });
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const res of r.hanging) res.destroy();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      let json: unknown;
      try {
        json = JSON.parse(raw.toString('utf8'));
      } catch {
        json = undefined;
      }
      const hit: Hit = { method: req.method ?? '', path: req.url ?? '', headers: req.headers, raw, body: raw.toString('utf8'), json, at: Date.now() };
      r.hits.push(hit);
      const a = typeof r.answer === 'function' ? r.answer(hit) : r.answer;
      if (a === 'hang') {
        r.hanging.push(res);
        return;
      }
      const status = typeof a === 'number' ? a : a.status;
      const extra = typeof a === 'number' ? {} : (a.headers ?? {});
      res.writeHead(status, { 'content-type': 'text/plain', ...(status >= 300 && status < 400 ? { location: `${r.url}/elsewhere` } : {}), ...extra });
      res.end(status >= 200 && status < 300 ? 'ok' : 'no');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  r.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return r;
}

/** The one poller (helpers/poll.ts) in the call shape the webhook suites use. */
export const waitFor = (cond: () => boolean | Promise<boolean>, what = 'condition', ms = 5000): Promise<true> => until(cond, { what, timeoutMs: ms });

export const sleep = (ms: number) => new Promise((res) => setTimeout(res, ms));

const flat = (h: IncomingHttpHeaders): Record<string, string> => Object.fromEntries(Object.entries(h).map(([k, v]) => [k, String(v)]));

/** Both signatures of docs/design.md §7, checked as receivers would: node:crypto on the raw body, and the Standard Webhooks library (raw-secret format). */
export function expectSigned(h: Hit, secret: string): void {
  expect(h.headers['x-service-signature']).toBe(`sha256=${createHmac('sha256', Buffer.from(secret, 'utf8')).update(h.raw).digest('hex')}`);
  expect(h.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
  const parsed = new Webhook(secret, { format: 'raw' }).verify(h.raw.toString('utf8'), flat(h.headers));
  expect(parsed).toEqual(h.json);
}

/** The common part of every delivery: method, content type, event header, webhook-id = body id, a current unix timestamp. */
export function expectEnvelope(h: Hit, evento: string, clienteId: number): void {
  expect(h.method).toBe('POST');
  expect(h.headers['content-type']).toMatch(/^application\/json/);
  expect(h.headers['x-service-event']).toBe(evento);
  expect(h.json).toBeDefined();
  expect(Object.keys(h.json).sort()).toEqual(['celular_id', 'cliente_id', 'data', 'evento', 'fecha', 'id']);
  expect(h.json).toMatchObject({ evento, cliente_id: clienteId });
  expect(h.json.id).toMatch(/^evt_[A-Za-z0-9_]+$/);
  expect(h.headers['webhook-id']).toBe(h.json.id);
  expect(h.headers['webhook-timestamp']).toMatch(/^\d{10}$/);
  expect(h.json.fecha).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
}

// ---- the API of the webhook endpoints ----
export const setWebhook = (s: TestServer, key: string, json: Record<string, unknown>) => api(s.url, 'POST', '/api/webhook.php', { key, json });
export const getWebhook = (s: TestServer, key: string) => api(s.url, 'GET', '/api/webhook.php', { key });

export type Entrega = EntregaView;

export async function entregas(s: TestServer, key: string): Promise<Entrega[]> {
  const r = await api(s.url, 'GET', '/api/webhook_entregas.php?limit=500', { key });
  expect(r.status, r.text).toBe(200);
  return r.body.entregas as Entrega[];
}

export async function entrega(s: TestServer, key: string, id: string): Promise<Entrega | undefined> {
  return (await entregas(s, key)).find((e) => e.id === id);
}

/** Waits until the delivery `id` satisfies `cond` and returns it. */
export async function waitEntrega(s: TestServer, key: string, id: string, cond: (e: Entrega) => boolean, what: string, ms = 5000): Promise<Entrega> {
  let last: Entrega | undefined;
  return until(
    async () => {
      last = await entrega(s, key, id);
      return last !== undefined && cond(last) && last;
    },
    { what: () => `${what} (delivery ${id}); last: ${JSON.stringify(last)}`, timeoutMs: ms },
  );
}

/**
 * For a PostgreSQL suite: a starter of servers, each on a fresh schema of
 * its own with the system clock and private URLs allowed, beside a receiver
 * answering 200. Every server, receiver and schema is closed after the file.
 */
export function pgServersWithReceiver(): (over?: Partial<ServeOptions>) => Promise<{ s: TestServer; R: Receiver }> {
  const close: Array<() => Promise<void>> = [];
  afterAll(async () => {
    for (const c of close.reverse()) await c();
  });
  return async (over = {}) => {
    const schema = await pgSchema();
    close.push(schema.drop);
    const R = await startReceiver(200);
    close.push(() => R.close());
    const s = await startTestServer({ store: schemaUrl(schema.schema), clock: systemClock, allowPrivateUrls: true, ...over });
    close.push(() => s.stop());
    return { s, R };
  };
}
