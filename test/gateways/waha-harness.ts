import { ManualClock, type Clock } from '../../src/core/time/clock.js';
import type { Tipo } from '../../src/core/ports/model.js';
import { WahaGateway } from '../../src/gateways/waha.js';
import { startWahaFake, type WahaEngine, type WahaFake, type WahaFakeSend } from '../fakes/waha.js';
import { startInboundReceiver, type InboundReceiver } from '../helpers/inbound-receiver.js';
import type { GatewayHarness, SentRecord } from './harness.js';

export const TEST_SECRET = 'test-secret';

/** What reached the network, as the contract suite reads it: the kind follows from the route (and a file's mimetype). */
function record(s: WahaFakeSend): SentRecord {
  const b = s.body;
  const file = (b.file ?? {}) as { mimetype?: string; filename?: string; url?: string };
  const byRoute: Record<string, Tipo> = { sendText: 'texto', sendImage: 'imagen', sendVideo: 'video', sendVoice: 'audio' };
  const tipo: Tipo = byRoute[s.route] ?? (file.mimetype?.startsWith('audio/') ? 'audio' : 'documento');
  const text = typeof b.text === 'string' ? b.text : typeof b.caption === 'string' ? b.caption : undefined;
  return {
    instancia: s.session,
    to: s.to,
    tipo,
    ...(text !== undefined ? { text } : {}),
    ...(file.url ? { url: file.url } : {}),
    ...(s.bytes ? { bytes: s.bytes } : {}),
    ...(file.filename ? { filename: file.filename } : {}),
    ...(file.mimetype ? { mime: file.mimetype } : {}),
    ptt: s.route === 'sendVoice',
    gatewayMsgId: s.id,
  };
}

/** WahaGateway against the WAHA fake over real HTTP, its webhooks arriving at a bare inbound receiver. */
export async function startWahaHarness(
  opts: { clock?: Clock; engine?: WahaEngine } = {},
): Promise<GatewayHarness & { fake: WahaFake; receiver: InboundReceiver; gateway: WahaGateway }> {
  const fake = await startWahaFake({ engine: opts.engine });
  // The receiver asks for the gateway only when a webhook arrives, after it is made.
  const receiver = await startInboundReceiver(() => gateway);
  const gateway = new WahaGateway(
    {
      url: fake.url,
      key: fake.apiKey,
      callbackUrl: receiver.url,
      secret: TEST_SECRET,
      timeoutMs: 5000,
      sendTimeoutMs: 5000,
      clock: opts.clock ?? new ManualClock(Date.UTC(2026, 5, 1)),
    },
    { pollPauseMs: 0 },
  );
  // Each control resolves once its webhooks were answered by the adapter.
  const settled = async <T>(p: Promise<T>): Promise<T> => {
    const v = await p;
    await fake.settle();
    return v;
  };
  return {
    name: 'waha',
    gateway,
    fake,
    receiver,
    scan: (i) => settled(fake.scan(i)),
    enterCode: (i, code) => settled(fake.enterCode(i, code)),
    rotateQr: (i) => fake.rotateQr(i),
    phoneLogout: (i) => settled(fake.phoneLogout(i)),
    receive: (i, from, text) => settled(fake.receive(i, from, text)),
    ack: (i, id, estado) => settled(fake.ack(i, id, estado === 'entregado' ? 'DEVICE' : 'READ')),
    sent: () => fake.sends.map(record),
    notOnNetwork: (n) => fake.notOnNetwork(n),
    rateLimitNext: (n) => fake.rateLimitNext(n),
    down: () => fake.down(),
    up: () => fake.up(),
    killSilently: (i) => fake.killSilently(i),
    close: async () => {
      await fake.close();
      await gateway.close();
      await receiver.close();
    },
  };
}
