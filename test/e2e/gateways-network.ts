import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ServeOptions } from '../../src/server/serve.js';
import { instanceSecret } from '../../src/gateways/inbound-secret.js';
import type { SimGateway } from '../../src/gateways/sim.js';
import type { TestServer } from '../helpers/server.js';

/**
 * The far side of pasarela for the end-to-end flow: the network and the
 * phones, for the simulator and for each gateway's fake. pasarela itself runs
 * whole (real HTTP, real SQLite) with `--gateway <name>` pointing at it.
 */
export interface Network {
  name: 'sim' | 'evolution' | 'waha';
  serve: Partial<ServeOptions>;
  scan(s: TestServer, instancia: string): Promise<void>;
  enterCode(s: TestServer, instancia: string, code: string): Promise<void>;
  receive(s: TestServer, instancia: string, from: string, text: string): Promise<void>;
  ack(s: TestServer, instancia: string, gatewayMsgId: string, estado: 'entregado' | 'leido'): Promise<void>;
  /** Acks posted before the send's answer (null: this network cannot race them). */
  ackBeforeReply: ((on: boolean) => void) | null;
  phoneLogout(s: TestServer, instancia: string): Promise<void>;
  /** The gateway stops the session, credentials kept (a WAHA restart that did not restart it); null where not applicable. */
  stopSession: ((instancia: string) => Promise<void>) | null;
  /** The session dies while the gateway keeps calling it open (null where it never lies). */
  killSilently: ((instancia: string) => Promise<void> | void) | null;
  down(s: TestServer): Promise<void>;
  up(s: TestServer): Promise<void>;
  /** An incoming message exactly as the gateway posts it to pasarela (null for the in-process sim). */
  inboundCall: ((s: TestServer, instancia: string, id: string, from: string, text: string) => { headers: Record<string, string>; body: unknown }) | null;
  /** Every send request that reached the gateway (null for the in-process sim): its exact JSON, a media URL, decoded base64 media. */
  received: (() => ReceivedSend[]) | null;
  close(): Promise<void>;
}

export interface ReceivedSend {
  /** The request body as the gateway got it. */
  json: string;
  url?: string;
  bytes?: Buffer;
  /** The file name and MIME type the request carried, if any. */
  filename?: string;
  mime?: string;
}

const sim = (s: TestServer) => s.core.gateway as SimGateway;
const serverSecret = (s: TestServer) => readFileSync(join(s.dataDir, 'gateway-secret'), 'utf8').trim();

export async function simNetwork(): Promise<Network> {
  return {
    name: 'sim',
    serve: { gateway: 'sim', simDeliveryMs: 1e9, simReadMs: 1e9 },
    scan: (s, i) => sim(s).scan(i),
    enterCode: (s, i, code) => sim(s).scan(i, undefined, code),
    receive: async (s, i, from, text) => void (await sim(s).receive(i, from, text)),
    ack: (s, i, id, estado) => sim(s).receiptNow(i, id, estado),
    ackBeforeReply: null,
    phoneLogout: (s, i) => sim(s).phoneLogout(i),
    killSilently: null,
    stopSession: null,
    down: async (s) => sim(s).setOutage(true),
    up: async (s) => sim(s).setOutage(false),
    inboundCall: null,
    received: null,
    close: async () => undefined,
  };
}

/** The controls both fakes share (test/fakes/evolution.ts, test/fakes/waha.ts). */
interface Fake {
  url: string;
  apiKey: string;
  scan(i: string): Promise<unknown>;
  enterCode(i: string, code: string): Promise<unknown>;
  receive(i: string, from: string, text: string): Promise<unknown>;
  ack(i: string, id: string, status: never): Promise<unknown>;
  ackBeforeReply(on: boolean): void;
  phoneLogout(i: string): Promise<unknown>;
  killSilently(i: string): unknown;
  down(): Promise<void>;
  up(): Promise<void>;
  settle(): Promise<void>;
  close(): Promise<void>;
}

