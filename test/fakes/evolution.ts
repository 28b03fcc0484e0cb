import { createHash, createHmac, randomBytes, randomUUID } from 'node:crypto';
import { createServer, request as httpRequest, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/**
 * An in-memory stand-in for Evolution API v2 over real HTTP, built only from
 * shared/research/evolution-api-contract.md: same routes, auth, status codes,
 * bodies, error envelope and quirks (200 `{error:true}` from connect/restart,
 * `{count:0}` QRs, a connectionState that stays `open` after the link died).
 * Webhooks are POSTed in the documented envelope, in order per instance.
 * The "phone" and the "network" are the controls at the bottom.
 */

export type FakeState = 'close' | 'connecting' | 'open';

export interface FakeWebhook {
  id: string;
  enabled: boolean;
  url: string;
  headers: Record<string, string>;
  events: string[];
  webhookByEvents: boolean;
  webhookBase64: boolean;
  createdAt: string;
  updatedAt: string;
  instanceId: string;
}

export interface FakeInstance {
  name: string;
  id: string;
  token: string;
  integration: string;
  state: FakeState;
  /** The phone has linked this instance (creds exist); cleared by logout. */
  linked: boolean;
  /** The socket died while connectionState keeps saying `open` (killSilently). */
  dead: boolean;
  /** The line's own number, once known (pairing request or link). */
  number: string | null;
  qr: { code: string; base64: string; count: number } | null;
  pairingCode: string | null;
  /** The number the socket was started with; only such a socket gets pairing codes (one with each QR). */
  pairingNumber: string | null;
  webhook: FakeWebhook | null;
  createdAt: string;
  /** Webhook posts of this instance go out one after the other. */
  chain: Promise<void>;
}

export interface FakeRequest {
  method: string;
  /** Path with query string. */
  path: string;
  body: unknown;
  /** The request's headers as received (the apikey among them). */
  headers: IncomingMessage['headers'];
}

/** A message that reached the fake network: the exact request, the answer, and the decoded media. */
export interface FakeMessage {
  instance: string;
  route: 'sendText' | 'sendMedia' | 'sendWhatsAppAudio' | 'sendSticker';
  request: Record<string, unknown>;
  record: Record<string, unknown> & { key: { id: string; remoteJid: string } };
  /** Decoded bytes of base64 media (not kept with `keepMedia: false`). */
  bytes?: Buffer;
  /** SHA-256 (hex) and size of the decoded base64 media. */
  sha256?: string;
  size?: number;
  url?: string;
  /** When the send reached the fake (Date.now()). */
  at: number;
  /** The client's port of the connection it came on. */
  port?: number;
  /** Who sent it: what the `peerOf` option named its connection when the fake accepted it (undefined without the option, or when it could not tell). */
  peer?: string;
}

export interface FakeDelivery {
  instance: string;
  event: string;
  url: string;
  /** HTTP status the receiver answered; 0 when it could not be reached. */
  status: number;
  body: string;
}

export interface EvolutionFake {
  url: string;
  apiKey: string;
  instances: Map<string, FakeInstance>;
  requests: FakeRequest[];
  messages: FakeMessage[];
  deliveries: FakeDelivery[];
  /** The phone scans the QR showing now. */
  scan(instancia: string): Promise<void>;
  /** The phone types the pairing code; it must be the last one issued. */
  enterCode(instancia: string, code: string): Promise<void>;
  rotateQr(instancia: string): Promise<void>;
  phoneLogout(instancia: string): Promise<void>;
  /** Someone writes to the line; resolves once the webhook was answered. Returns key.id. */
  receive(instancia: string, from: string, text: string): Promise<string>;
  ack(instancia: string, keyId: string, status: 'DELIVERY_ACK' | 'READ' | 'PLAYED' | 'ERROR'): Promise<void>;
  /** Posts any event (UPPER_SNAKE name) with `data` through the instance's webhook, as Evolution would. */
  post(instancia: string, event: string, data: unknown): Promise<FakeDelivery | null>;
  notOnNetwork(numero: string): void;
  rateLimitNext(n: number): void;
  killSilently(instancia: string): void;
  ackBeforeReply(on: boolean): void;
  emptyQrCalls(n: number): void;
  down(): Promise<void>;
  up(): Promise<void>;
  /** Awaits every webhook post in flight. */
  settle(): Promise<void>;
  close(): Promise<void>;
}

class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly error: string,
    readonly detail: unknown,
  ) {
    super(error);
  }
}
const badRequest = (...message: unknown[]) => new HttpError(400, 'Bad Request', message);
const notFound = (message: string) => new HttpError(404, 'Not Found', [message]);

