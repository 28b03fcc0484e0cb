import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { expectOk } from '../helpers/expect.js';
import { admin, linkedLine, type Line } from './send-helpers.js';
import { entregas, setWebhook, sleep, startReceiver, waitEntrega, type Receiver } from './webhook-helpers.js';

/**
 * One client's dead receiver never delays another client's deliveries
 * (DESIGN §7, README "Delivery"), and a receiver that never answers is
 * recorded as a timeout after 10 s. This is the one test that waits for the
 * real 10 s timeout.
 */

let s: TestServer;
let RA: Receiver;
let RB: Receiver;
let A: Line;
let B: Line;

const receive = async (L: Line, texto: string) => expectOk(await admin(s, 'POST', '/admin/sim/receive', { celular_id: L.celularId, de: '525511112222', texto }));

beforeAll(async () => {
  RA = await startReceiver('hang');
  RB = await startReceiver(200);
  s = await startTestServer({ allowPrivateUrls: true });
  A = await linkedLine(s);
  B = await linkedLine(s);
  expectOk(await setWebhook(s, A.clientKey, { url: `${RA.url}/a`, eventos: ['messages.received'] }));
  expectOk(await setWebhook(s, B.clientKey, { url: `${RB.url}/b`, eventos: ['messages.received'] }));
});
afterAll(async () => {
  // Hanging requests first, so that stopping the server does not wait for them.
  await RA?.close();
  await RB?.close();
  await s?.stop();
});

describe('a hanging receiver', () => {
  it("A's receiver never answers: B's deliveries arrive at once all along; A's attempt ends as a timeout after 10 s", async () => {
    await receive(A, 'A se cuelga');
    const hungAt = (await RA.wait(() => true, 5000, "A's request")).at;
    const [ea] = await entregas(s, A.clientKey);
    expect(ea).toMatchObject({ estado: 'pendiente', intentos: 0 });

    // B, three times while A is stuck, each well under a second.
    for (let i = 0; i < 3; i++) {
      const t0 = Date.now();
      await receive(B, `B ${i}`);
      const h = await RB.wait((x) => x.json?.data?.texto === `B ${i}`, 2000, `B's delivery ${i}`);
      expect(h.at - t0).toBeLessThan(1000);
      await sleep(1500);
    }
    expect(RB.hits.map((h) => h.json.data.texto)).toEqual(['B 0', 'B 1', 'B 2']);
    expect(Date.now() - hungAt).toBeLessThan(10_000);
    expect((await entregas(s, A.clientKey))[0]).toMatchObject({ estado: 'pendiente', intentos: 0 });
    expect((await entregas(s, B.clientKey)).map((e) => e.estado)).toEqual(['entregado', 'entregado', 'entregado']);

    // A's attempt: a timeout of about 10 s, recorded, to be retried.
    const e = await waitEntrega(s, A.clientKey, ea!.id, (x) => x.intentos === 1, "A's timed-out attempt", 8000);
    expect(e.estado).toBe('pendiente');
    expect(e.intentos_detalle[0]).toMatchObject({ n: 1, status: null });
    expect(e.intentos_detalle[0]!.error).toMatch(/timeout/i);
    expect(e.intentos_detalle[0]!.duracion_ms).toBeGreaterThanOrEqual(9_500);
    expect(e.intentos_detalle[0]!.duracion_ms).toBeLessThan(13_000);
    expect(e.proximo_intento_at).toMatch(/Z$/);
    expect(RA.hits).toHaveLength(1);
  }, 25_000);
});