/** A fake gateway as a Network: every control resolves once the fake's webhooks were answered. */
function fakeNetwork(
  name: 'evolution' | 'waha',
  fake: Fake,
  acks: { entregado: string; leido: string },
  inboundBody: (s: TestServer, i: string, id: string, from: string, text: string) => unknown,
  received: () => ReceivedSend[],
): Network {
  const settled =
    <A extends unknown[]>(fn: (...a: A) => Promise<unknown>) =>
    async (_s: TestServer, ...a: A) => {
      await fn(...a);
      await fake.settle();
    };
  return {
    name,
    serve: { gateway: name, gatewayUrl: fake.url, gatewayKey: fake.apiKey },
    scan: settled((i: string) => fake.scan(i)),
    enterCode: settled((i: string, code: string) => fake.enterCode(i, code)),
    receive: settled((i: string, from: string, text: string) => fake.receive(i, from, text)),
    ack: settled((i: string, id: string, estado: 'entregado' | 'leido') => fake.ack(i, id, acks[estado] as never)),
    ackBeforeReply: (on) => fake.ackBeforeReply(on),
    phoneLogout: settled((i: string) => fake.phoneLogout(i)),
    killSilently: async (i) => void (await fake.killSilently(i)),
    stopSession:
      name === 'waha'
        ? async (i) => {
            const r = await fetch(`${fake.url}/api/sessions/${encodeURIComponent(i)}/stop`, { method: 'POST', headers: { 'x-api-key': fake.apiKey } });
            if (!r.ok) throw new Error(`stop: ${r.status}`);
            await fake.settle();
          }
        : null,
    down: () => fake.down(),
    up: () => fake.up(),
    inboundCall: (s, i, id, from, text) => ({
      headers: { 'x-pasarela-secret': instanceSecret(serverSecret(s), name, i) },
      body: inboundBody(s, i, id, from, text),
    }),
    received,
    close: () => fake.close(),
  };
}

const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

export async function evolutionNetwork(): Promise<Network> {
  const fake = await (await import('../fakes/evolution.js')).startEvolutionFake();
  const received = () =>
    fake.messages.map((m) => ({
      json: JSON.stringify(m.request),
      url: m.url,
      bytes: m.bytes,
      filename: str(m.request.fileName),
      mime: str(m.request.mimetype),
    }));
  return fakeNetwork(
    'evolution',
    fake,
    { entregado: 'DELIVERY_ACK', leido: 'READ' },
    (s, i, id, from, text) => ({
      event: 'messages.upsert',
      instance: i,
      data: {
        key: { remoteJid: `${from}@s.whatsapp.net`, fromMe: false, id },
        pushName: 'Ana',
        message: { conversation: text },
        messageType: 'conversation',
        messageTimestamp: Math.floor(Date.now() / 1000),
        status: 'DELIVERY_ACK',
      },
      destination: `${s.url}/gateway/evolution/${i}`,
      date_time: new Date().toISOString(),
      sender: '5215512345678@s.whatsapp.net',
      server_url: fake.url,
      apikey: null,
    }),
    received,
  );
}

export async function wahaNetwork(): Promise<Network> {
  const fake = await (await import('../fakes/waha.js')).startWahaFake();
  const received = () =>
    fake.sends.map((m) => {
      const file = (m.body.file ?? {}) as Record<string, unknown>;
      return { json: JSON.stringify(m.body), url: str(file.url), bytes: m.bytes, filename: str(file.filename), mime: str(file.mimetype) };
    });
  return fakeNetwork(
    'waha',
    fake,
    { entregado: 'DEVICE', leido: 'READ' },
    (_s, i, id, from, text) => ({
      id: `evt_${id}`,
      timestamp: Date.now(),
      event: 'message',
      session: i,
      payload: {
        id: `false_${from}@c.us_${id}`,
        timestamp: Math.floor(Date.now() / 1000),
        from: `${from}@c.us`,
        fromMe: false,
        to: '5215512345678@c.us',
        body: text,
        hasMedia: false,
        ack: 1,
        ackName: 'SERVER',
      },
      engine: 'NOWEB',
    }),
    received,
  );
}
