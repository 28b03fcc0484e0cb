import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { expectOk } from '../helpers/expect.js';
import { admin, linkedLine, type Line } from './send-helpers.js';
import { entregas, setWebhook, startReceiver, waitEntrega, type Receiver } from './webhook-helpers.js';

/**
 * One client's dead receiver never delays another client's deliveries
 * (README "Delivery"), and a receiver that never answers is recorded as a
 * timeout once the attempt timeout (here 4 s instead of the default 10 s)
 * has passed. Behaviour only: B's deliveries all arrive while A's attempt is
 * still open, whatever the machine's speed.
 */
const TIMEOUT_MS = 4000;

let s: TestServer;
let RA: Receiver;
let RB: Receiver;
let A: Line;
let B: Line;

const receive = async (L: Line, texto: string) =>
  expectOk(await admin(s, 'POST', '/admin/sim/receive', { celular_id: L.celularId, de: '525511112222', texto }));

beforeAll(async () => {
  RA = await startReceiver('hang');
  RB = await startReceiver(200);
  s = await startTestServer({ allowPrivateUrls: true, webhookTimeoutMs: TIMEOUT_MS });
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
  it("A's receiver never answers: B's deliveries arrive while A's attempt is still open; A's attempt ends as a timeout", async () => {
    await receive(A, 'A se cuelga');
    await RA.wait(() => true, 5000, "A's request");
    const [ea] = await entregas(s, A.clientKey);
    expect(ea).toMatchObject({ estado: 'pendiente', intentos: 0 });

    // B, three times while A is stuck.
    for (let i = 0; i < 3; i++) {
      await receive(B, `B ${i}`);
      await RB.wait((x) => x.json?.data?.texto === `B ${i}`, 5000, `B's delivery ${i}`);
    }
    expect(RB.hits.map((h) => h.json.data.texto)).toEqual(['B 0', 'B 1', 'B 2']);
    expect((await entregas(s, B.clientKey)).map((e) => e.estado)).toEqual(['entregado', 'entregado', 'entregado']);
    // A's one attempt has not ended yet: B never waited for it.
    const during = (await entregas(s, A.clientKey))[0]!;
    expect(during.intentos === 0 || during.intentos_detalle[0]!.duracion_ms >= TIMEOUT_MS).toBe(true);

    // A's attempt: a timeout, recorded, to be retried.
    const e = await waitEntrega(s, A.clientKey, ea!.id, (x) => x.intentos === 1, "A's timed-out attempt", 15_000);
    expect(e.estado).toBe('pendiente');
    expect(e.intentos_detalle[0]).toMatchObject({ n: 1, status: null });
    expect(e.intentos_detalle[0]!.error).toMatch(/timeout/i);
    expect(e.intentos_detalle[0]!.duracion_ms).toBeGreaterThanOrEqual(TIMEOUT_MS - 50);
    expect(e.proximo_intento_at).toMatch(/Z$/);
    expect(RA.hits).toHaveLength(1);
  }, 30_000);
});
