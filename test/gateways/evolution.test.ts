import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/core/time/clock.js';
import { GatewayFailure, InboundRefused, type GatewayEvent, type OutboundMessage } from '../../src/core/ports/gateway.js';
import { EvolutionGateway } from '../../src/gateways/evolution.js';
import { classifyEvolution } from '../../src/gateways/evolution-failure.js';
import { evolutionEvents } from '../../src/gateways/evolution-inbound.js';
import { extensionFor } from '../../src/gateways/media-files.js';
import type { JsonReply } from '../../src/gateways/http-json.js';
import { instanceSecret } from '../../src/gateways/inbound-secret.js';
import { until } from '../helpers/poll.js';
import { SAMPLES } from './contract.js';
import { startEvolutionHarness } from './evolution-harness.js';

/**
 * Evolution-specific behaviour over real HTTP against the fake: the request
 * shapes Evolution needs, failure classification, the `{count:0}` and lying
 * `open` quirks, and the mapping of its webhooks. The shared contract suite
 * (contract.ts) covers what every gateway must do.
 */
const LINE = '5215512345678';
const TO = '5215587654321';
const NOW = Date.UTC(2026, 5, 1, 12);

describe('evolution adapter', () => {
  let h: Awaited<ReturnType<typeof startEvolutionHarness>>;
  let dir: string;
  const events: GatewayEvent[] = [];
  let n = 0;
  const fresh = () => `evo-${++n}`;
  const of = (i: string) => events.filter((e) => e.instancia === i);
  const file = (name: string, bytes: Buffer) => {
    const p = join(dir, name);
    writeFileSync(p, bytes);
    return p;
  };
  const lastRequest = (pathStart: string) => [...h.fake.requests].reverse().find((r) => r.path.startsWith(pathStart));
  const bodyOf = (pathStart: string) => lastRequest(pathStart)!.body as Record<string, unknown>;
  const send = (i: string, m: Partial<OutboundMessage>) => h.gateway.send(i, { msgId: `m-${++n}`, tipo: 'texto', destinatario: TO, ...m });

  async function failure(p: Promise<unknown>): Promise<GatewayFailure> {
    const err = await p.then(
      () => new Error('expected a GatewayFailure'),
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(GatewayFailure);
    return err as GatewayFailure;
  }

  async function linked(): Promise<string> {
    const i = fresh();
    await h.gateway.ensureInstance(i, { numero: LINE });
    expect((await h.gateway.connect(i, LINE)).status).toBe('need_scan');
    await h.scan(i);
    return i;
  }

  /** A webhook body posted to the receiver as Evolution would, with the instance's secret unless told otherwise. */
  async function inbound(
    i: string,
    body: unknown,
    headers: Record<string, string> = { 'x-pasarela-secret': instanceSecret('test-secret', 'evolution', i) },
    suffix = '',
  ) {
    const r = await fetch(`${h.receiver.url}/gateway/evolution/${i}${suffix}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });
    return r.status;
  }

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'pasarela-evo-'));
    h = await startEvolutionHarness({ clock: new ManualClock(NOW) });
    h.gateway.onEvent((e) => {
      events.push(e);
    });
  });
  afterAll(async () => {
    await h?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  describe('instances', () => {
    it('creates with the webhook, its secret header and the token; adopting re-points the webhook', async () => {
      const i = fresh();
      await h.gateway.ensureInstance(i, { numero: LINE, token: 'tok-123' });
      const create = bodyOf('/instance/create');
      expect(create).toMatchObject({ instanceName: i, integration: 'WHATSAPP-BAILEYS', qrcode: false, token: 'tok-123' });
      const hook = {
        enabled: true,
        url: `${h.receiver.url}/gateway/evolution/${i}`,
        headers: { 'x-pasarela-secret': instanceSecret('test-secret', 'evolution', i) },
        byEvents: false,
        base64: false,
        events: ['MESSAGES_UPSERT', 'MESSAGES_UPDATE', 'CONNECTION_UPDATE', 'QRCODE_UPDATED', 'LOGOUT_INSTANCE', 'REMOVE_INSTANCE'],
      };
      expect(create.webhook).toEqual(hook);
      expect(h.fake.instances.get(i)!.token).toBe('tok-123');

      // Another pasarela address (or a restart on another port): the same instance is adopted and its webhook moved.
      const moved = new EvolutionGateway({
        url: h.fake.url,
        key: h.fake.apiKey,
        callbackUrl: 'http://127.0.0.1:9/otro',
        secret: 'test-secret',
        timeoutMs: 2000,
        sendTimeoutMs: 2000,
        clock: new ManualClock(),
      });
      try {
        await moved.ensureInstance(i, { numero: LINE });
      } finally {
        await moved.close();
      }
      expect(h.fake.requests.filter((r) => r.path === '/instance/create' && (r.body as { instanceName: string }).instanceName === i)).toHaveLength(2);
      expect(bodyOf(`/webhook/set/${i}`)).toEqual({ webhook: { ...hook, url: `http://127.0.0.1:9/otro/gateway/evolution/${i}` } });
      expect(h.fake.instances.get(i)!.webhook).toMatchObject({ url: `http://127.0.0.1:9/otro/gateway/evolution/${i}`, enabled: true });
    });

    it('sends no token when it has none (Evolution makes one)', async () => {
      const i = fresh();
      await h.gateway.ensureInstance(i, { numero: LINE });
      expect(bodyOf('/instance/create')).not.toHaveProperty('token');
      expect(h.fake.instances.get(i)!.token).toMatch(/^[0-9A-F-]{36}$/);
    });

    it('connect creates an instance Evolution does not know, then answers its QR', async () => {
      const i = fresh();
      const r = await h.gateway.connect(i, LINE);
      expect(r.status).toBe('need_scan');
      expect(r.qr).toMatch(/^2@/);
      expect(h.fake.instances.get(i)?.webhook?.url).toContain(`/gateway/evolution/${i}`);
    });

    it('connect that answers {count:0} is asked again 3 times, then reads as connecting', async () => {
      const i = fresh();
      await h.gateway.ensureInstance(i, { numero: LINE });
      const before = h.fake.requests.length;
      h.fake.emptyQrCalls(4);
      expect(await h.gateway.connect(i, LINE)).toEqual({ status: 'connecting', qr: '' });
      expect(h.fake.requests.slice(before).filter((r) => r.path === `/instance/connect/${i}`)).toHaveLength(4);
      h.fake.emptyQrCalls(2);
      const r = await h.gateway.connect(i, LINE);
      expect(r.status).toBe('need_scan');
      expect(r.qr).toBe(h.fake.instances.get(i)!.qr!.code);
    });

    it('asks for a pairing code with the number in digits', async () => {
      const i = fresh();
      await h.gateway.ensureInstance(i, { numero: LINE });
      const r = await h.gateway.pairingCode(i, '+52 1 55 1234-5678');
      expect(r).toEqual({ status: 'need_scan', code: h.fake.instances.get(i)!.pairingCode });
      expect(lastRequest(`/instance/connect/${i}`)!.path).toBe(`/instance/connect/${i}?number=5215512345678`);
    });

    it('a pairing code after a QR: the QR socket is logged out, then started again with the number', async () => {
      const i = fresh();
      await h.gateway.ensureInstance(i, { numero: LINE });
      await h.gateway.connect(i, LINE);
      const before = h.fake.requests.length;
      const r = await h.gateway.pairingCode(i, LINE);
      expect(r).toEqual({ status: 'need_scan', code: h.fake.instances.get(i)!.pairingCode });
      expect(h.fake.requests.slice(before).map((q) => `${q.method} ${q.path}`)).toEqual([
        `GET /instance/connect/${i}?number=${LINE}`,
        `DELETE /instance/logout/${i}`,
        `GET /instance/connectionState/${i}`,
        `GET /instance/connect/${i}?number=${LINE}`,
      ]);
      // Asked again, the socket started with the number answers its code: nothing is closed.
      const again = h.fake.requests.length;
      expect((await h.gateway.pairingCode(i, LINE)).code).toBe(r.code);
      expect(h.fake.requests.slice(again).map((q) => q.method)).toEqual(['GET']);
    });

    it('status: unknown instance is logged_out, close is logged_out, connecting is connecting', async () => {
      expect(await h.gateway.status('evo-nunca-creada')).toBe('logged_out');
      const i = fresh();
      await h.gateway.ensureInstance(i, { numero: LINE });
      expect(await h.gateway.status(i)).toBe('logged_out');
      await h.gateway.connect(i, LINE);
      expect(await h.gateway.status(i)).toBe('connecting');
    });

    it('"open" is verified with a presence update; a session that lies reads as connecting and a restart is asked for', async () => {
      const i = await linked();
      expect(await h.gateway.status(i)).toBe('connected');
      expect(bodyOf(`/instance/setPresence/${i}`)).toEqual({ presence: 'unavailable' });
      h.fake.killSilently(i);
      const st = await (await fetch(`${h.fake.url}/instance/connectionState/${i}`, { headers: { apikey: h.fake.apiKey } })).json();
      expect(st).toEqual({ instance: { instanceName: i, state: 'open' } });
      // Asked without acting (a session event's re-read): the same answer, and no restart, whose own events would ask again.
      expect(await h.gateway.status(i, { act: false })).toBe('connecting');
      expect(h.fake.requests.filter((r) => r.path === `/instance/restart/${i}`)).toEqual([]);
      expect(await h.gateway.status(i)).toBe('connecting');
      await until(() => h.fake.requests.some((r) => r.method === 'POST' && r.path === `/instance/restart/${i}`), { what: 'a restart' });
      const f = await failure(send(i, { texto: 'x' }));
      expect(f.kind).toBe('transient');
    });

    it('logout of a closed instance and delete of a missing one count as done', async () => {
      const i = fresh();
      await h.gateway.ensureInstance(i, { numero: LINE });
      await h.gateway.logout(i);
      expect(lastRequest(`/instance/logout/${i}`)).toBeDefined();
      await h.gateway.deleteInstance(i);
      await h.gateway.deleteInstance(i);
      await h.gateway.logout(i);
      expect(h.fake.instances.has(i)).toBe(false);
    });

    it('connect that answers 200 {error:true} (its own caught error) is a transient failure', async () => {
      const srv = createServer((_req, res) =>
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ error: true, message: 'Connection Failure' })),
      );
      await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
      const gw = new EvolutionGateway(
        {
          url: `http://127.0.0.1:${(srv.address() as AddressInfo).port}`,
          key: 'k-secreta',
          callbackUrl: 'http://x',
          secret: 's',
          timeoutMs: 2000,
          sendTimeoutMs: 2000,
          clock: new ManualClock(),
        },
        { qrRetryPauseMs: 0 },
      );
      try {
        const f = await failure(gw.connect('x', LINE));
        expect(f.kind).toBe('transient');
        expect(f.message).toContain('Connection Failure');
      } finally {
        await gw.close();
        await new Promise((r) => srv.close(r));
      }
    });
  });

  describe('sends', () => {
    let i: string;
    beforeAll(async () => {
      i = await linked();
    });

    it('text: number in digits, linkPreview only when asked, never a delay; answers key.id', async () => {
      const { gatewayMsgId } = await send(i, { texto: 'hola', destinatario: '+52 1 55 8765 4321' });
      expect(gatewayMsgId).toMatch(/^3EB0[0-9A-F]{16}$/);
      expect(bodyOf(`/message/sendText/${i}`)).toEqual({ number: TO, text: 'hola', linkPreview: false });
      await send(i, { texto: 'mira https://x.example', previewUrl: true });
      expect(bodyOf(`/message/sendText/${i}`)).toEqual({ number: TO, text: 'mira https://x.example', linkPreview: true });
    });

    it('base64 media goes raw, without a data: prefix, and the fake decodes the same bytes', async () => {
      await send(i, { tipo: 'imagen', filePath: file('a.png', SAMPLES.png), mime: 'image/png', caption: 'foto' });
      const b = bodyOf(`/message/sendMedia/${i}`);
      expect(b).toEqual({ number: TO, mediatype: 'image', media: SAMPLES.png.toString('base64'), mimetype: 'image/png', caption: 'foto' });
      expect(h.fake.messages.at(-1)!.bytes!.equals(SAMPLES.png)).toBe(true);
    });

    it('documents always carry a fileName with an extension', async () => {
      const cases: Array<[Partial<OutboundMessage>, string]> = [
        [{ filename: 'factura.pdf', mime: 'application/pdf' }, 'factura.pdf'],
        [{ filename: 'contrato', mime: 'application/pdf' }, 'contrato.pdf'],
        [{ mime: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document' }, 'documento.docx'],
        [{ filename: 'hoja', mime: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet' }, 'hoja.xlsx'],
        [{ mime: 'text/csv; charset=utf-8' }, 'documento.csv'],
      ];
      for (const [m, name] of cases) {
        await send(i, { tipo: 'documento', filePath: file('d.bin', SAMPLES.pdf), ...m });
        expect(bodyOf(`/message/sendMedia/${i}`)).toMatchObject({ mediatype: 'document', fileName: name, media: SAMPLES.pdf.toString('base64') });
      }
      await send(i, { tipo: 'documento', url: 'https://media.example/descargas/reporte.xlsx?token=1' });
      expect(bodyOf(`/message/sendMedia/${i}`)).toMatchObject({ media: 'https://media.example/descargas/reporte.xlsx?token=1', fileName: 'documento.xlsx' });
      await send(i, { tipo: 'documento', url: 'https://media.example/descargar/123', filename: 'informe' });
      expect(bodyOf(`/message/sendMedia/${i}`)).toMatchObject({ fileName: 'informe.bin' });
      await send(i, { tipo: 'documento', url: 'https://media.example/descargar/123', mime: 'application/zip' });
      expect(bodyOf(`/message/sendMedia/${i}`)).toMatchObject({ fileName: 'documento.zip' });
      // Evolution derives the mimetype from the name: with the extension it gets the right one.
      expect((h.fake.messages.at(-1)!.record.message as Record<string, { mimetype: string }>).documentMessage!.mimetype).toBe('application/zip');
    });

    it('a voice note goes through sendWhatsAppAudio, a plain audio through sendMedia', async () => {
      await send(i, { tipo: 'audio', filePath: file('v.ogg', SAMPLES.ogg), mime: 'audio/ogg', ptt: true });
      expect(bodyOf(`/message/sendWhatsAppAudio/${i}`)).toEqual({ number: TO, audio: SAMPLES.ogg.toString('base64') });
      await send(i, { tipo: 'audio', url: 'https://media.example/a.mp3', mime: 'audio/mpeg' });
      expect(bodyOf(`/message/sendMedia/${i}`)).toEqual({ number: TO, mediatype: 'audio', media: 'https://media.example/a.mp3', mimetype: 'audio/mpeg' });
    });

    it('stickers go through sendSticker; video by URL through sendMedia', async () => {
      await send(i, { tipo: 'sticker', filePath: file('s.webp', SAMPLES.webp), mime: 'image/webp' });
      expect(bodyOf(`/message/sendSticker/${i}`)).toEqual({ number: TO, sticker: SAMPLES.webp.toString('base64') });
      await send(i, { tipo: 'video', url: 'https://media.example/v.mp4', mime: 'video/mp4', caption: 'un video', filename: 'clip' });
      expect(bodyOf(`/message/sendMedia/${i}`)).toEqual({
        number: TO,
        mediatype: 'video',
        media: 'https://media.example/v.mp4',
        mimetype: 'video/mp4',
        caption: 'un video',
        fileName: 'clip.mp4',
      });
    });

    it('no send carries a delay', () => {
      const sends = h.fake.requests.filter((r) => r.path.startsWith('/message/'));
      expect(sends.length).toBeGreaterThan(5);
      for (const r of sends) expect(r.body).not.toHaveProperty('delay');
    });

    it('the fake refuses what Evolution refuses, and each refusal is classified', async () => {
      h.fake.notOnNetwork('5215500000009');
      const nope = await failure(send(i, { destinatario: '5215500000009', texto: 'x' }));
      expect(nope).toMatchObject({ kind: 'permanent', message: '5215500000009 is not on WhatsApp' });
      h.fake.rateLimitNext(1);
      const rl = await failure(send(i, { texto: 'x' }));
      expect(rl.kind).toBe('rate_limited');
      expect(rl.retryAfterMs).toBe(60_000);
      expect((await failure(send(i, { texto: '   ' }))).kind).toBe('permanent');
      const idle = fresh();
      await h.gateway.ensureInstance(idle, { numero: LINE });
      expect((await failure(send(idle, { texto: 'x' }))).message).toMatch(/Connection Closed/);
      expect((await failure(send('evo-no-existe', { texto: 'x' }))).message).toBe('instance evo-no-existe does not exist at the gateway');
    });

    it('the API key never appears in a failure, even when the gateway echoes it', async () => {
      const wrong = new EvolutionGateway({
        url: h.fake.url,
        key: 'clave-equivocada-123',
        callbackUrl: h.receiver.url,
        secret: 'test-secret',
        timeoutMs: 2000,
        sendTimeoutMs: 2000,
        clock: new ManualClock(),
      });
      try {
        const fs = [
          await failure(wrong.send(i, { msgId: 'k', tipo: 'texto', destinatario: TO, texto: 'x' })),
          await failure(wrong.status(i)),
          await failure(wrong.ensureInstance(fresh(), { numero: LINE })),
        ];
        for (const f of fs) {
          expect(f).toMatchObject({ kind: 'transient', message: 'Evolution refused the API key' });
          expect(f.message).not.toContain('clave-equivocada-123');
        }
      } finally {
        await wrong.close();
      }
      const echoed = classifyEvolution(
        { status: 400, headers: {}, body: { status: 400, error: 'Bad Request', response: { message: ['bad apikey clave-123 for secreto-9'] } } },
        { instancia: 'x', redact: ['clave-123', 'secreto-9'], now: 0 },
      );
      expect(echoed.message).not.toMatch(/clave-123|secreto-9/);
      expect(echoed.message).toContain('***');
    });
  });

  describe('failure classification', () => {
    const reply = (status: number, message: unknown, headers: Record<string, string> = {}) => ({
      status,
      headers,
      body: { status, error: 'x', response: { message } },
    });
    // mayHaveSent: a text that may follow a message that went (core/sending/idempotency.ts); every other answer proves nothing went.
    const uncertain = new Set(['400 connection lost', '400 timed out', '400 socket', '400 unknown', '500', '502']);
    const rows: Array<[string, JsonReply, GatewayFailure['kind'], RegExp, number?]> = [
      [
        '400 exists:false',
        reply(400, [{ exists: false, jid: '5215500000001@s.whatsapp.net', number: '5215500000001' }]),
        'permanent',
        /^5215500000001 is not on WhatsApp$/,
      ],
      ['400 Connection Closed', reply(400, ['Error: Connection Closed']), 'transient', /Connection Closed/],
      ['400 not connected', reply(400, ['The "x" instance is not connected']), 'transient', /not connected/],
      ['400 connection lost', reply(400, 'Connection Lost'), 'transient', /Connection Lost/],
      ['400 timed out', reply(400, ['Timed Out']), 'transient', /Timed Out/],
      ['400 socket', reply(400, ['socket hang up']), 'transient', /socket/],
      ['400 rate-overlimit', reply(400, ['rate-overlimit']), 'rate_limited', /rate-overlimit/, 60_000],
      ['400 rate-overlimit with Retry-After', reply(400, ['rate-overlimit'], { 'retry-after': '7' }), 'rate_limited', /rate/, 7000],
      ['400 too many', reply(400, ['Too many requests']), 'rate_limited', /Too many/, 60_000],
      ['400 owned media', reply(400, ['Owned media must be a url or base64']), 'permanent', /Owned media/],
      ['400 base64 file name', reply(400, ['For base64 the file name must be informed.']), 'permanent', /file name/],
      ['400 text required', reply(400, ['Text is required']), 'permanent', /Text is required/],
      ['400 not of a type', reply(400, ['number is not of a type(s) string']), 'permanent', /not of a type/],
      ['400 requires property', reply(400, ['instance requires property "number"']), 'permanent', /requires property/],
      ['400 pattern', reply(400, ['number does not match pattern "^\\d+"']), 'permanent', /does not match pattern/],
      ['400 invalid', reply(400, ['Invalid integration']), 'permanent', /Invalid integration/],
      ['400 unknown', reply(400, ['Error: something odd happened']), 'transient', /something odd/],
      ['401', reply(401, 'Unauthorized'), 'transient', /^Evolution refused the API key$/],
      ['403', reply(403, ['Forbidden']), 'transient', /^Evolution refused the API key$/],
      ['404', reply(404, ['The "inst-1" instance does not exist']), 'transient', /^instance inst-1 does not exist at the gateway$/],
      ['413', reply(413, 'Payload Too Large'), 'permanent', /too large/],
      ['429', reply(429, 'slow down', { 'retry-after': '12' }), 'rate_limited', /rate limited/, 12_000],
      ['429 without Retry-After', reply(429, 'slow down'), 'rate_limited', /rate limited/, 60_000],
      ['500', reply(500, ['Internal Server Error']), 'transient', /500/],
      ['502', { status: 502, headers: {}, body: '<html>\n bad gateway\n</html>' }, 'transient', /502/],
    ];
    it.each(rows)('%s', (name, r, kind, message, retry) => {
      const f = classifyEvolution(r, { instancia: 'inst-1', redact: ['k-secreta-1'], now: NOW });
      expect(f.kind).toBe(kind);
      expect(f.message).toMatch(message);
      expect(f.message).not.toMatch(/\n/);
      expect(f.message.length).toBeLessThan(320);
      if (retry !== undefined) expect(f.retryAfterMs).toBe(retry);
      expect(f.mayHaveSent).toBe(uncertain.has(name));
    });
  });

  describe('inbound', () => {
    let i: string;
    beforeAll(async () => {
      i = await linked();
      await h.fake.settle();
    });
    const upsert = async (data: Record<string, unknown>) => {
      const before = of(i).length;
      const d = await h.fake.post(i, 'MESSAGES_UPSERT', {
        pushName: 'Ana',
        status: 'DELIVERY_ACK',
        messageTimestamp: 1757464274,
        instanceId: 'x',
        source: 'android',
        ...data,
      });
      expect(d?.status).toBe(200);
      return of(i).slice(before);
    };
    const key = (id: string, remoteJid = '5491155554444@s.whatsapp.net', more: Record<string, unknown> = {}) => ({
      key: { remoteJid, fromMe: false, id, ...more },
    });

    it('a wrong or missing secret is refused with 401 and reports nothing', async () => {
      const before = events.length;
      const body = { event: 'messages.upsert', instance: i, data: { ...key('FORGED1'), message: { conversation: 'x' }, messageType: 'conversation' } };
      expect(await inbound(i, body, { 'x-pasarela-secret': 'f'.repeat(64) })).toBe(401);
      expect(await inbound(i, body, {})).toBe(401);
      // Another instance's secret does not open this one.
      expect(await inbound(i, body, { 'x-pasarela-secret': instanceSecret('test-secret', 'evolution', 'otra') })).toBe(401);
      expect(events.length).toBe(before);
    });

    it('a body that is not JSON, has no event, or names another instance is refused with 400', async () => {
      expect(await inbound(i, 'not json')).toBe(400);
      expect(await inbound(i, { data: {} })).toBe(400);
      expect(await inbound(i, { event: 'messages.upsert', instance: 'otra', data: {} })).toBe(400);
      await expect(
        h.gateway.handleInbound({
          instancia: i,
          subpath: '',
          headers: { 'x-pasarela-secret': instanceSecret('test-secret', 'evolution', i) },
          rawBody: Buffer.from('['),
        }),
      ).rejects.toBeInstanceOf(InboundRefused);
    });

    it('text: sender digits, text, network id, timestamp in ms and a dedupe key', async () => {
      const [e, more] = await upsert({ ...key('TXT1'), message: { conversation: 'hola' }, messageType: 'conversation' });
      expect(more).toBeUndefined();
      expect(e).toEqual({
        type: 'inbound',
        instancia: i,
        de: '5491155554444',
        tipo: 'texto',
        texto: 'hola',
        media: null,
        gatewayMsgId: 'TXT1',
        at: 1757464274000,
        dedupeKey: `evolution:${i}:TXT1`,
      });
      const [x] = await upsert({
        ...key('TXT2'),
        message: { extendedTextMessage: { text: 'con link https://x.example' } },
        messageType: 'extendedTextMessage',
        messageTimestamp: undefined,
      });
      expect(x).toMatchObject({ tipo: 'texto', texto: 'con link https://x.example', at: NOW });
    });

    it('every media kind, as metadata only (never the base64 nor the apikey)', async () => {
      const token = h.fake.instances.get(i)!.token;
      const b64 = 'QkFTRTY0LUJZVEVT';
      const cases: Array<[Record<string, unknown>, Record<string, unknown>]> = [
        [
          {
            message: {
              imageMessage: { url: 'https://mmg.whatsapp.net/a', mimetype: 'image/jpeg', caption: 'foto', fileLength: '1234' },
              base64: b64,
              mediaUrl: 'https://s3.example/a.jpg',
            },
            messageType: 'imageMessage',
          },
          { tipo: 'imagen', texto: 'foto', media: { mime: 'image/jpeg', bytes: 1234, url: 'https://s3.example/a.jpg' } },
        ],
        [
          { message: { videoMessage: { mimetype: 'video/mp4', fileLength: { low: 77, high: 0, unsigned: true } }, base64: b64 }, messageType: 'videoMessage' },
          { tipo: 'video', texto: null, media: { mime: 'video/mp4', bytes: 77 } },
        ],
        [
          {
            message: { documentMessage: { mimetype: 'application/pdf', fileName: 'factura.pdf', fileLength: 99, caption: 'la factura' } },
            messageType: 'documentMessage',
          },
          { tipo: 'documento', texto: 'la factura', media: { mime: 'application/pdf', filename: 'factura.pdf', bytes: 99 } },
        ],
        [
          {
            message: { documentWithCaptionMessage: { message: { documentMessage: { mimetype: 'text/csv', fileName: 'datos.csv', caption: 'datos' } } } },
            messageType: 'documentWithCaptionMessage',
          },
          { tipo: 'documento', texto: 'datos', media: { mime: 'text/csv', filename: 'datos.csv' } },
        ],
        [
          { message: { audioMessage: { mimetype: 'audio/ogg; codecs=opus', ptt: true, seconds: 4 } }, messageType: 'audioMessage' },
          { tipo: 'audio', texto: null, media: { mime: 'audio/ogg; codecs=opus', ptt: true } },
        ],
        [
          { message: { audioMessage: { mimetype: 'audio/mpeg', ptt: false } }, messageType: 'audioMessage' },
          { tipo: 'audio', media: { mime: 'audio/mpeg', ptt: false } },
        ],
        [
          { message: { stickerMessage: { mimetype: 'image/webp' } }, messageType: 'stickerMessage' },
          { tipo: 'sticker', texto: null, media: { mime: 'image/webp' } },
        ],
        [
          { message: { locationMessage: { degreesLatitude: 1 } }, messageType: 'locationMessage' },
          { tipo: 'otro', texto: null, media: null },
        ],
        [
          { message: { reactionMessage: { text: '👍' } }, messageType: 'reactionMessage' },
          { tipo: 'otro', texto: null, media: null },
        ],
      ];
      for (const [k, [data, expected]] of cases.entries()) {
        const got = await upsert({ ...key(`MEDIA${k}`), ...data });
        expect(got).toHaveLength(1);
        expect(got[0]).toMatchObject({ type: 'inbound', de: '5491155554444', gatewayMsgId: `MEDIA${k}`, ...expected });
        if (expected.media) expect((got[0] as { media: unknown }).media).toEqual(expected.media);
        expect(JSON.stringify(got[0])).not.toContain(b64);
        expect(JSON.stringify(got[0])).not.toContain(token);
      }
    });

    it('an @lid sender is its phone number when Evolution gives it, else the @lid id', async () => {
      const [a] = await upsert({
        ...key('LID1', '123456789012345@lid', { remoteJidAlt: '5491177778888@s.whatsapp.net', addressingMode: 'lid' }),
        message: { conversation: 'a' },
        messageType: 'conversation',
      });
      expect(a).toMatchObject({ de: '5491177778888' });
      const [b] = await upsert({
        ...key('LID2', '123456789012345@lid', { senderPn: '5491166665555@s.whatsapp.net' }),
        message: { conversation: 'b' },
        messageType: 'conversation',
      });
      expect(b).toMatchObject({ de: '5491166665555' });
      const [c] = await upsert({ ...key('LID3', '123456789012345@lid'), message: { conversation: 'c' }, messageType: 'conversation' });
      expect(c).toMatchObject({ de: '123456789012345@lid' });
    });

    it('groups, status broadcasts and the line’s own messages are not reported', async () => {
      const msg = { message: { conversation: 'x' }, messageType: 'conversation' };
      expect(await upsert({ ...key('G1', '120363000000000000@g.us', { participant: '5491155554444@s.whatsapp.net' }), ...msg })).toEqual([]);
      expect(await upsert({ ...key('S1', 'status@broadcast'), ...msg })).toEqual([]);
      expect(await upsert({ key: { remoteJid: '5491155554444@s.whatsapp.net', fromMe: true, id: 'ME1' }, ...msg })).toEqual([]);
    });

    it('"webhook by events" posts to /<event-name>; that path is accepted, even with no event in the body', async () => {
      h.fake.instances.get(i)!.webhook!.webhookByEvents = true;
      try {
        const got = await upsert({ ...key('BYEV1'), message: { conversation: 'por evento' }, messageType: 'conversation' });
        expect(got).toMatchObject([{ gatewayMsgId: 'BYEV1', texto: 'por evento' }]);
        expect(h.receiver.calls.at(-1)).toEqual({ path: `/gateway/evolution/${i}/messages-upsert`, status: 200 });
      } finally {
        h.fake.instances.get(i)!.webhook!.webhookByEvents = false;
      }
      const before = of(i).length;
      expect(
        await inbound(
          i,
          { instance: i, data: { ...key('BYEV2'), message: { conversation: 'y' }, messageType: 'conversation' } },
          undefined,
          '/messages-upsert',
        ),
      ).toBe(200);
      expect(of(i).slice(before)).toMatchObject([{ gatewayMsgId: 'BYEV2' }]);
    });

    it('receipts: delivered, read, played, failed; pending and server acks are not receipts', async () => {
      const { gatewayMsgId: id } = await send(i, { texto: 'acuse' });
      const before = of(i).length;
      for (const status of ['PENDING', 'SERVER_ACK', 'DELIVERY_ACK', 'READ', 'PLAYED', 'ERROR', 'DELETED'] as const) {
        await h.fake.post(i, 'MESSAGES_UPDATE', {
          keyId: id,
          remoteJid: `${TO}@s.whatsapp.net`,
          fromMe: true,
          participant: null,
          status,
          pollUpdates: null,
          instanceId: 'x',
          messageId: 'y',
        });
      }
      await h.fake.post(i, 'MESSAGES_UPDATE', { keyId: 'THEIRS', remoteJid: `${TO}@s.whatsapp.net`, fromMe: false, status: 'READ' });
      expect(of(i).slice(before)).toEqual([
        { type: 'receipt', instancia: i, gatewayMsgId: id, estado: 'entregado', at: NOW },
        { type: 'receipt', instancia: i, gatewayMsgId: id, estado: 'leido', at: NOW },
        { type: 'receipt', instancia: i, gatewayMsgId: id, estado: 'leido', at: NOW },
        { type: 'receipt', instancia: i, gatewayMsgId: id, estado: 'error', at: NOW, error: 'the network reported the message as failed' },
      ]);
    });

    it('an ack posted before the send is answered arrives first, by the same id', async () => {
      h.fake.ackBeforeReply(true);
      try {
        const before = of(i).length;
        const { gatewayMsgId } = await send(i, { texto: 'rapido' });
        expect(of(i).slice(before)).toEqual([{ type: 'receipt', instancia: i, gatewayMsgId, estado: 'entregado', at: NOW }]);
      } finally {
        h.fake.ackBeforeReply(false);
      }
    });

    it('session events: QR, scan, rotation, phone logout; other events are ignored', async () => {
      const j = fresh();
      await h.gateway.ensureInstance(j, { numero: LINE });
      await h.gateway.connect(j, LINE);
      await h.fake.settle();
      await h.rotateQr(j);
      await h.scan(j);
      await h.fake.post(j, 'CONNECTION_UPDATE', { instance: j, state: 'connecting', statusReason: 515 });
      await h.phoneLogout(j);
      const statuses = of(j).map((e) => (e.type === 'session' ? e.status : e.type));
      expect(statuses).toEqual(['connecting', 'need_scan', 'need_scan', 'connected', 'connecting', 'logged_out', 'logged_out']);
      const before = of(j).length;
      // Subscribed only to what pasarela follows; a body for any other event is answered and ignored.
      expect(await inbound(j, { event: 'send.message', instance: j, data: {} })).toBe(200);
      expect(await inbound(j, { event: 'presence.update', instance: j, data: { id: 'x' } })).toBe(200);
      expect(of(j).length).toBe(before);
    });
  });

  describe('the fake answers as Evolution does', () => {
    const call = async (method: string, path: string, key: string | null = h.fake.apiKey, json?: unknown) => {
      const r = await fetch(`${h.fake.url}${path}`, {
        method,
        headers: { ...(key ? { apikey: key } : {}), ...(json ? { 'content-type': 'application/json' } : {}) },
        body: json ? JSON.stringify(json) : undefined,
      });
      return { status: r.status, body: await r.json() };
    };

    it('auth: 401 without or with a wrong key; the instance token opens only its own routes', async () => {
      const i = fresh();
      const created = await call('POST', '/instance/create', h.fake.apiKey, { instanceName: i, integration: 'WHATSAPP-BAILEYS', token: `tok-${i}` });
      expect(created).toMatchObject({ status: 201, body: { instance: { instanceName: i, status: 'close' }, hash: `tok-${i}` } });
      expect(await call('GET', `/instance/connectionState/${i}`, null)).toEqual({
        status: 401,
        body: { status: 401, error: 'Unauthorized', response: { message: 'Unauthorized' } },
      });
      expect((await call('GET', `/instance/connectionState/${i}`, 'mala')).status).toBe(401);
      expect(await call('GET', `/instance/connectionState/${i}`, `tok-${i}`)).toEqual({ status: 200, body: { instance: { instanceName: i, state: 'close' } } });
      expect((await call('POST', '/instance/create', `tok-${i}`, { instanceName: fresh(), integration: 'WHATSAPP-BAILEYS' })).status).toBe(401);
      const mine = await call('GET', '/instance/fetchInstances', `tok-${i}`);
      expect(mine.body).toMatchObject([{ name: i, connectionStatus: 'close', token: `tok-${i}` }]);
    });

    it('errors: unknown instance, unknown route, name in use, bad integration, logout when closed, restart when closed', async () => {
      expect(await call('GET', '/instance/connect/nadie')).toEqual({
        status: 404,
        body: { status: 404, error: 'Not Found', response: { message: ['The "nadie" instance does not exist'] } },
      });
      expect(await call('POST', '/no/existe')).toEqual({
        status: 404,
        body: { status: 404, error: 'Not Found', response: { message: ['Cannot POST /no/existe'] } },
      });
      const i = fresh();
      await h.gateway.ensureInstance(i, { numero: LINE });
      expect(await call('POST', '/instance/create', h.fake.apiKey, { instanceName: i, integration: 'WHATSAPP-BAILEYS' })).toMatchObject({
        status: 403,
        body: { response: { message: [`This name "${i}" is already in use.`] } },
      });
      expect(await call('POST', '/instance/create', h.fake.apiKey, { instanceName: fresh(), integration: 'BAILEYS' })).toMatchObject({
        status: 400,
        body: { response: { message: ['Invalid integration'] } },
      });
      expect(await call('DELETE', `/instance/logout/${i}`)).toMatchObject({
        status: 400,
        body: { response: { message: [`The "${i}" instance is not connected`] } },
      });
      expect(await call('POST', `/instance/restart/${i}`)).toEqual({ status: 200, body: { error: true, message: `The "${i}" instance is not connected` } });
      expect(await call('GET', `/webhook/find/${i}`)).toMatchObject({
        status: 200,
        body: { enabled: true, webhookByEvents: false, events: expect.arrayContaining(['MESSAGES_UPSERT']) },
      });
    });

    it('send validations: number, blank text, data: prefix, base64 document without a name, closed session', async () => {
      const i = await linked();
      const b64 = SAMPLES.pdf.toString('base64');
      const msg = async (route: string, body: unknown) =>
        ((await call('POST', `/message/${route}/${i}`, h.fake.apiKey, body)).body as { response: { message: unknown } }).response.message;
      expect(await msg('sendText', { text: 'x' })).toEqual(['instance requires property "number"']);
      expect(await msg('sendText', { number: TO, text: ' ' })).toEqual(['Text is required']);
      expect(await msg('sendMedia', { number: TO, mediatype: 'image', media: `data:image/png;base64,${b64}` })).toEqual([
        'Owned media must be a url or base64',
      ]);
      expect(await msg('sendMedia', { number: TO, mediatype: 'document', media: b64 })).toEqual(['For base64 the file name must be informed.']);
      const ok = await call('POST', `/message/sendSticker/${i}`, h.fake.apiKey, { number: TO, sticker: `data:image/png;base64,${b64}` });
      expect(ok).toMatchObject({
        status: 201,
        body: { status: 'PENDING', messageType: 'stickerMessage', key: { fromMe: true, remoteJid: `${TO}@s.whatsapp.net` } },
      });
      h.fake.killSilently(i);
      expect(await msg('sendText', { number: TO, text: 'x' })).toEqual(['Connection Closed']);
      expect(await call('POST', `/instance/setPresence/${i}`, h.fake.apiKey, { presence: 'unavailable' })).toMatchObject({
        status: 400,
        body: { response: { message: ['Connection Closed'] } },
      });
    });
  });

  describe('webhook mapping (pure)', () => {
    const session = (event: string, data: unknown) => evolutionEvents('x', event, data, NOW).map((e) => (e.type === 'session' ? e.status : e.type));
    it.each([
      ['connection.update', { state: 'open', statusReason: 200 }, ['connected']],
      ['connection.update', { state: 'connecting', statusReason: 428 }, ['connecting']],
      ['connection.update', { state: 'close', statusReason: 401 }, ['logged_out']],
      ['connection.update', { state: 'close', statusReason: 403 }, ['disconnected']],
      ['connection.update', { state: 'refused', statusReason: 428 }, ['disconnected']],
      ['qrcode.updated', { qrcode: { instance: 'x', code: '2@a', base64: 'data:image/png;base64,AA' } }, ['need_scan']],
      ['qrcode.updated', { message: 'QR code limit reached, please login again', statusCode: 500 }, ['disconnected']],
      ['logout.instance', { instance: 'x' }, ['logged_out']],
      ['remove.instance', { instance: 'x' }, ['logged_out']],
      ['messages.delete', { id: 'x' }, []],
      ['chats.upsert', [{ id: 'x' }], []],
    ])('%s %j', (event, data, expected) => {
      expect(session(event, data)).toEqual(expected);
    });

    it('derives a file extension by MIME type, then the URL path, then bin', () => {
      expect(extensionFor('application/pdf', 'https://x/y.doc')).toBe('pdf');
      expect(extensionFor(undefined, 'https://x/y.DOCX?a=1')).toBe('docx');
      expect(extensionFor('application/x-unknown', 'https://x/descarga')).toBe('bin');
    });
  });
});
