import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { expectOk } from '../helpers/expect.js';
import { until } from '../helpers/poll.js';
import { admin, linkedLine, type Line } from './send-helpers.js';
import { entregas, setWebhook, startReceiver, waitEntrega, type Receiver } from './webhook-helpers.js';

/**
 * One client's dead receiver never delays another client's deliveries
 * (docs/webhooks.md "Delivery"), and a receiver that never answers is recorded as a
 * timeout once the attempt timeout has passed. Two servers, so that neither
 * test waits for real: on `open` the timeout is far away (A's attempt is
 * certainly still open while B's deliveries arrive); on `short` it is shrunk
 * to a few hundred milliseconds (`--webhook-timeout`, 10 s by default).
 */
const OPEN_MS = 120_000;
const TIMEOUT_MS = 300;

let open: TestServer;
let short: TestServer;
let RA: Receiver;
let RB: Receiver;
let RC: Receiver;

const receive = async (s: TestServer, L: Line, texto: string) =>
  expectOk(await admin(s, 'POST', '/admin/sim/receive', { celular_id: L.celularId, de: '525511112222', texto }));

beforeAll(async () => {
  [RA, RB, RC] = await Promise.all([startReceiver('hang'), startReceiver(200), startReceiver('hang')]);
  [open, short] = await Promise.all([
    startTestServer({ allowPrivateUrls: true, webhookTimeoutMs: OPEN_MS }),
    startTestServer({ allowPrivateUrls: true, webhookTimeoutMs: TIMEOUT_MS }),
  ]);
});
afterAll(async () => {
  // Hanging requests first, so that stopping the servers does not wait for them.
  await Promise.all([RA?.close(), RB?.close(), RC?.close()]);
  await Promise.all([open?.stop(), short?.stop()]);
});

describe('a hanging receiver', () => {
  it("A's receiver never answers: B's deliveries all arrive while A's attempt is still open", async () => {
    const A = await linkedLine(open);
    const B = await linkedLine(open);
    expectOk(await setWebhook(open, A.clientKey, { url: `${RA.url}/a`, eventos: ['messages.received'] }));
    expectOk(await setWebhook(open, B.clientKey, { url: `${RB.url}/b`, eventos: ['messages.received'] }));
    await receive(open, A, 'A se cuelga');
    await RA.wait(() => true, 15_000, "A's request");
    const [ea] = await entregas(open, A.clientKey);
    expect(ea).toMatchObject({ estado: 'pendiente', intentos: 0 });

    // B, three times while A is stuck.
    for (let i = 0; i < 3; i++) {
      await receive(open, B, `B ${i}`);
      await RB.wait((x) => x.json?.data?.texto === `B ${i}`, 15_000, `B's delivery ${i}`);
    }
    expect(RB.hits.map((h) => h.json.data.texto)).toEqual(['B 0', 'B 1', 'B 2']);
    expect((await entregas(open, B.clientKey)).map((e) => e.estado)).toEqual(['entregado', 'entregado', 'entregado']);
    // A's one attempt has not ended: B never waited for it.
    expect((await entregas(open, A.clientKey))[0]).toMatchObject({ id: ea!.id, estado: 'pendiente', intentos: 0 });
    expect(RA.hits).toHaveLength(1);
    // Generous deadlines for a loaded machine; A's attempt (OPEN_MS) outlasts them all.
  }, 90_000);
});

describe('the attempt timeout', () => {
  it('an attempt not answered within --webhook-timeout ends as a timeout, recorded, to be retried', async () => {
    const A = await linkedLine(short);
    expectOk(await setWebhook(short, A.clientKey, { url: `${RC.url}/a`, eventos: ['messages.received'] }));
    await receive(short, A, 'A se cuelga');
    await RC.wait(() => true, 15_000, "A's request");
    const [ea] = await entregas(short, A.clientKey);
    const e = await waitEntrega(short, A.clientKey, ea!.id, (x) => x.intentos === 1, "A's timed-out attempt", 5000);
    expect(e.estado).toBe('pendiente');
    expect(e.intentos_detalle[0]).toMatchObject({ n: 1, status: null });
    expect(e.intentos_detalle[0]!.error).toMatch(/timeout/i);
    expect(e.intentos_detalle[0]!.duracion_ms).toBeGreaterThanOrEqual(TIMEOUT_MS - 50);
    expect(e.proximo_intento_at).toMatch(/Z$/);
    expect(RC.hits).toHaveLength(1);
  });
});

describe('a receiver that trickles its answer', () => {
  // Longer than the trickle's gap: undici's idle timers alone would never end the attempt.
  const TRICKLE_TIMEOUT_MS = 2000;
  let trickling: TestServer;
  let receiver: Server;
  let url = '';
  const hits: string[] = [];

  beforeAll(async () => {
    // 200 and its headers at once, then one byte a second, never the end.
    receiver = createServer((req, res) => {
      hits.push(String(req.headers['webhook-id']));
      req.resume();
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.write('.');
        const t = setInterval(() => res.write('.'), 1000);
        res.on('close', () => clearInterval(t));
      });
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/t`;
    trickling = await startTestServer({ allowPrivateUrls: true, webhookTimeoutMs: TRICKLE_TIMEOUT_MS });
  });
  afterAll(async () => {
    receiver?.closeAllConnections();
    receiver?.close();
    await trickling?.stop();
  });

  it('is cut at --webhook-timeout (headers, body and all): a failed attempt, recorded, to be retried', async () => {
    const A = await linkedLine(trickling);
    expectOk(await setWebhook(trickling, A.clientKey, { url, eventos: ['messages.received'] }));
    await receive(trickling, A, 'gota a gota');
    await until(() => hits.length > 0, { what: 'the request to the trickling receiver' });
    const [ea] = await entregas(trickling, A.clientKey);
    const e = await waitEntrega(trickling, A.clientKey, ea!.id, (x) => x.intentos === 1, 'the trickled attempt cut at the timeout', 15_000);
    expect(e.estado).toBe('pendiente');
    // The answer began (200) but did not end in time.
    expect(e.intentos_detalle[0]).toMatchObject({ n: 1, status: 200, error: `timeout after ${TRICKLE_TIMEOUT_MS / 1000} s` });
    expect(e.intentos_detalle[0]!.duracion_ms).toBeGreaterThanOrEqual(TRICKLE_TIMEOUT_MS - 50);
    expect(e.proximo_intento_at).toMatch(/Z$/);
    expect(hits).toEqual([ea!.id]);
  });
});
