import { systemClock, type Clock } from '../../src/core/time/clock.js';
import type { Tipo } from '../../src/core/ports/model.js';
import { EvolutionGateway } from '../../src/gateways/evolution.js';
import { startEvolutionFake, type EvolutionFake, type FakeMessage } from '../fakes/evolution.js';
import { startInboundReceiver, type InboundReceiver } from '../helpers/inbound-receiver.js';
import type { GatewayHarness, SentRecord } from './harness.js';

const KIND: Record<string, Tipo> = { image: 'imagen', video: 'video', document: 'documento', audio: 'audio' };

/** What reached the fake network, read back from the exact request Evolution got. */
function sentRecord(m: FakeMessage): SentRecord {
  const r = m.request;
  const s = (v: unknown) => (typeof v === 'string' ? v : undefined);
  const tipo: Tipo =
    m.route === 'sendText' ? 'texto' : m.route === 'sendWhatsAppAudio' ? 'audio' : m.route === 'sendSticker' ? 'sticker' : KIND[String(r.mediatype)]!;
  return {
    instancia: m.instance,
    to: String(r.number).replace(/\D/g, ''),
    tipo,
    text: s(r.text) ?? s(r.caption),
    url: m.url,
    bytes: m.bytes,
    filename: s(r.fileName),
    mime: s(r.mimetype),
    ptt: m.route === 'sendWhatsAppAudio',
    gatewayMsgId: m.record.key.id,
  };
}

/** The Evolution adapter against its fake over real HTTP, its webhooks arriving at a bare inbound receiver. */
export async function startEvolutionHarness(
  opts: { clock?: Clock } = {},
): Promise<GatewayHarness & { gateway: EvolutionGateway; fake: EvolutionFake; receiver: InboundReceiver }> {
  const fake = await startEvolutionFake();
  // The receiver asks for the gateway only when a webhook arrives, after it is made.
  const receiver = await startInboundReceiver(() => gateway);
  const gateway = new EvolutionGateway(
    {
      url: fake.url,
      key: fake.apiKey,
      callbackUrl: receiver.url,
      secret: 'test-secret',
      timeoutMs: 2000,
      sendTimeoutMs: 5000,
      clock: opts.clock ?? systemClock,
    },
    { qrRetryPauseMs: 0 },
  );
  return {
    name: 'evolution',
    gateway,
    fake,
    receiver,
    scan: (i) => fake.scan(i),
    enterCode: (i, code) => fake.enterCode(i, code),
    rotateQr: (i) => fake.rotateQr(i),
    phoneLogout: (i) => fake.phoneLogout(i),
    receive: (i, from, text) => fake.receive(i, from, text),
    ack: (i, id, estado) => fake.ack(i, id, estado === 'entregado' ? 'DELIVERY_ACK' : 'READ'),
    sent: () => fake.messages.map(sentRecord),
    notOnNetwork: (n) => fake.notOnNetwork(n),
    rateLimitNext: (n) => fake.rateLimitNext(n),
    down: () => fake.down(),
    up: () => fake.up(),
    killSilently: async (i) => fake.killSilently(i),
    close: async () => {
      await fake.close();
      await gateway.close();
      await receiver.close();
    },
  };
}