type Json = Record<string, unknown>;
const obj = (v: unknown): Json => (v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Json) : {});
const isoNow = () => new Date().toISOString();
const hex = (n: number) => randomBytes(n).toString('hex').toUpperCase();
const jid = (n: string) => `${n.replace(/\D/g, '')}@s.whatsapp.net`;
const QR_LIMIT = 30;
const PRESENCES = ['available', 'unavailable', 'composing', 'recording', 'paused'];
const INTEGRATIONS = ['WHATSAPP-BAILEYS', 'WHATSAPP-BUSINESS', 'EVOLUTION'];
/** Evolution re-derives the mimetype from fileName's extension. */
const MIME_BY_EXT: Record<string, string> = {
  pdf: 'application/pdf',
  docx: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  txt: 'text/plain',
  csv: 'text/csv',
  zip: 'application/zip',
  json: 'application/json',
  xml: 'application/xml',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  png: 'image/png',
  webp: 'image/webp',
  gif: 'image/gif',
  mp4: 'video/mp4',
  mp3: 'audio/mpeg',
  ogg: 'audio/ogg',
  bin: 'application/octet-stream',
};
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

/** WhatsApp-like QR content; a fresh ref each rotation. */
function newQr(count: number): FakeInstance['qr'] {
  const code = `2@${randomBytes(24).toString('base64')},${randomBytes(32).toString('base64')},${randomBytes(32).toString('base64')},1`;
  const png = Buffer.concat([Buffer.from('89504e470d0a1a0a', 'hex'), Buffer.from(code)]);
  return { code, base64: `data:image/png;base64,${png.toString('base64')}`, count };
}

function newPairingCode(): string {
  const alphabet = 'ABCDEFGHJKLMNPQRSTVWXYZ23456789';
  return Array.from(randomBytes(8), (b) => alphabet[b % alphabet.length]).join('');
}

/** The `Authorization` Evolution puts in place of a `jwt_key` header (HS256, 10 minutes). */
function jwtFor(key: string): string {
  const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
  const iat = Math.floor(Date.now() / 1000);
  const unsigned = `${b64({ alg: 'HS256', typ: 'JWT' })}.${b64({ iat, exp: iat + 600, app: 'evolution', action: 'webhook' })}`;
  return `${unsigned}.${createHmac('sha256', key).update(unsigned).digest('base64url')}`;
}

function postJson(url: string, headers: Record<string, string>, body: unknown): Promise<{ status: number; body: string }> {
  return new Promise((resolve) => {
    const data = Buffer.from(JSON.stringify(body));
    const req = httpRequest(
      url,
      { method: 'POST', agent: false, timeout: 10_000, headers: { ...headers, 'content-type': 'application/json', 'content-length': String(data.length) } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
      },
    );
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', (e) => resolve({ status: 0, body: String(e) }));
    req.end(data);
  });
}

