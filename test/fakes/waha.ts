import { createHash, createHmac, randomBytes } from 'node:crypto';
import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A stand-in for WAHA over real HTTP, built from the contract
 * (shared/research/evolution-api-contract.md §5): sessions API, QR and pairing
 * code, send routes with engine-specific answers, and webhooks POSTed to each
 * session's configured URLs in WAHA's envelope, signed when HMAC is on.
 * Where the contract is silent, errors take NestJS's shape
 * `{statusCode, message, error}`, and WAHA's 5xx `{statusCode, exception: {message, name}}`.
 * State is in memory; controls play the phone and the network.
 */
export type WahaEngine = 'NOWEB' | 'WEBJS';
export type WahaStatus = 'STOPPED' | 'STARTING' | 'SCAN_QR_CODE' | 'WORKING' | 'FAILED';
export type AckName = 'ERROR' | 'PENDING' | 'SERVER' | 'DEVICE' | 'READ' | 'PLAYED';

export interface WahaFakeSession {
  name: string;
  status: WahaStatus;
  config: Record<string, unknown>;
  me: { id: string; pushName: string } | null;
  /** Credentials kept by a link: a start goes back to WORKING without a scan. */
  linkedAs: { id: string; pushName: string } | null;
  /** killSilently: the socket is dead while the status still says WORKING. */
  dead: boolean;
  qr: string;
  /** Last pairing code issued, and the number it was asked for. */
  code: { code: string; phoneNumber: string } | null;
  /** Reads of the session still to answer STARTING before it moves on. */
  startingReads: number;
  /** Times it was (re)started: a PUT of a running session restarts it. */
  starts: number;
}

export interface WahaFakeRequest {
  method: string;
  path: string;
  query: Record<string, string>;
  headers: IncomingMessage['headers'];
  /** Parsed JSON body (undefined when empty), exactly as received. */
  body: unknown;
}

export interface WahaFakeSend {
  session: string;
  route: string;
  chatId: string;
  /** Digits of the chat. */
  to: string;
  /** The exact request body. */
  body: Record<string, unknown>;
  /** The decoded bytes of `file.data` (not kept with `keepMedia: false`). */
  bytes?: Buffer;
  /** SHA-256 (hex) and size of the decoded `file.data`. */
  sha256?: string;
  size?: number;
  /** Bare WhatsApp id and its serialized form. */
  id: string;
  serialized: string;
}

export interface WahaFakeDelivery {
  url: string;
  event: string;
  session: string;
  headers: Record<string, string>;
  /** The exact body posted. */
  body: string;
  /** The receiver's answer; null when it could not be reached. */
  status: number | null;
}

export interface ReceiveExtra {
  fromMe?: boolean;
  hasMedia?: boolean;
  media?: { url?: string; mimetype?: string; filename?: string | null; error?: unknown };
  /** Overrides of the message id (bare part) and timestamp (seconds). */
  id?: string;
  timestamp?: number;
}

export interface WahaFake {
  url: string;
  apiKey: string;
  engine: WahaEngine;
  sessions: Map<string, WahaFakeSession>;
  requests: WahaFakeRequest[];
  sends: WahaFakeSend[];
  deliveries: WahaFakeDelivery[];
  /** The phone scans the current QR: WORKING, with `me`. */
  scan(session: string, numero?: string): Promise<void>;
  /** The phone enters a pairing code; it must be the last one issued. */
  enterCode(session: string, code: string): Promise<void>;
  rotateQr(session: string): Promise<void>;
  /** The phone removes the device: WAHA logs out and restarts the session, which waits for a new scan. */
  phoneLogout(session: string): Promise<void>;
  /** Someone writes to the line (`from`: digits, or a whole JID); returns the serialized message id once the webhooks are answered. */
  receive(session: string, from: string, text: string, extra?: ReceiveExtra): Promise<string>;
  /** The recipient's phone acknowledges a sent message (bare or serialized id). */
  ack(session: string, id: string, ackName: AckName): Promise<void>;
  /** Moves a STARTING session on now instead of at its next read. */
  advance(session: string): Promise<void>;
  notOnNetwork(numero: string): void;
  rateLimitNext(n: number): void;
  /** The socket dies, the status stays WORKING; `me` turns null unless `staleMe` (then only `/me` tells). */
  killSilently(session: string, opts?: { staleMe?: boolean }): Promise<void>;
  /** Off: the Core tier, which ignores `hmac` and sends only custom headers. */
  hmacEnabled(on: boolean): void;
  /** The message.ack DEVICE of a send is posted (and answered) before the send's own answer. */
  ackBeforeReply(on: boolean): void;
  down(): Promise<void>;
  up(): Promise<void>;
  /** Resolves once every webhook post so far has been answered. */
  settle(): Promise<void>;
  close(): Promise<void>;
}

