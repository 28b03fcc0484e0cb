import { createHmac } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/core/time/clock.js';
import { GatewayFailure, InboundRefused, type GatewayEvent, type OutboundMessage } from '../../src/core/ports/gateway.js';
import { GatewayHttp, type JsonReply } from '../../src/gateways/http-json.js';
import { instanceSecret } from '../../src/gateways/inbound-secret.js';
import { WahaGateway } from '../../src/gateways/waha.js';
import { classifyWaha } from '../../src/gateways/waha-failure.js';
import { bareId } from '../../src/gateways/waha-ids.js';
import { until } from '../helpers/poll.js';
import { SAMPLES } from './contract.js';
import { startWahaHarness, TEST_SECRET } from './waha-harness.js';

type Harness = Awaited<ReturnType<typeof startWahaHarness>>;
const LINE = '5215512345678';
const TO = '5215587654321';

async function failure(p: Promise<unknown>): Promise<GatewayFailure> {
  const err = await p.then(
    () => new Error('expected a GatewayFailure'),
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(GatewayFailure);
  return err as GatewayFailure;
}

/** A harness, its events, and a way to get a linked session. */
function setup(engine: 'NOWEB' | 'WEBJS' = 'NOWEB') {
  const ctx = { h: undefined as unknown as Harness, events: [] as GatewayEvent[], dir: '', n: 0 };
  beforeAll(async () => {
    ctx.dir = mkdtempSync(join(tmpdir(), 'pasarela-waha-'));
    ctx.h = await startWahaHarness({ engine });
    ctx.h.gateway.onEvent((e) => void ctx.events.push(e));
  });
  afterAll(async () => {
    await ctx.h?.close();
    rmSync(ctx.dir, { recursive: true, force: true });
  });
  const fresh = () => `waha-${engine.toLowerCase()}-${++ctx.n}`;
  const linked = async (): Promise<string> => {
    const i = fresh();
    await ctx.h.gateway.ensureInstance(i, { numero: LINE });
    expect((await ctx.h.gateway.connect(i, LINE)).status).toBe('need_scan');
    await ctx.h.scan(i);
    return i;
  };
  const file = (name: string, bytes: Buffer) => {
    const p = join(ctx.dir, name);
    writeFileSync(p, bytes);
    return p;
  };
  return { ctx, fresh, linked, file };
}

describe('WAHA adapter: request shapes', () => {
  const { ctx, linked, file } = setup();
  let i: string;
  beforeAll(async () => {
    i = await linked();
  });
  const lastSend = () => ctx.h.fake.sends[ctx.h.fake.sends.length - 1]!;
  const sendAs = async (m: Omit<OutboundMessage, 'msgId' | 'destinatario'>) => {
    await ctx.h.gateway.send(i, { msgId: 'm', destinatario: TO, ...m });
    return lastSend();
  };

  it('registers the session with our webhook, signed, the secret also as a custom header, not started', async () => {
    const req = ctx.h.fake.requests.find((r) => r.method === 'POST' && r.path === '/api/sessions')!;
    const secret = instanceSecret(TEST_SECRET, 'waha', i);
    expect(req.headers['x-api-key']).toBe(ctx.h.fake.apiKey);
    expect(req.body).toEqual({
      name: i,
      start: false,
      config: {
        webhooks: [
          {
            url: `${ctx.h.receiver.url}/gateway/waha/${i}`,
            events: ['message', 'message.ack', 'session.status'],
            hmac: { key: secret },
            customHeaders: [{ name: 'X-Pasarela-Secret', value: secret }],
          },
        ],
      },
    });
  });

  it('text: sendText with the session in the body, chatId @c.us, linkPreview as asked', async () => {
    expect((await sendAs({ tipo: 'texto', texto: 'hola' })).body).toEqual({ session: i, chatId: `${TO}@c.us`, text: 'hola', linkPreview: false });
    expect((await sendAs({ tipo: 'texto', texto: 'mira https://x.example', previewUrl: true })).body).toMatchObject({ linkPreview: true });
  });

  it('image by URL: file.url, no data', async () => {
    const s = await sendAs({ tipo: 'imagen', url: 'https://media.example/a.png', mime: 'image/png', caption: 'foto' });
    expect(s.route).toBe('sendImage');
    expect(s.body).toEqual({ session: i, chatId: `${TO}@c.us`, file: { mimetype: 'image/png', url: 'https://media.example/a.png' }, caption: 'foto' });
  });

  it('document from a file: file.data is raw base64 (no data: prefix) and the name gets an extension from the mime type', async () => {
    const s = await sendAs({ tipo: 'documento', filePath: file('d.pdf', SAMPLES.pdf), mime: 'application/pdf' });
    expect(s.route).toBe('sendFile');
    const f = s.body.file as Record<string, string>;
    expect(f).toEqual({ mimetype: 'application/pdf', filename: 'documento.pdf', data: SAMPLES.pdf.toString('base64') });
    expect(f.data!.startsWith('data:')).toBe(false);
    expect(s.bytes!.equals(SAMPLES.pdf)).toBe(true);
  });

  it('document with its own name keeps it', async () => {
    const s = await sendAs({
      tipo: 'documento',
      filePath: file('e.pdf', SAMPLES.pdf),
      mime: 'application/pdf',
      filename: 'factura.pdf',
      caption: 'tu factura',
    });
    expect(s.body).toMatchObject({ file: { filename: 'factura.pdf' }, caption: 'tu factura' });
  });

  it('voice note: sendVoice as ogg/opus with convert', async () => {
    const s = await sendAs({ tipo: 'audio', filePath: file('v.ogg', SAMPLES.ogg), mime: 'audio/ogg', ptt: true });
    expect(s.route).toBe('sendVoice');
    expect(s.body).toEqual({
      session: i,
      chatId: `${TO}@c.us`,
      file: { mimetype: 'audio/ogg; codecs=opus', data: SAMPLES.ogg.toString('base64') },
      convert: true,
    });
  });

  it('plain audio goes as a file, named; video as sendVideo', async () => {
    const a = await sendAs({ tipo: 'audio', url: 'https://media.example/a.mp3', mime: 'audio/mpeg' });
    expect(a.route).toBe('sendFile');
    expect(a.body.file).toEqual({ mimetype: 'audio/mpeg', filename: 'audio.mp3', url: 'https://media.example/a.mp3' });
    const v = await sendAs({ tipo: 'video', url: 'https://media.example/v.mp4', mime: 'video/mp4', caption: 'clip' });
    expect(v.route).toBe('sendVideo');
    expect(v.body).toMatchObject({ file: { mimetype: 'video/mp4', url: 'https://media.example/v.mp4' }, caption: 'clip' });
  });

  it('sticker: a permanent failure naming the limitation, and no call to WAHA', async () => {
    const before = ctx.h.fake.requests.length;
    const f = await failure(
      ctx.h.gateway.send(i, { msgId: 's', destinatario: TO, tipo: 'sticker', filePath: file('s.webp', SAMPLES.webp), mime: 'image/webp' }),
    );
    expect(f.kind).toBe('permanent');
    expect(f.message).toBe(ctx.h.gateway.capabilities.unsupported.sticker);
    expect(f.message).toMatch(/no sticker route/);
    expect(ctx.h.fake.requests.length).toBe(before);
  });

  it('the fake has no sticker route either', async () => {
    const http = new GatewayHttp({ name: 'waha', baseUrl: ctx.h.fake.url, headers: { 'x-api-key': ctx.h.fake.apiKey }, timeoutMs: 5000 });
    try {
      const r = await http.call('POST', '/api/sendSticker', { json: { session: i, chatId: `${TO}@c.us`, file: { url: 'https://x/s.webp' } } });
      expect(r.status).toBe(404);
    } finally {
      await http.close();
    }
  });
});

describe.each(['NOWEB', 'WEBJS'] as const)('WAHA adapter: message ids on %s', (engine) => {
  const { ctx, linked } = setup(engine);

  it('send() returns the bare id, and acks (serialized ids) map onto it', async () => {
    const i = await linked();
    const { gatewayMsgId } = await ctx.h.gateway.send(i, { msgId: 'x', tipo: 'texto', destinatario: TO, texto: 'hola' });
    const sent = ctx.h.fake.sends.at(-1)!;
    expect(gatewayMsgId).toBe(sent.id);
    expect(gatewayMsgId).toMatch(/^3EB0[0-9A-F]+$/);
    await ctx.h.fake.ack(i, sent.serialized, 'DEVICE');
    await ctx.h.fake.ack(i, sent.serialized, 'READ');
    await ctx.h.fake.settle();
    const receipts = ctx.events.filter((e) => e.type === 'receipt' && e.gatewayMsgId === gatewayMsgId);
    expect(receipts.map((e) => (e as { estado: string }).estado)).toEqual(['entregado', 'leido']);
  });

  it('an ack posted before the send is answered carries the same id', async () => {
    const i = await linked();
    ctx.h.fake.ackBeforeReply(true);
    try {
      const before = ctx.events.length;
      const { gatewayMsgId } = await ctx.h.gateway.send(i, { msgId: 'y', tipo: 'texto', destinatario: TO, texto: 'rápido' });
      // The ack was answered before send() resolved.
      expect(ctx.events.slice(before)).toContainEqual(expect.objectContaining({ type: 'receipt', gatewayMsgId, estado: 'entregado' }));
    } finally {
      ctx.h.fake.ackBeforeReply(false);
    }
  });
});

describe('WAHA ids', () => {
  it('reduces serialized ids to the bare WhatsApp id', () => {
    expect(bareId('true_5215587654321@c.us_3EB0AAA')).toBe('3EB0AAA');
    expect(bareId('false_123@g.us_3EB0BBB_456@c.us')).toBe('3EB0BBB');
    expect(bareId('3EB0CCC')).toBe('3EB0CCC');
  });
});

describe('WAHA adapter: sessions', () => {
  const { ctx, fresh, linked } = setup();
  const puts = (i: string) => ctx.h.fake.requests.filter((r) => r.method === 'PUT' && r.path === `/api/sessions/${i}`);

  it('adopting a session that already has our webhook makes no PUT (a PUT restarts it)', async () => {
    const i = await linked();
    const starts = ctx.h.fake.sessions.get(i)!.starts;
    await ctx.h.gateway.ensureInstance(i, { numero: LINE });
    expect(puts(i)).toHaveLength(0);
    expect(ctx.h.fake.sessions.get(i)!.starts).toBe(starts);
    expect(await ctx.h.gateway.status(i)).toBe('connected');
  });

  it('adopting a session without our webhook adds it by PUT, keeping the rest of its config', async () => {
    const i = fresh();
    const http = new GatewayHttp({ name: 'waha', baseUrl: ctx.h.fake.url, headers: { 'x-api-key': ctx.h.fake.apiKey }, timeoutMs: 5000 });
    const other = { url: 'http://127.0.0.1:9/other', events: ['message'] };
    try {
      expect((await http.call('POST', '/api/sessions', { json: { name: i, start: false, config: { metadata: { a: '1' }, webhooks: [other] } } })).status).toBe(
        201,
      );
    } finally {
      await http.close();
    }
    await ctx.h.gateway.ensureInstance(i, { numero: LINE });
    expect(puts(i)).toHaveLength(1);
    const config = ctx.h.fake.sessions.get(i)!.config as { metadata: unknown; webhooks: Array<{ url: string }> };
    expect(config.metadata).toEqual({ a: '1' });
    expect(config.webhooks.map((w) => w.url)).toEqual([other.url, `${ctx.h.receiver.url}/gateway/waha/${i}`]);
    await ctx.h.gateway.ensureInstance(i, { numero: LINE });
    expect(puts(i)).toHaveLength(1);
  });

  it('connect starts a stopped session and polls it until the QR shows', async () => {
    const i = fresh();
    await ctx.h.gateway.ensureInstance(i, { numero: LINE });
    const r = await ctx.h.gateway.connect(i, LINE);
    expect(r).toEqual({ status: 'need_scan', qr: ctx.h.fake.sessions.get(i)!.qr });
    const paths = ctx.h.fake.requests.filter((q) => q.path.includes(i)).map((q) => `${q.method} ${q.path}`);
    expect(paths).toContain(`POST /api/sessions/${i}/start`);
    expect(ctx.h.fake.requests.find((q) => q.path === `/api/${i}/auth/qr`)?.query).toEqual({ format: 'raw' });
  });

  it('connect on a session WAHA does not know creates it first', async () => {
    const i = fresh();
    expect(await ctx.h.gateway.status(i)).toBe('logged_out');
    expect((await ctx.h.gateway.connect(i, LINE)).status).toBe('need_scan');
    expect(ctx.h.fake.sessions.has(i)).toBe(true);
  });

  it('pairing code: asks with the number as digits', async () => {
    const i = fresh();
    await ctx.h.gateway.ensureInstance(i, { numero: LINE });
    const r = await ctx.h.gateway.pairingCode(i, `+${LINE}`);
    expect(r).toEqual({ status: 'need_scan', code: ctx.h.fake.sessions.get(i)!.code!.code });
    expect(ctx.h.fake.requests.find((q) => q.path === `/api/${i}/auth/request-code`)?.body).toEqual({ phoneNumber: LINE });
  });

  it('a session still STARTING after the polls is "connecting"', async () => {
    const i = fresh();
    await ctx.h.gateway.ensureInstance(i, { numero: LINE });
    const slow = new WahaGateway(
      {
        url: ctx.h.fake.url,
        key: ctx.h.fake.apiKey,
        callbackUrl: ctx.h.receiver.url,
        secret: TEST_SECRET,
        timeoutMs: 5000,
        sendTimeoutMs: 5000,
        clock: new ManualClock(),
      },
      { pollPauseMs: 0, polls: 0 },
    );
    try {
      expect(await slow.connect(i, LINE)).toEqual({ status: 'connecting', qr: '' });
    } finally {
      await slow.close();
    }
  });

  it('WORKING with me null is "connecting", not "connected"', async () => {
    const i = await linked();
    expect(await ctx.h.gateway.status(i)).toBe('connected');
    await ctx.h.fake.killSilently(i);
    expect(ctx.h.fake.sessions.get(i)!.status).toBe('WORKING');
    expect(await ctx.h.gateway.status(i)).toBe('connecting');
  });

  it('WORKING with a stale me: after a send refused as not working, status checks /me', async () => {
    const i = await linked();
    await ctx.h.fake.killSilently(i, { staleMe: true });
    const meCalls = () => ctx.h.fake.requests.filter((r) => r.path === `/api/sessions/${i}/me`).length;
    expect(await ctx.h.gateway.status(i)).toBe('connected'); // WAHA's word, nothing says otherwise yet
    expect(meCalls()).toBe(0);
    const f = await failure(ctx.h.gateway.send(i, { msgId: 'z', tipo: 'texto', destinatario: TO, texto: 'x' }));
    expect(f.kind).toBe('transient');
    expect(await ctx.h.gateway.status(i)).toBe('connecting');
    expect(meCalls()).toBe(1);
    // The phone re-links: /me answers again, and a confirmed session is trusted again.
    await ctx.h.fake.phoneLogout(i);
    await ctx.h.scan(i);
    expect(await ctx.h.gateway.status(i)).toBe('connected');
    expect(await ctx.h.gateway.status(i)).toBe('connected');
    expect(meCalls()).toBe(2);
  });

  it('logout and delete of an unknown session count as done', async () => {
    const i = fresh();
    await ctx.h.gateway.logout(i);
    await ctx.h.gateway.deleteInstance(i);
    expect(ctx.h.fake.requests.filter((r) => r.path.startsWith(`/api/sessions/${i}`)).map((r) => r.method)).toEqual(['POST', 'DELETE']);
  });

  it('over HTTP: not on WhatsApp is permanent and names the number, rate limits carry a delay', async () => {
    const i = await linked();
    ctx.h.fake.notOnNetwork('5215500000009');
    const nope = await failure(ctx.h.gateway.send(i, { msgId: 'n', tipo: 'texto', destinatario: '5215500000009', texto: 'x' }));
    expect(nope).toMatchObject({ kind: 'permanent', message: '5215500000009 is not on WhatsApp' });
    ctx.h.fake.rateLimitNext(1);
    const rl = await failure(ctx.h.gateway.send(i, { msgId: 'r', tipo: 'texto', destinatario: TO, texto: 'x' }));
    expect(rl).toMatchObject({ kind: 'rate_limited', retryAfterMs: 60_000 });
  });

  it('a wrong API key: transient, and the key appears in no message', async () => {
    const key = 'very-secret-wrong-key';
    const gw = new WahaGateway(
      { url: ctx.h.fake.url, key, callbackUrl: ctx.h.receiver.url, secret: TEST_SECRET, timeoutMs: 5000, sendTimeoutMs: 5000, clock: new ManualClock() },
      { pollPauseMs: 0 },
    );
    try {
      const fs = [
        await failure(gw.status('x')),
        await failure(gw.send('x', { msgId: 'k', tipo: 'texto', destinatario: TO, texto: 'x' })),
        await failure(gw.connect('x', LINE)),
      ];
      for (const f of fs) {
        expect(f).toMatchObject({ kind: 'transient', message: 'WAHA refused the API key' });
        expect(f.message).not.toContain(key);
      }
    } finally {
      await gw.close();
    }
  });

  it('a send accepted without a message id is not retried (permanent) and may have gone (mayHaveSent)', async () => {
    const srv = createServer((_req, res) => res.writeHead(201, { 'content-type': 'application/json' }).end(JSON.stringify({ ok: true })));
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
    const { port } = srv.address() as AddressInfo;
    const gw = new WahaGateway(
      {
        url: `http://127.0.0.1:${port}`,
        key: 'k',
        callbackUrl: ctx.h.receiver.url,
        secret: TEST_SECRET,
        timeoutMs: 5000,
        sendTimeoutMs: 5000,
        clock: new ManualClock(),
      },
      { pollPauseMs: 0 },
    );
    try {
      const f = await failure(gw.send('x', { msgId: 'n', tipo: 'texto', destinatario: TO, texto: 'x' }));
      expect(f).toMatchObject({ kind: 'permanent', mayHaveSent: true });
      expect(f.message).toMatch(/accepted the send but answered no message id/);
    } finally {
      await gw.close();
      await new Promise((r) => srv.close(r));
    }
  });

  it('a gateway that is down fails transiently', async () => {
    const i = await linked();
    await ctx.h.down();
    try {
      expect((await failure(ctx.h.gateway.status(i))).kind).toBe('transient');
    } finally {
      await ctx.h.up();
    }
    expect(await ctx.h.gateway.status(i)).toBe('connected');
  });
});

describe('WAHA failure classification', () => {
  const KEY = 'the-api-key-123';
  const reply = (status: number, body: unknown, headers: JsonReply['headers'] = {}): JsonReply => ({ status, body, headers });
  const classify = (r: JsonReply) => classifyWaha(r, { instancia: 'linea-1', numero: '5215500000001', redact: [KEY], now: 0 });
  const nestBody = (statusCode: number, message: unknown) => ({ statusCode, message, error: 'x' });
  const engineBody = (message: string) => ({ statusCode: 500, exception: { message, name: 'Error' } });

  it('422 (session not WORKING) is transient', () => {
    expect(classify(reply(422, nestBody(422, 'Session status is not as expected')))).toMatchObject({
      kind: 'transient',
      message: expect.stringContaining('linea-1 is not working'),
    });
  });
  it('400 is permanent, with the validation message', () => {
    expect(classify(reply(400, nestBody(400, ['chatId should not be empty', 'text should not be empty'])))).toMatchObject({
      kind: 'permanent',
      message: 'WAHA refused the request: chatId should not be empty; text should not be empty',
    });
  });
  it('404 is transient: the session does not exist at the gateway', () => {
    expect(classify(reply(404, nestBody(404, 'not found')))).toMatchObject({ kind: 'transient', message: 'session linea-1 does not exist at the gateway' });
  });
  it.each([401, 403])('%i is transient: the key was refused', (status) => {
    expect(classify(reply(status, nestBody(status, 'Unauthorized')))).toMatchObject({ kind: 'transient', message: 'WAHA refused the API key' });
  });
  it('413 is permanent', () => {
    expect(classify(reply(413, 'Payload Too Large')).kind).toBe('permanent');
  });
  it('429 is rate_limited, by Retry-After or 60 s', () => {
    expect(classify(reply(429, '', { 'retry-after': '7' }))).toMatchObject({ kind: 'rate_limited', retryAfterMs: 7000 });
    expect(classify(reply(429, ''))).toMatchObject({ kind: 'rate_limited', retryAfterMs: 60_000 });
  });
  it.each(['Error: 463 reachout-timelock', 'rate-overlimit', 'Too many requests, slow down'])('5xx "%s" is rate_limited', (text) => {
    expect(classify(reply(500, engineBody(text)))).toMatchObject({ kind: 'rate_limited', retryAfterMs: 60_000 });
  });
  it.each(['jid does not exist', 'number is not registered', 'user is not on WhatsApp', 'no LID for user', 'invalid wid'])(
    '5xx "%s" is permanent: not on WhatsApp',
    (text) => {
      expect(classify(reply(500, engineBody(text)))).toMatchObject({ kind: 'permanent', message: '5215500000001 is not on WhatsApp' });
    },
  );
  it('a number containing 463 is not read as a rate limit', () => {
    expect(classify(reply(500, engineBody('5215546300000 is not registered'))).kind).toBe('permanent');
  });
  it('other 5xx are transient, and may follow a message that went; other refusals may not', () => {
    expect(classify(reply(502, 'Bad Gateway'))).toMatchObject({ kind: 'transient', message: 'WAHA 502: Bad Gateway', mayHaveSent: true });
    expect(classify(reply(422, { message: 'Session status is not as expected' }))).toMatchObject({ kind: 'transient', mayHaveSent: false });
    expect(classify(reply(404, 'Not Found'))).toMatchObject({ kind: 'transient', mayHaveSent: false });
    expect(classify(reply(500, engineBody('Protocol error: Session closed')))).toMatchObject({ kind: 'transient' });
  });
  it('the text of a request echoed in the body is not matched (only the error text)', () => {
    const body = { statusCode: 500, exception: { message: 'Session closed' }, request: { body: { text: 'too many items' } } };
    expect(classify(reply(500, body)).kind).toBe('transient');
  });
  it('messages are single-line and never contain the key', () => {
    for (const status of [400, 422, 500, 502]) {
      const f = classify(reply(status, { message: `bad key ${KEY}\nsecond line` }));
      expect(f.message).not.toContain(KEY);
      expect(f.message).not.toMatch(/\n/);
    }
  });
});

describe('WAHA inbound', () => {
  const { ctx, linked } = setup();
  let i: string;
  beforeAll(async () => {
    i = await linked();
  });
  const secret = () => instanceSecret(TEST_SECRET, 'waha', i);
  const since = (n: number) => ctx.events.slice(n);
  const envelope = (event: string, payload: Record<string, unknown>, session = i) =>
    Buffer.from(JSON.stringify({ id: 'evt_1', timestamp: 1, event, session, me: null, payload, engine: 'NOWEB' }));
  const call = (rawBody: Buffer, headers: Record<string, string>) => ctx.h.gateway.handleInbound({ instancia: i, subpath: '', headers, rawBody });
  const refused = async (p: Promise<unknown>, status: number) => {
    const e = await p.then(
      () => null,
      (x: unknown) => x,
    );
    expect(e).toBeInstanceOf(InboundRefused);
    expect((e as InboundRefused).status).toBe(status);
  };
  /** Posts a message event as WAHA would, returns the events it produced. */
  const receive = async (from: string, text: string, extra: Parameters<Harness['fake']['receive']>[3] = {}) => {
    const n = ctx.events.length;
    await ctx.h.fake.receive(i, from, text, extra);
    await ctx.h.fake.settle();
    return since(n);
  };

  it('a signed webhook (HMAC-SHA512 of the body) is accepted', async () => {
    ctx.h.fake.hmacEnabled(true);
    const evs = await receive('5491155554444', 'hola');
    const d = ctx.h.fake.deliveries.at(-1)!;
    expect(d.headers['x-webhook-hmac']).toBe(createHmac('sha512', secret()).update(d.body).digest('hex'));
    expect(d.headers['x-webhook-hmac-algorithm']).toBe('sha512');
    expect(d.status).toBe(200);
    expect(evs).toHaveLength(1);
    // Signature alone, without the custom header:
    const body = envelope('message', { id: 'false_1@c.us_ABC1', from: '1@c.us', fromMe: false, body: 'x', hasMedia: false });
    expect(await call(body, { 'x-webhook-hmac': createHmac('sha512', secret()).update(body).digest('hex') })).toEqual({ eventos: 1 });
  });

  it('without HMAC (Core tier) the custom header is enough', async () => {
    ctx.h.fake.hmacEnabled(false);
    try {
      const evs = await receive('5491155554444', 'sin firma');
      const d = ctx.h.fake.deliveries.at(-1)!;
      expect(d.headers['x-webhook-hmac']).toBeUndefined();
      expect(d.headers['x-pasarela-secret']).toBe(secret());
      expect(d.status).toBe(200);
      expect(evs).toHaveLength(1);
    } finally {
      ctx.h.fake.hmacEnabled(true);
    }
  });

  it('a wrong or missing signature is refused with 401 and gives no event', async () => {
    const body = envelope('message', { id: 'false_1@c.us_ABC2', from: '1@c.us', fromMe: false, body: 'forjado', hasMedia: false });
    const n = ctx.events.length;
    await refused(call(body, {}), 401);
    await refused(call(body, { 'x-pasarela-secret': 'f'.repeat(64) }), 401);
    await refused(call(body, { 'x-webhook-hmac': createHmac('sha512', 'other').update(body).digest('hex') }), 401);
    // A signature of another body does not pass either.
    await refused(call(body, { 'x-webhook-hmac': createHmac('sha512', secret()).update('{}').digest('hex') }), 401);
    // The secret of another instance does not pass.
    await refused(call(body, { 'x-pasarela-secret': instanceSecret(TEST_SECRET, 'waha', 'other-line') }), 401);
    expect(since(n)).toEqual([]);
    // Over HTTP, the receiver answers 401.
    const res = await fetch(`${ctx.h.receiver.url}/gateway/waha/${i}`, { method: 'POST', body, headers: { 'content-type': 'application/json' } });
    expect(res.status).toBe(401);
    expect(since(n)).toEqual([]);
  });

  it('a body that is not JSON, or for another session, is refused with 400', async () => {
    const h = (b: Buffer) => ({ 'x-pasarela-secret': secret(), 'x-webhook-hmac': createHmac('sha512', secret()).update(b).digest('hex') });
    const junk = Buffer.from('not json');
    await refused(call(junk, h(junk)), 400);
    const other = envelope('message', { id: 'false_1@c.us_ABC3', from: '1@c.us', body: 'x' }, 'another-session');
    await refused(call(other, h(other)), 400);
  });

  it('text: sender digits, bare id, timestamp, dedupe key on the serialized id', async () => {
    const evs = await receive('5491155554444', 'buenas', { id: '3EB0TEXT', timestamp: 1_750_000_000 });
    expect(evs).toEqual([
      {
        type: 'inbound',
        instancia: i,
        de: '5491155554444',
        tipo: 'texto',
        texto: 'buenas',
        media: null,
        gatewayMsgId: '3EB0TEXT',
        at: 1_750_000_000_000,
        dedupeKey: `waha:${i}:false_5491155554444@c.us_3EB0TEXT`,
      },
    ]);
  });

  it.each([
    ['image/jpeg', 'imagen'],
    ['image/webp', 'sticker'],
    ['video/mp4', 'video'],
    ['audio/ogg; codecs=opus', 'audio'],
    ['application/pdf', 'documento'],
  ])('media %s is %s, with its URL and never base64', async (mimetype, tipo) => {
    const media = { url: `http://waha.local/api/files/${tipo}`, mimetype, filename: tipo === 'documento' ? 'f.pdf' : null };
    const [e] = await receive('5491155554444', tipo === 'sticker' ? '' : 'pie', { hasMedia: true, media: { ...media, data: 'QUJD' } as never });
    expect(e).toMatchObject({ type: 'inbound', tipo, texto: tipo === 'sticker' ? null : 'pie' });
    expect((e as { media: unknown }).media).toEqual({ mime: mimetype, url: media.url, ...(media.filename ? { filename: media.filename } : {}) });
  });

  it('a hidden-number sender (@lid) is kept as its JID; @s.whatsapp.net becomes digits', async () => {
    expect((await receive('123456789012345@lid', 'hola'))[0]).toMatchObject({ de: '123456789012345@lid' });
    expect((await receive('5491100001111@s.whatsapp.net', 'hola'))[0]).toMatchObject({ de: '5491100001111' });
  });

  it('groups, status updates, channels and our own messages are ignored', async () => {
    expect(await receive('120363000000000000@g.us', 'grupo')).toEqual([]);
    expect(await receive('status@broadcast', 'estado')).toEqual([]);
    expect(await receive('120363000000000001@newsletter', 'canal')).toEqual([]);
    expect(await receive('5491155554444', 'mío', { fromMe: true })).toEqual([]);
    expect(ctx.h.receiver.calls.at(-1)!.status).toBe(200);
  });

  it('acks: DEVICE, READ, PLAYED and ERROR map; PENDING, SERVER and acks of others do not', async () => {
    const ack = async (payload: Record<string, unknown>) => {
      const n = ctx.events.length;
      await call(envelope('message.ack', payload), { 'x-pasarela-secret': secret() });
      return since(n);
    };
    const base = { id: `true_${TO}@c.us_3EB0ACK`, from: `${LINE}@c.us`, to: `${TO}@c.us`, participant: null, fromMe: true };
    expect(await ack({ ...base, ack: 2, ackName: 'DEVICE' })).toMatchObject([{ type: 'receipt', gatewayMsgId: '3EB0ACK', estado: 'entregado' }]);
    expect(await ack({ ...base, ack: 3, ackName: 'READ' })).toMatchObject([{ estado: 'leido' }]);
    expect(await ack({ ...base, ack: 4 })).toMatchObject([{ estado: 'leido' }]);
    expect(await ack({ ...base, ack: -1, ackName: 'ERROR' })).toMatchObject([{ estado: 'error', error: expect.stringMatching(/failed/) }]);
    expect(await ack({ ...base, ack: 0, ackName: 'PENDING' })).toEqual([]);
    expect(await ack({ ...base, ack: 1, ackName: 'SERVER' })).toEqual([]);
    expect(await ack({ ...base, id: `false_${TO}@c.us_3EB0IN`, fromMe: false, ack: 3, ackName: 'READ' })).toEqual([]);
  });

  it('session.status maps each WAHA status; other events are ignored', async () => {
    const session = async (status: string) => {
      const n = ctx.events.length;
      const b = envelope('session.status', { name: i, status });
      await call(b, { 'x-pasarela-secret': secret() });
      return since(n).map((e) => (e as { status: string }).status);
    };
    expect(await session('SCAN_QR_CODE')).toEqual(['need_scan']);
    expect(await session('WORKING')).toEqual(['connected']);
    expect(await session('STARTING')).toEqual(['connecting']);
    expect(await session('STOPPED')).toEqual(['disconnected']);
    expect(await session('FAILED')).toEqual(['disconnected']);
    const b = envelope('presence.update', { id: '1@c.us' });
    expect(await call(b, { 'x-pasarela-secret': secret() })).toEqual({ eventos: 0 });
  });

  it('a scan reported by WAHA arrives as a connected session event', async () => {
    const j = await linked();
    await until(() => ctx.events.some((e) => e.type === 'session' && e.instancia === j && e.status === 'connected'), { what: 'connected event' });
  });
});
