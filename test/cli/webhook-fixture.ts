import { createHmac } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { expect } from 'vitest';
import { numeroNuevo } from '../helpers/expect.js';
import { api, startTestServer, type TestServer } from '../helpers/server.js';

/**
 * What both `webhook` test files run against: a server that may deliver to
 * loopback (allowPrivateUrls) and retries quickly, a client with 100 credits
 * and one line, and a local receiver that records every request and answers
 * 201, or 500 while `failing()` says so.
 */

export interface Hit {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

export const SECRET = 'un-secreto-de-prueba-de-32-chars!';

export interface WebhookWorld {
  s: TestServer;
  clientKey: string;
  celularId: number;
  celularKey: string;
  receiver: Server;
  receiverUrl: string;
  hits: Hit[];
}

export async function startWebhookWorld(failing: () => boolean = () => false): Promise<WebhookWorld> {
  const s = await startTestServer({ allowPrivateUrls: true, webhookRetryMs: 200, queue: { gapMinMs: 0, gapMaxMs: 0 } });
  const c = await api(s.url, 'POST', '/admin/clientes', { key: s.adminToken, json: { nombre: 'Hooks', email: 'h@example.com', saldo: 100 } });
  const clientKey = c.body.api_key as string;
  const cel = await api(s.url, 'POST', '/api/celular_crear.php', { key: clientKey, json: { numero: numeroNuevo() } });
  const hits: Hit[] = [];
  const receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      hits.push({ path: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      const fail = failing();
      res.writeHead(fail ? 500 : 201, { 'content-type': 'text/plain' });
      res.end(fail ? 'boom' : 'created');
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  const receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  return { s, clientKey, celularId: cel.body.celular_id as number, celularKey: cel.body.api_key as string, receiver, receiverUrl, hits };
}

/** The Standard Webhooks check a receiver would run (raw-secret format), plus the hex one. */
export function expectSigned(h: Hit, secret: string): void {
  const headers = Object.fromEntries(Object.entries(h.headers).map(([k, v]) => [k, String(v)]));
  expect(() => new Webhook(secret, { format: 'raw' }).verify(h.body, headers)).not.toThrow();
  expect(h.headers['x-service-signature']).toBe(`sha256=${createHmac('sha256', secret).update(h.body).digest('hex')}`);
  expect(h.headers['webhook-id']).toBe(JSON.parse(h.body).id);
}

/** The client's webhook as the API shows it. */
export async function webhookView(w: Pick<WebhookWorld, 's' | 'clientKey'>): Promise<any> {
  return (await api(w.s.url, 'GET', '/api/webhook.php', { key: w.clientKey })).body;
}

/** One delivery of the client's, by id (among its last 50). */
export async function entrega(w: Pick<WebhookWorld, 's' | 'clientKey'>, id: string): Promise<any> {
  const r = await api(w.s.url, 'GET', '/api/webhook_entregas.php?limit=50', { key: w.clientKey });
  return r.body.entregas.find((e: { id: string }) => e.id === id);
}