type Json = Record<string, unknown>;
const isObj = (v: unknown): v is Json => v !== null && typeof v === 'object' && !Array.isArray(v);

class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly body: unknown,
  ) {
    super(`HTTP ${status}`);
  }
}
const REASONS: Record<number, string> = { 400: 'Bad Request', 401: 'Unauthorized', 404: 'Not Found', 422: 'Unprocessable Entity' };
const nest = (status: number, message: string) => new HttpError(status, { statusCode: status, message, error: REASONS[status] ?? 'Error' });
/** WAHA's answer to an engine error. */
const engineError = (message: string) => new HttpError(500, { statusCode: 500, timestamp: new Date().toISOString(), exception: { message, name: 'Error' } });

const ulid = () => `01${Date.now().toString(32).toUpperCase().padStart(10, '0')}${randomBytes(7).toString('hex').toUpperCase()}`;
const waId = () => `3EB0${randomBytes(8).toString('hex').toUpperCase()}`;
const CODE_CHARS = 'ABCDEFGHJKLMNPQRSTVWXYZ0123456789';
const pairing = () => {
  const b = randomBytes(8);
  const s = [...b].map((x) => CODE_CHARS[x % CODE_CHARS.length]).join('');
  return `${s.slice(0, 4)}-${s.slice(4)}`;
};
const SEND_ROUTES = new Set(['sendText', 'sendImage', 'sendFile', 'sendVoice', 'sendVideo']);

