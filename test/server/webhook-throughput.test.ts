import { createServer, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, seedClient, startTestServer, type Seeded, type TestServer } from '../helpers/server.js';
import { expectOk, numeroNuevo } from '../helpers/expect.js';
import { entregas, expectEnvelope, expectSigned, setWebhook, waitFor, type Hit } from './webhook-helpers.js';

/**
 * Webhook throughput (docs/webhooks.md "Delivery"): one client's events go out several
 * at a time over a few keep-alive connections, each exactly once and signed,
 * while another client's receiver hangs. Behaviour only, no timings: the
 * receiver counts requests open at once and the sockets they came on.
 */

const EVENTS = 2000;
const SECRET = 'throughput-secret-0123456789abcdefghij';

interface CountingReceiver {
  url: string;
  hits: Hit[];
  /** Most requests open at once. */
  maxOpen: number;
  sockets: Set<Socket>;
  close(): Promise<void>;
}

/** Answers 200 after `delayMs` (null: never), counting open requests and sockets. */
async function countingReceiver(delayMs: number | null): Promise<CountingReceiver> {
  let open = 0;
  const r: CountingReceiver = { url: '', hits: [], maxOpen: 0, sockets: new Set(), close: async () => {} };
  const server: Server = createServer((req, res) => {
    r.sockets.add(req.socket);
    open += 1;
    r.maxOpen = Math.max(r.maxOpen, open);
    // A timed-out attempt closes its connection: no longer open.
    res.on('close', () => (open -= 1));
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      const body = raw.toString('utf8');
      r.hits.push({
        method: req.method ?? '',
        path: req.url ?? '',
        headers: req.headers,
        raw,
        body,
        json: JSON.parse(body),
        at: Date.now(),
      });
      if (delayMs !== null) setTimeout(() => res.end('ok'), delayMs);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  r.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  r.close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return r;
}

let s: TestServer;
let fast: CountingReceiver;
let dead: CountingReceiver;
let A: Seeded;
let B: Seeded;

beforeAll(async () => {
  fast = await countingReceiver(5);
  dead = await countingReceiver(null);
  s = await startTestServer({ allowPrivateUrls: true });
  A = await seedClient(s, { numero: numeroNuevo() });
  B = await seedClient(s, { numero: numeroNuevo() });
  expectOk(await setWebhook(s, A.clientKey, { url: `${fast.url}/a`, secret: SECRET }));
  expectOk(await setWebhook(s, B.clientKey, { url: `${dead.url}/b` }));
});
afterAll(async () => {
  // The hanging requests first, so that stopping the server does not wait for them.
  await dead?.close();
  await fast?.close();
  await s?.stop();
});

/** `n` test events of a client, `callers` requests at a time; their ids in creation order. */
async function testEvents(key: string, n: number, callers: number): Promise<string[]> {
  const ids: string[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: callers }, async () => {
      while (next < n) {
        const i = next++;
        const r = await api(s.url, 'POST', '/api/webhook_test.php', { key });
        expectOk(r);
        ids[i] = r.body.id as string;
      }
    }),
  );
  return ids;
}

describe('webhook throughput', () => {
  it(`${EVENTS} events of one client: each delivered once, signed, several at a time on few connections, while another client's receiver hangs`, async () => {
    // B first: its receiver never answers and its backlog is older than all of A's events.
    await testEvents(B.clientKey, 20, 4);
    await waitFor(() => dead.hits.length >= 1, "B's first request");

    const ids = await testEvents(A.clientKey, EVENTS, 16);
    expect(new Set(ids).size).toBe(EVENTS);
    await waitFor(() => fast.hits.length >= EVENTS, `${EVENTS} deliveries to A`, 30_000);

    // Exactly once each, the same ids that were created.
    const got = fast.hits.map((h) => h.headers['webhook-id'] as string);
    expect(got).toHaveLength(EVENTS);
    expect(new Set(got)).toEqual(new Set(ids));
    for (const h of fast.hits.filter((_, i) => i % 200 === 0)) {
      expectEnvelope(h, 'webhook.test', A.clienteId);
      expectSigned(h, SECRET);
    }
    // Several in flight at once (the client's limit is 16), over keep-alive connections: idle ones are
    // closed after a few seconds and opened again at the next burst, but each carries many deliveries.
    expect(fast.maxOpen).toBeGreaterThan(1);
    expect(fast.maxOpen).toBeLessThanOrEqual(16);
    expect(fast.sockets.size).toBeLessThanOrEqual(EVENTS / 20);

    // The dead receiver held one slot at a time (its window stays at one), and A never waited for it.
    expect(dead.maxOpen).toBe(1);
    expect((await entregas(s, B.clientKey)).filter((e) => e.estado === 'entregado')).toEqual([]);
    // Every attempt recorded: the newest listed deliveries end as entregado after one attempt each.
    await waitFor(async () => (await entregas(s, A.clientKey)).every((e) => e.estado === 'entregado' && e.intentos === 1), "A's attempts recorded");
  }, 90_000);
});
