import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { api, seedClient, startTestServer, type TestServer } from '../helpers/server.js';
import { expectOk, numeroNuevo } from '../helpers/expect.js';
import { setWebhook, startReceiver, waitFor, type Receiver } from './webhook-helpers.js';

/**
 * Isolation between clients beyond the one-hanging-receiver case
 * (webhook-isolation.test.ts): a client with a backlog, and several dead
 * receivers at once. docs/webhooks.md "Delivery": "a slow or dead receiver never delays other
 * clients". Each test gives the healthy client 3 s, far less than the 10 s
 * timeout that would free the dispatcher.
 */

// Each test has its own server and receivers, so one's backlog never explains the other's outcome.
let s: TestServer;
let dead: Receiver;
let ok: Receiver;

beforeEach(async () => {
  dead = await startReceiver('hang');
  ok = await startReceiver(200);
  s = await startTestServer({ allowPrivateUrls: true });
});
afterEach(async () => {
  // Hanging requests first, so that stopping the server does not wait for them.
  await dead?.close();
  await ok?.close();
  await s?.stop();
});

async function testEvent(key: string): Promise<string> {
  const r = await api(s.url, 'POST', '/api/webhook_test.php', { key });
  expectOk(r);
  return r.body.id as string;
}

describe('fairness of the dispatcher', () => {
  // The dispatcher reads due deliveries per client, leaving busy clients out: a client with a long
  // backlog behind a hanging receiver cannot hide other clients' deliveries.
  it("a client with 205 deliveries waiting behind its hanging receiver does not hold back another client's delivery", async () => {
    const A = await seedClient(s, { numero: numeroNuevo() });
    const B = await seedClient(s, { numero: numeroNuevo() });
    expectOk(await setWebhook(s, A.clientKey, { url: `${dead.url}/backlog` }));
    expectOk(await setWebhook(s, B.clientKey, { url: `${ok.url}/b` }));
    for (let i = 0; i < 205; i++) await testEvent(A.clientKey);
    await dead.wait((h) => h.path === '/backlog', 3000, "A's first request");
    const id = await testEvent(B.clientKey);
    const h = await ok.wait((x) => x.json?.id === id, 3000, "B's delivery");
    expect(h.path).toBe('/b');
  }, 20_000);

  // Slots are kept for healthy clients: clients whose receivers hang may take at most part of them,
  // so a ninth client is served while eight hang.
  it('eight clients with hanging receivers do not hold back a ninth client', async () => {
    for (let i = 0; i < 8; i++) {
      const C = await seedClient(s, { numero: numeroNuevo() });
      expectOk(await setWebhook(s, C.clientKey, { url: `${dead.url}/dead${i}` }));
      await testEvent(C.clientKey);
    }
    await waitFor(() => dead.hits.length >= 8, 'the eight hanging requests');
    const N = await seedClient(s, { numero: numeroNuevo() });
    expectOk(await setWebhook(s, N.clientKey, { url: `${ok.url}/ninth` }));
    const id = await testEvent(N.clientKey);
    const h = await ok.wait((x) => x.json?.id === id, 3000, "the ninth client's delivery");
    expect(h.path).toBe('/ninth');
  }, 20_000);
});