export async function startEvolutionFake(
  opts: {
    apiKey?: string;
    peerOf?: (remotePort: number) => string | undefined;
    /** false: base64 media is kept as its digest and size only (tests of large files). */
    keepMedia?: boolean;
  } = {},
): Promise<EvolutionFake> {
  const apiKey = opts.apiKey ?? `evo-global-${hex(12)}`;
  const instances = new Map<string, FakeInstance>();
  const requests: FakeRequest[] = [];
  const messages: FakeMessage[] = [];
  /** Each connection's client port, and who is at that end (`peerOf`), read when it was accepted. */
  const peers = new WeakMap<Socket, { port: number; peer?: string }>();
  const deliveries: FakeDelivery[] = [];
  const inflight = new Set<Promise<unknown>>();
  const offNetwork = new Set<string>();
  let rateLimited = 0;
  let emptyQr = 0;
  let ackFirst = false;
  let port = 0;
  let url = '';

  // --- webhooks ---------------------------------------------------------------

  function deliver(inst: FakeInstance, event: string, data: unknown): Promise<FakeDelivery | null> {
    const w = inst.webhook;
    if (!w?.enabled || !/^https?:\/\//.test(w.url) || (w.events.length > 0 && !w.events.includes(event))) return Promise.resolve(null);
    const target = w.webhookByEvents ? `${w.url.replace(/\/+$/, '')}/${event.toLowerCase().replace(/_/g, '-')}` : w.url;
    const { jwt_key, ...headers } = w.headers;
    if (jwt_key) headers.authorization = `Bearer ${jwtFor(jwt_key)}`;
    // The server's quirk: local wall-clock time printed with a Z.
    const dateTime = new Date(Date.now() - new Date().getTimezoneOffset() * 60_000).toISOString();
    const body = {
      event: event.toLowerCase().replace(/_/g, '.'),
      instance: inst.name,
      data,
      destination: w.url,
      date_time: dateTime,
      sender: inst.linked && inst.number ? jid(inst.number) : '',
      server_url: url,
      apikey: inst.token,
    };
    const p = inst.chain.then(async () => {
      const r = await postJson(target, headers, body);
      const d: FakeDelivery = { instance: inst.name, event: body.event, url: target, status: r.status, body: r.body };
      deliveries.push(d);
      return d;
    });
    inst.chain = p.then(() => undefined);
    inflight.add(p);
    void p.finally(() => inflight.delete(p));
    return p;
  }

  const connectionUpdate = (inst: FakeInstance, state: string, statusReason: number) =>
    deliver(inst, 'CONNECTION_UPDATE', {
      instance: inst.name,
      state,
      statusReason,
      ...(state === 'open' ? { wuid: inst.number ? jid(inst.number) : '', profileName: 'Línea', profilePictureUrl: null } : {}),
    });

  const qrUpdate = (inst: FakeInstance) =>
    deliver(inst, 'QRCODE_UPDATED', { qrcode: { instance: inst.name, pairingCode: inst.pairingCode, code: inst.qr?.code, base64: inst.qr?.base64 } });

  /** A terminal close: the session is gone (phone logout, API logout). */
  async function loggedOut(inst: FakeInstance): Promise<void> {
    Object.assign(inst, { state: 'close', linked: false, dead: false, qr: null, pairingCode: null, pairingNumber: null });
    const a = connectionUpdate(inst, 'close', 401);
    const b = deliver(inst, 'STATUS_INSTANCE', {
      instance: inst.name,
      status: 'closed',
      disconnectionAt: isoNow(),
      disconnectionReasonCode: 401,
      disconnectionObject: null,
    });
    const c = deliver(inst, 'LOGOUT_INSTANCE', { instance: inst.name });
    await Promise.all([a, b, c]);
  }

  /** The socket starts: `connecting`, and a first QR; started with a number, a pairing code too. */
  function startSocket(inst: FakeInstance, number: string | null = null): void {
    inst.state = 'connecting';
    inst.qr = newQr(1);
    inst.pairingNumber = number;
    inst.pairingCode = number ? newPairingCode() : null;
    if (number) inst.number = number;
    void connectionUpdate(inst, 'connecting', 200);
    void qrUpdate(inst);
  }

  async function linkNow(inst: FakeInstance): Promise<void> {
    Object.assign(inst, { state: 'open', linked: true, dead: false, qr: null, pairingCode: null, pairingNumber: null });
    inst.number ??= '5215512345678';
    await connectionUpdate(inst, 'open', 200);
  }

  // --- routes -----------------------------------------------------------------

  const stateShape = (inst: FakeInstance) => ({ instance: { instanceName: inst.name, state: inst.state } });
  const qrShape = (inst: FakeInstance) => ({ pairingCode: inst.pairingCode, code: inst.qr?.code, base64: inst.qr?.base64, count: inst.qr?.count ?? 0 });

  function requireOpen(inst: FakeInstance): void {
    if (inst.state !== 'open' || inst.dead) throw badRequest('Connection Closed');
  }

  function instanceRow(inst: FakeInstance) {
    return {
      id: inst.id,
      name: inst.name,
      connectionStatus: inst.state,
      ownerJid: inst.linked && inst.number ? jid(inst.number) : null,
      profileName: inst.linked ? 'Línea' : null,
      profilePictureUrl: null,
      integration: inst.integration,
      number: inst.number,
      businessId: null,
      token: inst.token,
      clientName: 'evolution',
      disconnectionReasonCode: null,
      disconnectionObject: null,
      disconnectionAt: null,
      createdAt: inst.createdAt,
      updatedAt: isoNow(),
      _count: { Message: messages.filter((m) => m.instance === inst.name).length, Contact: 0, Chat: 0 },
    };
  }

  function webhookFrom(inst: FakeInstance, w: Json): FakeWebhook {
    const now = isoNow();
    const enabled = w.enabled !== false;
    return {
      id: inst.webhook?.id ?? randomUUID(),
      enabled,
      url: typeof w.url === 'string' ? w.url : w.url == null ? '' : JSON.stringify(w.url),
      headers: Object.fromEntries(Object.entries(obj(w.headers)).map(([k, v]) => [k, String(v)])),
      // enabled:false clears the list; [] means every event.
      events: enabled && Array.isArray(w.events) ? w.events.map(String) : [],
      webhookByEvents: w.byEvents === true,
      webhookBase64: w.base64 === true,
      createdAt: inst.webhook?.createdAt ?? now,
      updatedAt: now,
      instanceId: inst.id,
    };
  }

  function create(body: Json): [number, unknown] {
    const name = body.instanceName;
    if (name === undefined) throw badRequest('instance requires property "instanceName"');
    if (typeof name !== 'string') throw badRequest('instanceName is not of a type(s) string');
    if (name === '') throw badRequest('instanceName does not meet minimum length of 1');
    if (!INTEGRATIONS.includes(String(body.integration))) throw badRequest('Invalid integration');
    if (body.integration === 'WHATSAPP-BUSINESS' && !body.token) throw badRequest('token is required');
    if (instances.has(name)) throw new HttpError(403, 'Forbidden', [`This name "${name}" is already in use.`]);
    const inst: FakeInstance = {
      name,
      id: randomUUID(),
      token: typeof body.token === 'string' && body.token ? body.token : randomUUID().toUpperCase(),
      integration: String(body.integration),
      state: 'close',
      linked: false,
      dead: false,
      number: typeof body.number === 'string' ? body.number.replace(/\D/g, '') || null : null,
      qr: null,
      pairingCode: null,
      pairingNumber: null,
      webhook: null,
      createdAt: isoNow(),
      chain: Promise.resolve(),
    };
    const w = obj(body.webhook);
    if (w.url) inst.webhook = { ...webhookFrom(inst, w), enabled: true };
    instances.set(name, inst);
    void deliver(inst, 'INSTANCE_CREATE', { instanceName: name, instanceId: inst.id });
    if (body.qrcode === true) startSocket(inst);
    return [
      201,
      {
        instance: {
          instanceName: name,
          instanceId: inst.id,
          integration: inst.integration,
          webhookWaBusiness: null,
          accessTokenWaBusiness: '',
          status: inst.state,
        },
        hash: inst.token,
        webhook: {
          webhookUrl: inst.webhook?.url,
          webhookHeaders: inst.webhook?.headers,
          webhookByEvents: inst.webhook?.webhookByEvents,
          webhookBase64: inst.webhook?.webhookBase64,
        },
        websocket: { enabled: null },
        rabbitmq: { enabled: null },
        nats: { enabled: null },
        sqs: { enabled: null },
        settings: {
          rejectCall: false,
          msgCall: '',
          groupsIgnore: false,
          alwaysOnline: false,
          readMessages: false,
          readStatus: false,
          syncFullHistory: false,
          wavoipToken: '',
        },
        ...(body.qrcode === true ? { qrcode: qrShape(inst) } : {}),
      },
    ];
  }

  /**
   * As Evolution's connectToWhatsapp: `number` counts only when the socket
   * starts (state `close`); while `connecting` the current QR is answered and
   * `number` ignored, so a socket started without one never gives a code.
   */
  function connect(inst: FakeInstance, query: URLSearchParams): [number, unknown] {
    if (inst.state === 'open') return [200, stateShape(inst)];
    if (inst.state === 'close') startSocket(inst, query.get('number')?.replace(/\D/g, '') || null);
    if (emptyQr > 0) {
      emptyQr -= 1;
      return [200, { count: 0 }];
    }
    return [200, qrShape(inst)];
  }

  function restart(inst: FakeInstance): [number, unknown] {
    if (inst.state === 'close') return [200, { error: true, message: `The "${inst.name}" instance is not connected` }];
    if (inst.linked && inst.dead) {
      // The link is gone: the socket keeps trying to come back.
      inst.state = 'connecting';
      inst.dead = false;
      void connectionUpdate(inst, 'connecting', 428);
      return [200, { count: 0 }];
    }
    if (inst.linked) {
      void connectionUpdate(inst, 'connecting', 515);
      void connectionUpdate(inst, 'open', 200);
      return [200, stateShape(inst)];
    }
    startSocket(inst);
    return [200, qrShape(inst)];
  }

  async function logout(inst: FakeInstance): Promise<[number, unknown]> {
    if (inst.state === 'close') throw badRequest(`The "${inst.name}" instance is not connected`);
    void loggedOut(inst);
    return [200, { status: 'SUCCESS', error: false, response: { message: 'Instance logged out' } }];
  }

  function remove(inst: FakeInstance): [number, unknown] {
    if (inst.state !== 'close') void loggedOut(inst);
    void deliver(inst, 'INSTANCE_DELETE', { instanceName: inst.name, instanceId: inst.id });
    void deliver(inst, 'REMOVE_INSTANCE', { instance: inst.name });
    instances.delete(inst.name);
    return [200, { status: 'SUCCESS', error: false, response: { message: 'Instance deleted' } }];
  }

  function setWebhook(inst: FakeInstance, body: Json): [number, unknown] {
    if (body.webhook === undefined) throw badRequest('instance requires property "webhook"');
    const w = obj(body.webhook);
    if (w.enabled === undefined) throw badRequest('webhook requires property "enabled"');
    if (w.url === undefined) throw badRequest('webhook requires property "url"');
    inst.webhook = webhookFrom(inst, w);
    return [201, inst.webhook];
  }

  /** Raw base64 or an http(s) URL, as Evolution's validator accepts; the decoded bytes when base64. */
  function media(v: unknown, allowDataUrl = false): { url?: string; bytes?: Buffer } {
    if (typeof v !== 'string' || v === '') throw badRequest('Owned media must be a url or base64');
    if (/^https?:\/\//i.test(v)) return { url: v };
    const raw = allowDataUrl ? v.replace(/^data:image\/(jpeg|png|gif);base64,/, '') : v;
    if (!BASE64.test(raw)) throw badRequest('Owned media must be a url or base64');
    return { bytes: Buffer.from(raw, 'base64') };
  }

  async function send(inst: FakeInstance, route: FakeMessage['route'], body: Json, socket?: Socket): Promise<[number, unknown]> {
    if (body.number === undefined) throw badRequest('instance requires property "number"');
    if (typeof body.number !== 'string') throw badRequest('number is not of a type(s) string');
    let message: Json;
    let messageType: string;
    let m: { url?: string; bytes?: Buffer } = {};
    if (route === 'sendText') {
      if (body.text === undefined) throw badRequest('instance requires property "text"');
      if (typeof body.text !== 'string' || body.text.trim() === '') throw badRequest('Text is required');
      message = { conversation: body.text };
      messageType = 'conversation';
    } else if (route === 'sendMedia') {
      const type = body.mediatype;
      if (type === undefined) throw badRequest('instance requires property "mediatype"');
      if (typeof type !== 'string' || !['image', 'video', 'document', 'audio'].includes(type))
        throw badRequest('mediatype is not one of enum values: image,video,document,audio');
      if (body.media === undefined && !body.file) throw badRequest('instance requires property "media"');
      m = media(body.media);
      let fileName = typeof body.fileName === 'string' && body.fileName ? body.fileName : undefined;
      if (type === 'document' && m.bytes && !fileName) throw badRequest('For base64 the file name must be informed.');
      // From a URL Evolution takes the last path segment, without its extension.
      if (!fileName && m.url && type === 'document') fileName = (new URL(m.url).pathname.split('/').pop() ?? 'file').replace(/\.[^.]*$/, '');
      fileName ??= type === 'image' ? 'image.jpg' : type === 'video' ? 'video.mp4' : undefined;
      const ext = fileName && /\.([A-Za-z0-9]+)$/.exec(fileName)?.[1]?.toLowerCase();
      const mimetype = fileName ? (ext ? (MIME_BY_EXT[ext] ?? null) : null) : (body.mimetype ?? null);
      messageType = `${type}Message`;
      message = {
        [messageType]: {
          url: `https://mmg.whatsapp.net/${hex(8)}`,
          mimetype,
          caption: body.caption,
          fileName,
          fileLength: String(m.bytes?.length ?? 0),
          mediaKey: randomBytes(32).toString('base64'),
        },
      };
    } else if (route === 'sendWhatsAppAudio') {
      if (body.audio === undefined && !body.file) throw badRequest('instance requires property "audio"');
      m = media(body.audio);
      messageType = 'audioMessage';
      message = { audioMessage: { url: `https://mmg.whatsapp.net/${hex(8)}`, mimetype: 'audio/ogg; codecs=opus', ptt: true, seconds: 1 } };
    } else {
      if (body.sticker === undefined && !body.file) throw badRequest('instance requires property "sticker"');
      m = media(body.sticker, true);
      messageType = 'stickerMessage';
      message = { stickerMessage: { url: `https://mmg.whatsapp.net/${hex(8)}`, mimetype: 'image/webp' } };
    }
    requireOpen(inst);
    const number = body.number.replace(/\D/g, '');
    if (offNetwork.has(number)) throw badRequest({ exists: false, jid: jid(number), number });
    if (rateLimited > 0) {
      rateLimited -= 1;
      throw badRequest('rate-overlimit');
    }
    const record = {
      key: { remoteJid: jid(number), fromMe: true, id: `3EB0${hex(8)}` },
      pushName: 'Você',
      status: 'PENDING',
      message,
      contextInfo: null,
      messageType,
      messageTimestamp: Math.floor(Date.now() / 1000),
      instanceId: inst.id,
      source: 'unknown',
    };
    const digest = m.bytes ? { sha256: createHash('sha256').update(m.bytes).digest('hex'), size: m.bytes.length } : {};
    if (m.bytes && opts.keepMedia === false) {
      for (const k of ['media', 'audio', 'sticker']) if (typeof body[k] === 'string' && !/^https?:/i.test(body[k])) body[k] = `<${m.bytes.length} bytes>`;
      m = { url: m.url };
    }
    messages.push({ instance: inst.name, route, request: body, record, ...m, ...digest, at: Date.now(), ...(socket ? peers.get(socket) : {}) });
    // The network's ack can beat the answer to the send (what ackBeforeReply tests).
    if (ackFirst) await ackMessage(inst, record.key.id, 'DELIVERY_ACK');
    void deliver(inst, 'SEND_MESSAGE', record);
    return [201, record];
  }

  function setPresence(inst: FakeInstance, body: Json): [number, unknown] {
    if (!PRESENCES.includes(String(body.presence))) throw badRequest(`presence is not one of enum values: ${PRESENCES.join(',')}`);
    requireOpen(inst);
    return [200, { presence: body.presence }];
  }

  type Handler = (inst: FakeInstance | null, body: Json, query: URLSearchParams, socket?: Socket) => [number, unknown] | Promise<[number, unknown]>;
  const routes: Array<{ method: string; re: RegExp; handler: Handler }> = [];
  const on = (method: string, path: string, handler: Handler) => routes.push({ method, re: new RegExp(`^${path.replace(':i', '([^/]+)')}$`), handler });
  const inst = (i: FakeInstance | null) => i!;
  on('POST', '/instance/create', (_i, b) => create(b));
  on('GET', '/instance/connect/:i', (i, _b, q) => connect(inst(i), q));
  on('GET', '/instance/connectionState/:i', (i) => [200, stateShape(inst(i))]);
  on('POST', '/instance/restart/:i', (i) => restart(inst(i)));
  on('DELETE', '/instance/logout/:i', (i) => logout(inst(i)));
  on('DELETE', '/instance/delete/:i', (i) => remove(inst(i)));
  on('POST', '/instance/setPresence/:i', (i, b) => setPresence(inst(i), b));
  on('POST', '/webhook/set/:i', (i, b) => setWebhook(inst(i), b));
  on('GET', '/webhook/find/:i', (i) => [200, inst(i).webhook]);
  for (const r of ['sendText', 'sendMedia', 'sendWhatsAppAudio', 'sendSticker'] as const)
    on('POST', `/message/${r}/:i`, (i, b, _q, socket) => send(inst(i), r, b, socket));
  on('GET', '/instance/fetchInstances', () => [200, []]); // Answered in handle(): it depends on the key.

  async function handle(req: IncomingMessage, raw: Buffer): Promise<[number, unknown]> {
    const u = new URL(req.url ?? '/', 'http://fake');
    let body: unknown = null;
    if (raw.length > 0) {
      try {
        body = JSON.parse(raw.toString('utf8'));
      } catch {
        throw badRequest('Unexpected token in JSON');
      }
    }
    requests.push({ method: req.method ?? '', path: u.pathname + u.search, body, headers: req.headers });
    const route = routes.find((r) => r.method === req.method && r.re.test(u.pathname));
    if (!route) throw new HttpError(404, 'Not Found', [`Cannot ${req.method} ${u.pathname}`]);
    const segment = route.re.exec(u.pathname)?.[1];
    const name = segment === undefined ? undefined : decodeURIComponent(segment);
    const key = [req.headers.apikey].flat()[0];
    const found = name === undefined ? undefined : instances.get(name);
    const global = key === apiKey;
    if (u.pathname === '/instance/fetchInstances') {
      const mine = [...instances.values()].filter((i) => global || i.token === key);
      if (!key || (!global && mine.length === 0)) throw new HttpError(401, 'Unauthorized', 'Unauthorized');
      const byName = u.searchParams.get('instanceName');
      return [200, mine.filter((i) => !byName || i.name === byName).map(instanceRow)];
    }
    // The instance token opens only routes that name its instance.
    if (!global && !(key && found && found.token === key)) throw new HttpError(401, 'Unauthorized', 'Unauthorized');
    if (name !== undefined && !found) throw notFound(`The "${name}" instance does not exist`);
    return route.handler(found ?? null, obj(body), u.searchParams, req.socket);
  }

  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      handle(req, Buffer.concat(chunks)).then(
        ([status, body]) => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body)),
        (err: unknown) => {
          const e = err instanceof HttpError ? err : new HttpError(500, 'Internal Server Error', [String(err)]);
          res
            .writeHead(e.status, { 'content-type': 'application/json' })
            .end(JSON.stringify({ status: e.status, error: e.error, response: { message: e.detail } }));
        },
      );
    });
  });
  const sockets = new Set<Socket>();
  server.on('connection', (s) => {
    sockets.add(s);
    if (s.remotePort !== undefined) {
      const peer = opts.peerOf?.(s.remotePort);
      peers.set(s, { port: s.remotePort, ...(peer === undefined ? {} : { peer }) });
    }
    s.on('close', () => sockets.delete(s));
  });

  async function listen(): Promise<void> {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
        server.off('error', reject);
        resolve();
      });
    });
    port = (server.address() as AddressInfo).port;
    url = `http://127.0.0.1:${port}`;
  }

  async function stop(): Promise<void> {
    if (!server.listening) return;
    const closed = new Promise<void>((r) => server.close(() => r()));
    for (const s of sockets) s.destroy();
    await closed;
  }

  await listen();

  // --- controls -----------------------------------------------------------------

  function must(instancia: string): FakeInstance {
    const i = instances.get(instancia);
    if (!i) throw new Error(`fake evolution: no instance ${instancia}`);
    return i;
  }

  async function settle(): Promise<void> {
    while (inflight.size > 0) await Promise.all([...inflight]);
  }

  async function ackMessage(i: FakeInstance, keyId: string, status: string): Promise<void> {
    const msg = messages.find((m) => m.record.key.id === keyId);
    await deliver(i, 'MESSAGES_UPDATE', {
      keyId,
      remoteJid: msg?.record.key.remoteJid ?? null,
      fromMe: true,
      participant: null,
      status,
      pollUpdates: null,
      instanceId: i.id,
      messageId: randomUUID(),
    });
  }

  return {
    get url() {
      return url;
    },
    apiKey,
    instances,
    requests,
    messages,
    deliveries,
    async scan(instancia) {
      const i = must(instancia);
      if (i.state !== 'connecting' || !i.qr || i.linked) throw new Error(`fake evolution: no QR is showing for ${instancia}`);
      await linkNow(i);
    },
    async enterCode(instancia, code) {
      const i = must(instancia);
      const given = code.toUpperCase().replace(/[^A-Z0-9]/g, '');
      if (i.state !== 'connecting' || !i.pairingCode || given !== i.pairingCode)
        throw new Error(`fake evolution: ${code} is not the pairing code issued for ${instancia}`);
      await linkNow(i);
    },
    async rotateQr(instancia) {
      const i = must(instancia);
      if (i.state !== 'connecting' || !i.qr || i.linked) throw new Error(`fake evolution: no QR is showing for ${instancia}`);
      if (i.qr.count >= QR_LIMIT) {
        Object.assign(i, { state: 'close', qr: null, pairingCode: null, pairingNumber: null });
        await Promise.all([
          deliver(i, 'QRCODE_UPDATED', { message: 'QR code limit reached, please login again', statusCode: 500 }),
          connectionUpdate(i, 'refused', 428),
        ]);
        return;
      }
      i.qr = newQr(i.qr.count + 1);
      // Evolution asks WhatsApp for a new pairing code with each QR of a socket started with a number.
      if (i.pairingNumber) i.pairingCode = newPairingCode();
      await qrUpdate(i);
    },
    async phoneLogout(instancia) {
      const i = must(instancia);
      if (!i.linked) throw new Error(`fake evolution: ${instancia} is not linked`);
      await loggedOut(i);
    },
    async receive(instancia, from, text) {
      const i = must(instancia);
      if (i.state !== 'open' || i.dead) throw new Error(`fake evolution: ${instancia} is not open: it receives nothing`);
      const id = `3A${hex(9)}`;
      await deliver(i, 'MESSAGES_UPSERT', {
        key: { remoteJid: jid(from), fromMe: false, id },
        pushName: 'Contacto',
        status: 'DELIVERY_ACK',
        message: { conversation: text },
        messageType: 'conversation',
        messageTimestamp: Math.floor(Date.now() / 1000),
        instanceId: i.id,
        source: 'android',
      });
      return id;
    },
    ack: (instancia, keyId, status) => ackMessage(must(instancia), keyId, status),
    post: (instancia, event, data) => deliver(must(instancia), event, data),
    notOnNetwork: (numero) => void offNetwork.add(numero.replace(/\D/g, '')),
    rateLimitNext: (n) => void (rateLimited = n),
    killSilently(instancia) {
      const i = must(instancia);
      if (i.state !== 'open') throw new Error(`fake evolution: ${instancia} is not open`);
      i.dead = true;
    },
    ackBeforeReply: (on) => void (ackFirst = on),
    emptyQrCalls: (n) => void (emptyQr = n),
    down: stop,
    up: listen,
    settle,
    async close() {
      await settle();
      await stop();
    },
  };
}