export async function startWahaFake(
  opts: {
    apiKey?: string;
    engine?: WahaEngine;
    /** false: `file.data` is kept as its digest and size only (tests of large files). */
    keepMedia?: boolean;
  } = {},
): Promise<WahaFake> {
  const apiKey = opts.apiKey ?? `waha-key-${randomBytes(8).toString('hex')}`;
  const engine: WahaEngine = opts.engine ?? 'NOWEB';
  const sessions = new Map<string, WahaFakeSession>();
  const requests: WahaFakeRequest[] = [];
  const sends: WahaFakeSend[] = [];
  const deliveries: WahaFakeDelivery[] = [];
  const missing = new Set<string>();
  let rateLimited = 0;
  let hmacOn = true;
  let ackFirst = false;
  let qrSeq = 0;
  /** Webhook posts go out one after another, in the order things happened. */
  let posting: Promise<void> = Promise.resolve();

  // ---- webhooks ----

  function postOnce(url: string, headers: Record<string, string>, body: string): Promise<number | null> {
    return new Promise((resolve) => {
      // agent: false, so no kept-alive socket outlives a test's receiver.
      const req = request(url, { method: 'POST', headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) }, agent: false }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? null));
        res.on('error', () => resolve(null));
      });
      req.on('error', () => resolve(null));
      req.end(body);
    });
  }

  /** Posts `event` to every webhook of the session subscribed to it; resolves once they all answered. */
  function emit(s: WahaFakeSession, event: string, payload: Json): Promise<void> {
    const hooks = (Array.isArray(s.config.webhooks) ? s.config.webhooks : []).filter(isObj);
    const envelope = {
      id: `evt_${ulid()}`,
      timestamp: Date.now(),
      event,
      session: s.name,
      metadata: isObj(s.config.metadata) ? s.config.metadata : {},
      me: s.me,
      payload,
      engine,
      environment: { version: '2024.10.8', engine, tier: hmacOn ? 'PLUS' : 'CORE', browser: null },
    };
    const body = JSON.stringify(envelope);
    const jobs = hooks
      .filter((h) => typeof h.url === 'string' && Array.isArray(h.events) && (h.events.includes(event) || h.events.includes('*')))
      .map((h) => async () => {
        const headers: Record<string, string> = { 'content-type': 'application/json', 'x-webhook-request-id': `req_${ulid()}` };
        const key = isObj(h.hmac) && typeof h.hmac.key === 'string' ? h.hmac.key : undefined;
        if (hmacOn && key) {
          headers['x-webhook-hmac'] = createHmac('sha512', key).update(body).digest('hex');
          headers['x-webhook-hmac-algorithm'] = 'sha512';
        }
        for (const c of Array.isArray(h.customHeaders) ? h.customHeaders.filter(isObj) : []) {
          if (typeof c.name === 'string' && typeof c.value === 'string') headers[c.name.toLowerCase()] = c.value;
        }
        const status = await postOnce(h.url as string, headers, body);
        deliveries.push({ url: h.url as string, event, session: s.name, headers, body, status });
      });
    const done = posting.then(async () => {
      for (const job of jobs) await job();
    });
    posting = done;
    return done;
  }

  // ---- session state ----

  const info = (s: WahaFakeSession) => ({ name: s.name, status: s.status, config: s.config, me: s.me, engine: { engine } });

  function setStatus(s: WahaFakeSession, status: WahaStatus): Promise<void> {
    s.status = status;
    s.me = status === 'WORKING' ? s.me : null;
    return emit(s, 'session.status', { name: s.name, status, statuses: [{ status, timestamp: Date.now() }] });
  }

  function newQr(s: WahaFakeSession): void {
    s.qr = `2@${randomBytes(12).toString('base64url')},${s.name},${++qrSeq}`;
  }

  // State changes are immediate; their webhooks queue in order. Request
  // handlers do not wait for them (WAHA answers first), controls do.
  const done = Promise.resolve();

  function start(s: WahaFakeSession): Promise<void> {
    if (s.status !== 'STOPPED' && s.status !== 'FAILED') return done;
    s.starts++;
    s.startingReads = 1;
    s.dead = false;
    return setStatus(s, 'STARTING');
  }

  /** STARTING ends: back to WORKING with kept credentials, else a QR to scan. */
  function started(s: WahaFakeSession): Promise<void> {
    if (s.linkedAs) {
      s.me = s.linkedAs;
      return setStatus(s, 'WORKING');
    }
    newQr(s);
    return setStatus(s, 'SCAN_QR_CODE');
  }

  function stop(s: WahaFakeSession): Promise<void> {
    return s.status === 'STOPPED' ? done : setStatus(s, 'STOPPED');
  }

  function link(s: WahaFakeSession, numero: string): Promise<void> {
    s.linkedAs = { id: `${numero}@c.us`, pushName: 'Línea de prueba' };
    s.me = s.linkedAs;
    s.code = null;
    s.dead = false;
    return setStatus(s, 'WORKING');
  }

  /** Logs out; a running session restarts and waits for a new scan. */
  function logout(s: WahaFakeSession): Promise<void> {
    const running = s.status !== 'STOPPED' && s.status !== 'FAILED';
    s.linkedAs = null;
    s.me = null;
    s.code = null;
    if (!running) return done;
    void stop(s);
    void start(s);
    return started(s);
  }

  function sessionOf(name: string): WahaFakeSession {
    const s = sessions.get(name);
    if (!s) throw nest(404, `Session "${name}" does not exist`);
    return s;
  }

  function control(name: string): WahaFakeSession {
    const s = sessions.get(name);
    if (!s) throw new Error(`waha fake: no session ${name}`);
    return s;
  }

  function validConfig(config: unknown): Json {
    if (config === undefined || config === null) return {};
    if (!isObj(config)) throw nest(400, 'config must be an object');
    if (config.webhooks !== undefined) {
      if (!Array.isArray(config.webhooks)) throw nest(400, 'config.webhooks must be an array');
      for (const w of config.webhooks) {
        if (!isObj(w) || typeof w.url !== 'string' || w.url === '') throw nest(400, 'config.webhooks.url must be a URL address');
        if (w.events !== undefined && !Array.isArray(w.events)) throw nest(400, 'config.webhooks.events must be an array');
      }
    }
    return config;
  }

  // ---- routes ----

  function sessionsApi(method: string, parts: string[], query: Record<string, string>, body: unknown): [number, unknown] {
    const b = isObj(body) ? body : {};
    if (parts.length === 0) {
      if (method === 'GET') return [200, [...sessions.values()].filter((s) => query.all === 'true' || s.status !== 'STOPPED').map(info)];
      if (method !== 'POST') throw nest(404, `Cannot ${method} /api/sessions`);
      const name = b.name === undefined ? 'default' : b.name;
      if (typeof name !== 'string' || !/^[\w.-]+$/.test(name)) throw nest(400, 'name must be a string of letters, digits, "_", "-" and "."');
      if (sessions.has(name)) throw nest(422, `Session '${name}' already exists. Use PUT to update it.`);
      const s: WahaFakeSession = {
        name,
        status: 'STOPPED',
        config: validConfig(b.config),
        me: null,
        linkedAs: null,
        dead: false,
        qr: '',
        code: null,
        startingReads: 0,
        starts: 0,
      };
      sessions.set(name, s);
      if (b.start !== false) void start(s);
      return [201, info(s)];
    }
    const s = sessionOf(decodeURIComponent(parts[0]!));
    const action = parts[1];
    if (action === undefined) {
      if (method === 'GET') {
        if (s.status === 'STARTING') {
          if (s.startingReads > 0) s.startingReads--;
          else void started(s);
        }
        return [200, info(s)];
      }
      if (method === 'PUT') {
        const config = validConfig(b.config);
        const running = s.status !== 'STOPPED' && s.status !== 'FAILED';
        void stop(s);
        s.config = config;
        if (running) void start(s);
        return [200, info(s)];
      }
      if (method === 'DELETE') {
        void stop(s);
        sessions.delete(s.name);
        return [200, info(s)];
      }
    }
    if (action === 'me' && method === 'GET') return [200, s.dead ? null : s.me];
    if (method === 'POST' && action === 'start') {
      void start(s);
      return [201, info(s)];
    }
    if (method === 'POST' && action === 'stop') {
      void stop(s);
      return [201, info(s)];
    }
    if (method === 'POST' && action === 'restart') {
      void stop(s);
      void start(s);
      return [201, info(s)];
    }
    if (method === 'POST' && action === 'logout') {
      void logout(s);
      return [201, info(s)];
    }
    throw nest(404, `Cannot ${method} /api/sessions/${parts.join('/')}`);
  }

  function authApi(method: string, name: string, what: string, query: Record<string, string>, body: unknown, accept: string): [number, unknown, string?] {
    const s = sessionOf(name);
    if (what === 'qr' && method === 'GET') {
      if (s.status !== 'SCAN_QR_CODE') throw nest(422, `Can get QR code only in SCAN_QR_CODE status. The current status is '${s.status}'`);
      if (query.format === 'raw') return [200, { value: s.qr }];
      // A stand-in for the PNG: its signature, then the QR text.
      const png = Buffer.concat([Buffer.from('89504e470d0a1a0a', 'hex'), Buffer.from(s.qr)]);
      if (accept.includes('image/png')) return [200, png, 'image/png'];
      return [200, { mimetype: 'image/png', data: png.toString('base64') }];
    }
    if (what === 'request-code' && method === 'POST') {
      const phoneNumber = isObj(body) ? body.phoneNumber : undefined;
      if (typeof phoneNumber !== 'string' || !/^\d{6,15}$/.test(phoneNumber))
        throw nest(400, 'phoneNumber must be a phone number in international format, digits only');
      if (s.status !== 'SCAN_QR_CODE') throw nest(422, `Can request code only in SCAN_QR_CODE status. The current status is '${s.status}'`);
      s.code = { code: pairing(), phoneNumber };
      return [200, { code: s.code.code }];
    }
    throw nest(404, `Cannot ${method} /api/${name}/auth/${what}`);
  }

  async function sendApi(route: string, body: unknown): Promise<[number, unknown]> {
    if (!isObj(body)) throw nest(400, 'body must be a JSON object');
    if (typeof body.chatId !== 'string' || body.chatId === '') throw nest(400, 'chatId should not be empty');
    if (route === 'sendText' && (typeof body.text !== 'string' || body.text === '')) throw nest(400, 'text should not be empty');
    let bytes: Buffer | undefined;
    if (route !== 'sendText') {
      const f = body.file;
      if (!isObj(f)) throw nest(400, 'file should not be empty');
      if (typeof f.url === 'string' && f.url !== '') {
        // A URL is fetched by the gateway; nothing to decode here.
      } else if (typeof f.data === 'string' && f.data !== '') {
        if (!/^[A-Za-z0-9+/]+={0,2}$/.test(f.data)) throw nest(400, 'file.data must be base64 encoded');
        bytes = Buffer.from(f.data, 'base64');
      } else throw nest(400, 'file must have either url or data');
    }
    const s = sessionOf(typeof body.session === 'string' ? body.session : 'default');
    if (s.status !== 'WORKING' || s.dead) {
      throw nest(
        422,
        `Session status is not as expected. Try again later or restart the session. Session: '${s.name}', status: '${s.dead ? 'WORKING' : s.status}', expected: 'WORKING'`,
      );
    }
    const chatId = body.chatId;
    const to = chatId.replace(/@.*$/, '');
    if (rateLimited > 0) {
      rateLimited--;
      throw engineError('Error: 463 reachout-timelock: rate-overlimit, try again later');
    }
    if (missing.has(to)) throw engineError(`Error: The number ${to} is not registered on WhatsApp (jid does not exist)`);
    const id = waId();
    const serialized = `true_${to}@c.us_${id}`;
    const digest = bytes ? { sha256: createHash('sha256').update(bytes).digest('hex'), size: bytes.length } : {};
    if (bytes && opts.keepMedia === false) {
      (body.file as Record<string, unknown>).data = `<${bytes.length} bytes>`;
      bytes = undefined;
    }
    sends.push({ session: s.name, route, chatId, to, body, bytes, ...digest, id, serialized });
    const ts = Math.floor(Date.now() / 1000);
    const text = typeof body.text === 'string' ? body.text : typeof body.caption === 'string' ? body.caption : '';
    const answer =
      engine === 'NOWEB'
        ? {
            key: { remoteJid: `${to}@s.whatsapp.net`, fromMe: true, id },
            message: route === 'sendText' ? { conversation: text } : {},
            messageTimestamp: ts,
            status: 'PENDING',
          }
        : {
            id: { fromMe: true, remote: `${to}@c.us`, id, _serialized: serialized },
            body: text,
            type: route === 'sendText' ? 'chat' : 'media',
            timestamp: ts,
            from: s.me?.id,
            to: `${to}@c.us`,
            ack: 0,
          };
    if (ackFirst) await ackOf(s, serialized, 'DEVICE');
    return [201, answer];
  }

  // ---- server ----

  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      handle(req, res, Buffer.concat(chunks).toString('utf8')).catch((err: unknown) => {
        if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify({ statusCode: 500, message: String(err) }));
      });
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse, raw: string): Promise<void> {
    const u = new URL(req.url ?? '/', 'http://fake');
    const query = Object.fromEntries(u.searchParams);
    const method = req.method ?? 'GET';
    let body: unknown;
    const reply = (status: number, b: unknown, type = 'application/json') => {
      if (Buffer.isBuffer(b)) res.writeHead(status, { 'content-type': type }).end(b);
      else res.writeHead(status, { 'content-type': 'application/json' }).end(b === undefined ? '' : JSON.stringify(b));
    };
    try {
      try {
        body = raw === '' ? undefined : JSON.parse(raw);
      } catch {
        throw nest(400, 'Unexpected token in JSON body');
      } finally {
        requests.push({ method, path: u.pathname, query, headers: req.headers, body: body ?? (raw === '' ? undefined : raw) });
      }
      const given = req.headers['x-api-key'] ?? query['x-api-key'];
      if (given !== apiKey) throw nest(401, 'Unauthorized');
      const parts = u.pathname.split('/').filter(Boolean);
      if (parts[0] !== 'api') throw nest(404, `Cannot ${method} ${u.pathname}`);
      if (parts[1] === 'sessions') return reply(...sessionsApi(method, parts.slice(2), query, body));
      if (method === 'POST' && parts.length === 2 && SEND_ROUTES.has(parts[1]!)) return reply(...(await sendApi(parts[1]!, body)));
      if (parts.length === 4 && parts[2] === 'auth') {
        const [status, b, type] = authApi(method, decodeURIComponent(parts[1]!), parts[3]!, query, body, String(req.headers.accept ?? ''));
        return reply(status, b, type);
      }
      throw nest(404, `Cannot ${method} ${u.pathname}`);
    } catch (err) {
      if (err instanceof HttpError) return reply(err.status, err.body);
      throw err;
    }
  }

  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  let listening = true;

  // ---- controls ----

  function ackOf(s: WahaFakeSession, id: string, ackName: AckName): Promise<void> {
    const bare = id.split('_').length >= 3 ? id.split('_')[2]! : id;
    const sent = sends.find((m) => m.session === s.name && m.id === bare);
    if (!sent) throw new Error(`waha fake: no message ${id} sent by ${s.name}`);
    const ACKS: Record<AckName, number> = { ERROR: -1, PENDING: 0, SERVER: 1, DEVICE: 2, READ: 3, PLAYED: 4 };
    return emit(s, 'message.ack', {
      id: sent.serialized,
      from: s.me?.id ?? s.linkedAs?.id ?? null,
      to: `${sent.to}@c.us`,
      participant: null,
      fromMe: true,
      ack: ACKS[ackName],
      ackName,
    });
  }

  const settle = async () => {
    // New posts may queue while waiting; wait until the tail stops moving.
    for (let tail = posting; ; tail = posting) {
      await tail;
      if (tail === posting) return;
    }
  };

  return {
    url: `http://127.0.0.1:${port}`,
    apiKey,
    engine,
    sessions,
    requests,
    sends,
    deliveries,
    async scan(name, numero = '5215512345678') {
      const s = control(name);
      if (s.status !== 'SCAN_QR_CODE') throw new Error(`waha fake: ${name} shows no QR (${s.status})`);
      await link(s, numero);
    },
    async enterCode(name, code) {
      const s = control(name);
      if (s.status !== 'SCAN_QR_CODE' || !s.code || s.code.code !== code) throw new Error(`waha fake: ${code} is not the last code issued for ${name}`);
      await link(s, s.code.phoneNumber);
    },
    async rotateQr(name) {
      const s = control(name);
      if (s.status !== 'SCAN_QR_CODE') throw new Error(`waha fake: ${name} shows no QR (${s.status})`);
      newQr(s);
    },
    async phoneLogout(name) {
      await logout(control(name));
    },
    async receive(name, from, text, extra = {}) {
      const s = control(name);
      if (s.status !== 'WORKING' || s.dead) throw new Error(`waha fake: ${name} is not working`);
      const jid = from.includes('@') ? from : `${from}@c.us`;
      const fromMe = extra.fromMe === true;
      const serialized = `${fromMe}_${jid}_${extra.id ?? waId()}`;
      await emit(s, 'message', {
        id: serialized,
        timestamp: extra.timestamp ?? Math.floor(Date.now() / 1000),
        from: jid,
        fromMe,
        to: s.me?.id,
        body: text,
        hasMedia: extra.hasMedia ?? false,
        ...(extra.media ? { media: extra.media } : {}),
        ack: 1,
        ackName: 'SERVER',
        replyTo: null,
        _data: {},
      });
      return serialized;
    },
    async ack(name, id, ackName) {
      await ackOf(control(name), id, ackName);
    },
    async advance(name) {
      const s = control(name);
      if (s.status === 'STARTING') await started(s);
    },
    notOnNetwork: (numero) => void missing.add(numero.replace(/\D/g, '')),
    rateLimitNext: (n) => void (rateLimited = n),
    async killSilently(name, o = {}) {
      const s = control(name);
      s.dead = true;
      if (!o.staleMe) s.me = null;
    },
    hmacEnabled: (on) => void (hmacOn = on),
    ackBeforeReply: (on) => void (ackFirst = on),
    async down() {
      if (!listening) return;
      listening = false;
      const closed = new Promise<void>((r) => server.close(() => r()));
      server.closeAllConnections();
      await closed;
    },
    async up() {
      if (listening) return;
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, '127.0.0.1', () => {
          server.off('error', reject);
          resolve();
        });
      });
      listening = true;
    },
    settle,
    async close() {
      await settle();
      if (!listening) return;
      listening = false;
      const closed = new Promise<void>((r) => server.close(() => r()));
      server.closeAllConnections();
      await closed;
    },
  };
}
