// The fake of the network's web server: one WebSocket endpoint speaking Noise + binary nodes, a device registry,
// phones that link companions, contacts that really decrypt, and the stream errors the product must survive.
import type { BinaryNode, proto as Proto } from 'baileys';
import { createCipheriv, createDecipheriv, createHmac, hkdfSync, pbkdf2Sync, randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ProtocolAddress } from 'libsignal';
import { WebSocketServer, type WebSocket } from 'ws';
import { decryptMedia, startMediaHost, type MediaHost } from './media.js';
import { dh, makeCertChain, newKeyPair, NoiseServer, sign, verify, type KeyPair } from './noise.js';
import { bundleNode, bytes, child, children, n, readBigEndian } from './nodes.js';
import { SignalParty, type Bundle, type SignalPartyState } from './signal-party.js';

type BaileysModule = typeof import('baileys');
const S_WA = 's.whatsapp.net';
const MEDIA_AUTH = 'fakewa-media-auth';
const processRoot = newKeyPair();
// The pairing code's key: PBKDF2-SHA256, 2<<16 rounds, as Baileys' derivePairingCodeKey; the wrap is AES-256-CTR.
const pairingKey = (code: string, salt: Buffer): Buffer => pbkdf2Sync(code, salt, 2 << 16, 32, 'sha256');
const ctr = (key: Buffer, iv: Buffer, data: Buffer): Buffer => {
  const c = createCipheriv('aes-256-ctr', key, iv);
  return Buffer.concat([c.update(data), c.final()]);
};

export interface FakeNetworkOptions {
  /** Log lines of what the fake does (default: silent). */
  log?: (line: string) => void;
  /** Keep the device registry in this JSON file across the fake's own restarts. */
  stateFile?: string;
  /** Port for the WebSocket endpoint (default: any free port). */
  port?: number;
}

export interface DecryptedMessage {
  id: string;
  from: string;
  message: Proto.IMessage;
  media?: Buffer;
}

export interface FakeContact {
  numero: string;
  /** Copies this contact received but could not decrypt (or whose media did not check out). */
  errors: Array<{ id: string; error: string }>;
  lid: string;
  onNetwork: boolean;
  received(): DecryptedMessage[];
  waitFor(pred: (m: DecryptedMessage) => boolean, timeoutMs?: number): Promise<DecryptedMessage>;
}

export interface ConnectionRecord {
  device: string;
  openedAt: number;
  closedAt?: number;
}

interface Device {
  id: number;
  keyIndex: number;
  noisePub: Buffer;
  identityPub: Buffer;
  registrationId: number;
  signedPreKey?: { id: number; pub: Buffer; signature: Buffer };
  preKeys: Array<{ id: number; pub: Buffer }>;
  removed: boolean;
  /** Incoming stanzas not yet acknowledged by this device: redelivered at each login. */
  pending: Map<string, BinaryNode>;
  acks: string[];
}

interface Line {
  numero: string;
  lidUser: string;
  phone: SignalParty;
  devices: Map<number, Device>;
  nextDevice: number;
  connections: ConnectionRecord[];
  maxConcurrent: number;
  incoming: IncomingRecord[];
}

/** A message stanza a line sent, as the network saw it: per arrival of its id, each copy's jid, sender, type and outcome. */
export interface SentStanza {
  line: string;
  to: string;
  times: Array<Array<{ jid: string; from: string; type: string; outcome: string }>>;
}

export interface IncomingRecord {
  id: string;
  from: string;
  device: number;
  type: 'pkmsg' | 'msg';
}

interface Contact extends FakeContact {
  party: SignalParty;
  inbox: DecryptedMessage[];
}

interface Conn {
  ws: WebSocket;
  noise: NoiseServer;
  stage: 'hello' | 'finish' | 'open' | 'closed';
  line?: Line;
  device?: Device;
  record?: ConnectionRecord;
  registration?: { refs: string[]; identityPub: Buffer; registrationId: number; signedPreKey: { id: number; pub: Buffer; signature: Buffer } };
  pairing?: { numero: string; deviceId: number };
  linkCode?: { numero: string; wrappedEphemeral: Buffer; ref: string; phone?: { ephemeral: KeyPair; companionEphemeral: Buffer } };
}

interface SavedState {
  root: [string, string];
  lidCounter: number;
  lines: Array<{
    numero: string;
    lidUser: string;
    phone: SignalPartyState;
    nextDevice: number;
    connections: ConnectionRecord[];
    maxConcurrent: number;
    incoming: IncomingRecord[];
    devices: Array<{
      id: number;
      keyIndex: number;
      noisePub: string;
      identityPub: string;
      registrationId: number;
      signedPreKey?: { id: number; pub: string; signature: string };
      preKeys: Array<[number, string]>;
      removed: boolean;
      acks: string[];
      pending: Array<[string, string]>;
    }>;
  }>;
  contacts: Array<{ numero: string; lid: string; onNetwork: boolean; party: SignalPartyState }>;
}

export class FakeNetworkServer {
  wsUrl = '';
  readonly dir = mkdtempSync(join(tmpdir(), 'fakewa-'));
  /** One root per process, so two fakes in one test process trust the same key (WA_CERT_DETAILS is global). */
  root: KeyPair = processRoot;
  private readonly staticKey = newKeyPair();
  private http?: Server;
  private wss?: WebSocketServer;
  media!: MediaHost;
  private readonly lines = new Map<string, Line>();
  private readonly contacts = new Map<string, Contact>();
  private readonly conns = new Set<Conn>();
  private readonly sent = new Map<string, SentStanza>();
  private lidCounter = 100000000000001;
  private auto = true;
  private acksLost = false;
  /** Lines whose next message stanza is lost on the way: never acked nor delivered, its socket ended. */
  private readonly losing = new Set<string>();
  /** Set by tests to make the next pair-success carry a bad ADV HMAC. */
  corruptNextHmac = false;
  /** Link attempts the phone refused (key bundle that does not open, identities or device signature that do not match). */
  refusedLinks = 0;

  constructor(
    readonly baileys: BaileysModule,
    private readonly opts: FakeNetworkOptions = {},
  ) {}

  private log(line: string): void {
    this.opts.log?.(`fakewa: ${line}`);
  }

  async start(): Promise<void> {
    this.loadState();
    this.media = await startMediaHost(this.dir, MEDIA_AUTH);
    this.http = createServer((_req, res) => res.writeHead(426).end());
    this.wss = new WebSocketServer({ server: this.http });
    this.wss.on('connection', (ws: WebSocket) => this.accept(ws));
    await new Promise<void>((ok) => this.http!.listen(this.opts.port ?? 0, '127.0.0.1', ok));
    this.wsUrl = `ws://127.0.0.1:${(this.http.address() as AddressInfo).port}/ws/chat`;
  }

  async close(): Promise<void> {
    for (const c of this.conns) this.drop(c);
    for (const ws of this.wss?.clients ?? []) ws.terminate();
    await new Promise<void>((ok) => (this.wss ? this.wss.close(() => ok()) : ok()));
    await new Promise<void>((ok) => (this.http ? this.http.close(() => ok()) : ok()));
    await this.media?.close();
    this.persist();
    rmSync(this.dir, { recursive: true, force: true });
  }

  // ---------- connections ----------

  private accept(ws: WebSocket): void {
    const chain = makeCertChain(this.baileys.proto, this.root, this.staticKey.pub).encoded;
    const conn: Conn = { ws, noise: new NoiseServer(this.baileys.proto, this.staticKey, chain), stage: 'hello' };
    this.conns.add(conn);
    ws.on('message', (data: Buffer) => {
      void this.onData(conn, data).catch((err: unknown) => {
        this.log(`connection error: ${String(err)}`);
        this.drop(conn);
      });
    });
    ws.on('close', () => this.drop(conn));
    ws.on('error', () => this.drop(conn));
  }

  private drop(conn: Conn): void {
    if (conn.stage === 'closed') return;
    conn.stage = 'closed';
    this.conns.delete(conn);
    if (conn.record && conn.record.closedAt === undefined) conn.record.closedAt = Date.now();
    conn.ws.close();
  }

  private async onData(conn: Conn, data: Buffer): Promise<void> {
    for (const frame of conn.noise.frames(Buffer.from(data))) {
      if (conn.stage === 'hello') {
        conn.ws.send(conn.noise.serverHello(frame));
        conn.stage = 'finish';
        this.log('noise: ClientHello received, ServerHello sent');
      } else if (conn.stage === 'finish') {
        const payload = conn.noise.clientFinish(frame);
        conn.stage = 'open';
        this.onPayload(conn, payload);
      } else if (conn.stage === 'open') {
        const node = await this.baileys.decodeBinaryNode(frame);
        await this.onNode(conn, node);
      }
    }
  }

  send(conn: Conn, node: BinaryNode): void {
    if (conn.stage !== 'open') return;
    conn.ws.send(conn.noise.seal(this.baileys.encodeBinaryNode(node)));
  }

  private result(conn: Conn, iq: BinaryNode, content?: BinaryNode[]): void {
    this.send(conn, n('iq', { id: iq.attrs.id ?? '', type: 'result', from: S_WA }, content));
  }

  private streamError(conn: Conn, attrs: Record<string, string>, reason?: BinaryNode): void {
    this.send(conn, n('stream:error', attrs, reason ? [reason] : undefined));
    setTimeout(() => this.drop(conn), 50);
  }

  private onPayload(conn: Conn, payload: Proto.ClientPayload): void {
    const pairing = payload.devicePairingData;
    if (pairing?.eIdent && pairing.eSkeyVal && pairing.eSkeySig) {
      conn.registration = {
        refs: [0, 1, 2].map(() => `fakewa-${randomBytes(12).toString('base64url')}`),
        identityPub: Buffer.from(pairing.eIdent),
        registrationId: readBigEndian(Buffer.from(pairing.eRegid ?? [])),
        signedPreKey: { id: readBigEndian(Buffer.from(pairing.eSkeyId ?? [])), pub: Buffer.from(pairing.eSkeyVal), signature: Buffer.from(pairing.eSkeySig) },
      };
      this.log(`registration payload (regId ${conn.registration.registrationId}); sending pair-device with 3 refs`);
      this.send(
        conn,
        n('iq', { id: this.tag(), type: 'set', from: S_WA, xmlns: 'md' }, [
          n(
            'pair-device',
            {},
            conn.registration.refs.map((r) => n('ref', {}, Buffer.from(r))),
          ),
        ]),
      );
      return;
    }
    const numero = String(payload.username ?? '');
    const deviceId = payload.device ?? 0;
    const line = this.lines.get(numero);
    const device = line?.devices.get(deviceId);
    if (!line || !device || device.removed || !conn.noise.clientStatic?.equals(device.noisePub)) {
      this.log(`login ${numero}:${deviceId} refused (401)`);
      this.send(conn, n('failure', { reason: '401', location: 'fakewa' }));
      setTimeout(() => this.drop(conn), 50);
      return;
    }
    this.login(conn, line, device);
  }

  private login(conn: Conn, line: Line, device: Device): void {
    const jid = `${line.numero}:${device.id}`;
    const open = [...this.conns].filter((c) => c !== conn && c.device === device && c.stage === 'open');
    line.maxConcurrent = Math.max(line.maxConcurrent, open.length + 1);
    conn.line = line;
    conn.device = device;
    conn.record = { device: jid, openedAt: Date.now() };
    line.connections.push(conn.record);
    // The network keeps one socket per device: an older one is told it was replaced.
    for (const old of open) this.streamError(old, {}, n('conflict', { type: 'replaced' }));
    this.log(`login ${jid}@${S_WA} (passive=true); sending success`);
    this.send(
      conn,
      n('success', { t: String(Math.floor(Date.now() / 1000)), props: '1', lid: `${line.lidUser}:${device.id}@lid`, location: 'fakewa', creation: '1' }),
    );
    // Stanzas loaded from the state file are kept encoded; BinaryNode decoding is async, so it happens here. The offline
    // marker comes after them, as the network sends it: Baileys reads it as "every kept stanza has been sent".
    const kept = [...device.pending];
    void Promise.all(
      kept.map(async ([id, stored]) => {
        const stanza = await this.fromStore(stored);
        device.pending.set(id, stanza);
        return stanza;
      }),
    ).then((stanzas) => {
      for (const stanza of stanzas) this.send(conn, { ...stanza, attrs: { ...stanza.attrs, offline: '1' } });
      this.send(conn, n('ib', {}, [n('offline', { count: String(stanzas.length) })]));
    });
  }

  private tag(): string {
    return randomBytes(6).toString('hex');
  }

  // ---------- stanzas from the line ----------

  private async onNode(conn: Conn, node: BinaryNode): Promise<void> {
    switch (node.tag) {
      case 'iq':
        return this.onIq(conn, node);
      case 'message':
        return this.onMessage(conn, node);
      case 'ack':
      case 'receipt':
        if (conn.device && node.attrs.id) {
          conn.device.acks.push(`${node.tag}:${node.attrs.class ?? node.attrs.type ?? 'delivery'}:${node.attrs.id}`);
          if (!this.acksLost) conn.device.pending.delete(node.attrs.id);
        }
        return;
      default:
        return; // presence, ib (unified_session), chatstate: nothing to answer
    }
  }

  private async onIq(conn: Conn, iq: BinaryNode): Promise<void> {
    const first = children(iq)[0];
    const xmlns = iq.attrs.xmlns;
    if (iq.attrs.type === 'result' || iq.attrs.type === 'error') {
      if (first?.tag === 'pair-device-sign') return this.onPairDeviceSign(conn, first);
      return;
    }
    if (xmlns === 'encrypt' && first?.tag === 'count') {
      return this.result(conn, iq, [n('count', { value: String(conn.device?.preKeys.length ?? 0) })]);
    }
    if (xmlns === 'encrypt' && iq.attrs.type === 'set' && child(iq, 'list')) return this.onPreKeyUpload(conn, iq);
    if (xmlns === 'encrypt' && first?.tag === 'key')
      return this.result(conn, iq, [
        n(
          'list',
          {},
          children(first, 'user').map((u) => this.keyBundle(u.attrs.jid ?? '')),
        ),
      ]);
    if (xmlns === 'encrypt' && first?.tag === 'digest') return this.result(conn, iq, [n('digest', {}, [n('type', {}, Buffer.from([5]))])]);
    if (xmlns === 'usync') return this.result(conn, iq, [this.usync(child(iq, 'usync'))]);
    if (xmlns === 'w:m' && first?.tag === 'media_conn') {
      return this.result(conn, iq, [
        n('media_conn', { auth: MEDIA_AUTH, ttl: '3600', auth_ttl: '3600', max_buckets: '1' }, [
          n('host', { hostname: this.media.host, maxContentLengthBytes: '104857600' }),
        ]),
      ]);
    }
    if (xmlns === 'md' && first?.tag === 'link_code_companion_reg') return this.onLinkCode(conn, iq, first);
    // abt props, blocklist, privacy, w:p ping, passive/active, tokens...: an empty result is what Baileys needs.
    return this.result(conn, iq);
  }

  private onPreKeyUpload(conn: Conn, iq: BinaryNode): void {
    const device = conn.device;
    if (device) {
      for (const key of children(child(iq, 'list'), 'key')) {
        device.preKeys.push({ id: readBigEndian(bytes(child(key, 'id'))), pub: bytes(child(key, 'value'))! });
      }
      const skey = child(iq, 'skey');
      if (skey)
        device.signedPreKey = { id: readBigEndian(bytes(child(skey, 'id'))), pub: bytes(child(skey, 'value'))!, signature: bytes(child(skey, 'signature'))! };
      this.log(`pre-keys uploaded: ${device.preKeys.length} stored`);
    }
    this.result(conn, iq);
  }

  /** Who a jid's user part names: a line (its phone and companions) or a contact; by number or by LID. */
  private whois(user: string): { line?: Line; contact?: Contact } {
    for (const line of this.lines.values()) if (line.numero === user || line.lidUser === user) return { line };
    for (const c of this.contacts.values()) if (c.numero === user || c.lid === user) return { contact: c };
    if (/^\d{6,15}$/.test(user)) return { contact: this.addContact(user, true) };
    return {};
  }

  private keyBundle(jid: string): BinaryNode {
    const decoded = this.baileys.jidDecode(jid);
    const { line, contact } = this.whois(decoded?.user ?? '');
    const device = decoded?.device ?? 0;
    let bundle: Bundle | undefined;
    if (contact?.onNetwork && device === 0) bundle = contact.party.bundle();
    else if (line && device === 0) bundle = line.phone.bundle();
    else if (line) bundle = this.deviceBundle(line.devices.get(device));
    if (!bundle) return n('user', { jid }, [n('error', { code: '404', text: 'item-not-found' })]);
    return bundleNode(jid, bundle);
  }

  private deviceBundle(d: Device | undefined): Bundle | undefined {
    if (!d || d.removed || !d.signedPreKey) return undefined;
    const preKey = d.preKeys.shift();
    return { registrationId: d.registrationId, identity: d.identityPub, signedPreKey: d.signedPreKey, preKey };
  }

  private usync(q: BinaryNode | undefined): BinaryNode {
    const protocols = children(child(q, 'query')).map((p) => p.tag);
    const users = children(child(q, 'list'), 'user').map((u) => {
      const phone = bytes(child(u, 'contact'))?.toString();
      const jid = u.attrs.jid ?? `${(phone ?? '').replace(/\D/g, '')}@${S_WA}`;
      const { line, contact } = this.whois(this.baileys.jidDecode(jid)?.user ?? '');
      const on = !!line || !!contact?.onNetwork;
      const parts: BinaryNode[] = [];
      for (const p of protocols) {
        if (p === 'contact') parts.push(n('contact', { type: on ? 'in' : 'out' }));
        if (p === 'lid' && on) parts.push(n('lid', { val: `${line?.lidUser ?? contact!.lid}@lid` }));
        if (p === 'devices') {
          const list = !on
            ? []
            : line
              ? [
                  n('device', { id: '0' }),
                  ...[...line.devices.values()]
                    .filter((d) => !d.removed && d.signedPreKey)
                    .map((d) => n('device', { id: String(d.id), 'key-index': String(d.keyIndex) })),
                ]
              : [n('device', { id: '0' })];
          parts.push(n('devices', {}, [n('device-list', {}, list), n('key-index-list', { ts: String(Math.floor(Date.now() / 1000)) })]));
        }
      }
      return n('user', { jid }, parts);
    });
    return n('usync', { sid: q?.attrs.sid ?? '', mode: q?.attrs.mode ?? 'query', last: 'true', index: '0' }, [n('result', {}), n('list', {}, users)]);
  }

  /** A message the line sends: server ack, then each copy to a contact is decrypted by it. */
  private async onMessage(conn: Conn, msg: BinaryNode): Promise<void> {
    const id = msg.attrs.id ?? '';
    const to = msg.attrs.to ?? '';
    const line = conn.line;
    if (!line || !conn.device) return;
    if (this.losing.delete(line.numero)) {
      // The connection broke with the stanza on it: the network never had it.
      this.drop(conn);
      return;
    }
    this.send(conn, n('ack', { class: 'message', id, from: to, t: String(Math.floor(Date.now() / 1000)) }));
    // Every time the id comes (a send again after a crash repeats it), with what became of each copy: a test's diagnosis.
    const seen: SentStanza = this.sent.get(id) ?? { line: line.numero, to, times: [] };
    const copies: SentStanza['times'][number] = [];
    seen.times.push(copies);
    this.sent.set(id, seen);
    const sender = new ProtocolAddress(line.lidUser, conn.device.id);
    for (const dest of children(child(msg, 'participants'), 'to')) {
      const decoded = this.baileys.jidDecode(dest.attrs.jid ?? '');
      const { contact } = this.whois(decoded?.user ?? '');
      const enc = child(dest, 'enc');
      const copy = { jid: dest.attrs.jid ?? '', from: sender.toString(), type: enc?.attrs.type ?? '', outcome: 'not for a contact' };
      copies.push(copy);
      if (!contact || !enc || (decoded?.device ?? 0) !== 0) continue; // the line's own phone: not decrypted
      let received: DecryptedMessage;
      try {
        const plain = await contact.party.decrypt(sender, enc.attrs.type ?? 'msg', bytes(enc)!);
        const message = this.baileys.proto.Message.decode(this.baileys.unpadRandomMax16(plain));
        received = { id, from: line.numero, message, media: await this.fetchMedia(message) };
      } catch (err) {
        // A copy the contact cannot read is a finding for the test, not a reason to drop the line's socket.
        this.log(`${contact.numero} could not decrypt ${id}: ${String(err)}`);
        contact.errors.push({ id, error: String(err) });
        copy.outcome = `not decrypted: ${String(err)}`;
        continue;
      }
      copy.outcome = 'read';
      contact.inbox.push(received);
      this.log(`${contact.numero} decrypted ${id} from ${line.numero}`);
      if (this.auto) {
        await this.receipt(line.numero, id, 'delivery', contact.numero);
        await this.receipt(line.numero, id, 'read', contact.numero);
      }
    }
  }

  private async fetchMedia(message: Proto.IMessage): Promise<Buffer | undefined> {
    const kinds = { imageMessage: 'image', videoMessage: 'video', audioMessage: 'audio', documentMessage: 'document', stickerMessage: 'sticker' } as const;
    for (const [field, kind] of Object.entries(kinds)) {
      const m = message[field as keyof typeof kinds] ?? message.documentWithCaptionMessage?.message?.[field as keyof typeof kinds];
      if (!m?.mediaKey || !m.directPath) continue;
      const blob = this.media.blobs.get(m.directPath);
      if (!blob) throw new Error(`media ${m.directPath} was never uploaded`);
      return decryptMedia(blob, kind, m.mediaKey, m.fileEncSha256, m.fileSha256);
    }
    return undefined;
  }

  // ---------- the phone's side ----------

  /** The phone `numero` scans a QR the line showed: checks it against the handshake, then links the companion. */
  async scanQr(qr: string, numero: string): Promise<void> {
    const [ref, noiseB64, identityB64, advB64] = (qr.split('#')[1] ?? '').split(',');
    if (!ref || !noiseB64 || !identityB64 || !advB64) throw new Error(`not a pairing QR: ${qr}`);
    const conn = [...this.conns].find((c) => c.registration?.refs.includes(ref));
    if (!conn?.registration) throw new Error(`no connection showed QR ref ${ref}`);
    if (!conn.noise.clientStatic?.equals(Buffer.from(noiseB64, 'base64'))) throw new Error('QR noise key differs from the handshake static key');
    if (!conn.registration.identityPub.equals(Buffer.from(identityB64, 'base64'))) throw new Error('QR identity key differs from the registration payload');
    this.pairSuccess(conn, numero, Buffer.from(advB64, 'base64'), 'qr');
  }

  private lineFor(numero: string): Line {
    let line = this.lines.get(numero);
    if (!line) {
      line = {
        numero,
        lidUser: String(this.lidCounter++),
        phone: new SignalParty(),
        devices: new Map(),
        nextDevice: 1,
        connections: [],
        maxConcurrent: 0,
        incoming: [],
      };
      this.lines.set(numero, line);
    }
    return line;
  }

  private pairSuccess(conn: Conn, numero: string, advSecret: Buffer, how: string): void {
    const reg = conn.registration!;
    const line = this.lineFor(numero);
    const deviceId = line.nextDevice++;
    const P = this.baileys.proto;
    const details = Buffer.from(
      P.ADVDeviceIdentity.encode({ rawId: randomBytes(4).readUInt32BE(0) >>> 1, timestamp: Math.floor(Date.now() / 1000), keyIndex: deviceId }).finish(),
    );
    const account = line.phone.identity;
    const accountSignature = sign(account.privKey, Buffer.concat([Buffer.from([6, 0]), details, reg.identityPub]));
    const signed = Buffer.from(P.ADVSignedDeviceIdentity.encode({ details, accountSignatureKey: account.pubKey.subarray(1), accountSignature }).finish());
    let hmac = createHmac('sha256', advSecret).update(signed).digest();
    if (this.corruptNextHmac) {
      this.corruptNextHmac = false;
      hmac = Buffer.from(hmac.map((b) => b ^ 0xff));
    }
    const identity = Buffer.from(P.ADVSignedDeviceIdentityHMAC.encode({ details: signed, hmac }).finish());
    line.devices.set(deviceId, {
      id: deviceId,
      keyIndex: deviceId,
      noisePub: conn.noise.clientStatic!,
      identityPub: reg.identityPub,
      registrationId: reg.registrationId,
      signedPreKey: undefined,
      preKeys: [],
      removed: true,
      pending: new Map(),
      acks: [],
    });
    conn.pairing = { numero, deviceId };
    this.log(`phone ${numero} linked by ${how}; sending pair-success for device ${deviceId}`);
    this.send(
      conn,
      n('iq', { id: this.tag(), type: 'set', from: S_WA, xmlns: 'md' }, [
        n('pair-success', {}, [
          n('device-identity', {}, identity),
          n('platform', { name: 'smbi' }),
          n('device', { jid: `${numero}:${deviceId}@${S_WA}`, lid: `${line.lidUser}:${deviceId}@lid` }),
        ]),
      ]),
    );
  }

  /** The companion's reply: its signature over the account's, which the phone checks before the device counts. */
  private onPairDeviceSign(conn: Conn, sign: BinaryNode): void {
    if (!conn.pairing || !conn.registration) return;
    const line = this.lines.get(conn.pairing.numero)!;
    const device = line.devices.get(conn.pairing.deviceId)!;
    const P = this.baileys.proto;
    const signed = P.ADVSignedDeviceIdentity.decode(bytes(child(sign, 'device-identity'))!);
    const msg = Buffer.concat([Buffer.from([6, 1]), Buffer.from(signed.details ?? []), conn.registration.identityPub, line.phone.identity.pubKey.subarray(1)]);
    if (!signed.deviceSignature || !verify(conn.registration.identityPub, msg, signed.deviceSignature)) {
      this.log('pair-device-sign: device signature INVALID');
      this.refusedLinks++;
      this.streamError(conn, { code: '401' }, n('conflict', { type: 'device_removed' }));
      return;
    }
    device.removed = false;
    device.signedPreKey = conn.registration.signedPreKey;
    this.log(`pair-device-sign: device signature valid; 515 restart`);
    this.persist();
    this.streamError(conn, { code: '515' });
  }

  // ---------- pairing code ----------

  /** companion_hello: the line asked for a code; the phone will need it to unwrap the companion's ephemeral key. */
  private onLinkCode(conn: Conn, iq: BinaryNode, reg: BinaryNode): void {
    if (reg.attrs.stage === 'companion_hello') {
      const numero = (reg.attrs.jid ?? '').split('@')[0]!.split(':')[0]!;
      const ref = `fakewa-code-${randomBytes(8).toString('hex')}`;
      conn.linkCode = { numero, wrappedEphemeral: bytes(child(reg, 'link_code_pairing_wrapped_companion_ephemeral_pub'))!, ref };
      this.log(`companion_hello for ${numero}; waiting for the code on the phone`);
      return this.result(conn, iq, [n('link_code_companion_reg', {}, [n('link_code_pairing_ref', {}, Buffer.from(ref))])]);
    }
    if (reg.attrs.stage === 'companion_finish') return this.onCompanionFinish(conn, iq, reg);
    return this.result(conn, iq);
  }

  /** The phone `numero` types the code the line showed: it unwraps the companion's key and answers with its own. */
  async enterPairingCode(numero: string, code: string): Promise<void> {
    // The line shows the code as soon as it sent companion_hello: give that stanza a moment to arrive.
    const waiting = () => [...this.conns].find((c) => c.linkCode?.numero === numero && c.stage === 'open');
    for (const deadline = Date.now() + 10_000; !waiting() && Date.now() < deadline;) await new Promise((r) => setTimeout(r, 20));
    const conn = waiting();
    if (!conn?.linkCode) throw new Error(`no line is waiting for a pairing code for ${numero}`);
    const line = this.lineFor(numero);
    const wrapped = conn.linkCode.wrappedEphemeral;
    const companionEphemeral = ctr(pairingKey(code, wrapped.subarray(0, 32)), wrapped.subarray(32, 48), wrapped.subarray(48, 80));
    const primaryEphemeral = newKeyPair();
    const salt = randomBytes(32);
    const iv = randomBytes(16);
    const wrappedPrimary = Buffer.concat([salt, iv, ctr(pairingKey(code, salt), iv, primaryEphemeral.pub)]);
    conn.linkCode.phone = { ephemeral: primaryEphemeral, companionEphemeral };
    this.send(
      conn,
      n('notification', { from: S_WA, type: 'link_code_companion_reg', id: this.tag(), t: String(Math.floor(Date.now() / 1000)) }, [
        n('link_code_companion_reg', {}, [
          n('link_code_pairing_ref', {}, Buffer.from(conn.linkCode.ref)),
          n('primary_identity_pub', {}, line.phone.identity.pubKey.subarray(1)),
          n('link_code_pairing_wrapped_primary_ephemeral_pub', {}, wrappedPrimary),
        ]),
      ]),
    );
    this.log(`phone ${numero} typed the code; primary ephemeral key sent`);
  }

  /** companion_finish: the phone opens the key bundle, checks both identities, derives the ADV secret and links. */
  private onCompanionFinish(conn: Conn, iq: BinaryNode, reg: BinaryNode): void {
    const phone = conn.linkCode?.phone;
    if (!phone || !conn.registration) return this.result(conn, iq);
    const line = this.lineFor(conn.linkCode!.numero);
    const bundle = bytes(child(reg, 'link_code_pairing_wrapped_key_bundle'))!;
    const shared = dh(phone.ephemeral.priv, phone.companionEphemeral);
    const key = Buffer.from(hkdfSync('sha256', shared, bundle.subarray(0, 32), 'link_code_pairing_key_bundle_encryption_key', 32));
    let plain: Buffer;
    try {
      const d = createDecipheriv('aes-256-gcm', key, bundle.subarray(32, 44));
      const body = bundle.subarray(44);
      d.setAuthTag(body.subarray(body.length - 16));
      plain = Buffer.concat([d.update(body.subarray(0, body.length - 16)), d.final()]);
    } catch {
      // A wrong code gave the phone a wrong companion key: the bundle does not open and nothing is linked.
      this.log('companion_finish: key bundle does not open (wrong code?)');
      this.refusedLinks++;
      return this.send(conn, n('iq', { id: iq.attrs.id ?? '', type: 'error', from: S_WA }, [n('error', { code: '401', text: 'not-authorized' })]));
    }
    const companionIdentity = plain.subarray(0, 32);
    const primaryIdentity = plain.subarray(32, 64);
    if (!companionIdentity.equals(conn.registration.identityPub) || !primaryIdentity.equals(line.phone.identity.pubKey.subarray(1))) {
      this.log('companion_finish: identities do not match');
      this.refusedLinks++;
      return this.send(conn, n('iq', { id: iq.attrs.id ?? '', type: 'error', from: S_WA }, [n('error', { code: '400', text: 'bad-request' })]));
    }
    const identityShared = dh(line.phone.identity.privKey, companionIdentity);
    const advSecret = Buffer.from(hkdfSync('sha256', Buffer.concat([shared, identityShared, plain.subarray(64, 96)]), Buffer.alloc(0), 'adv_secret', 32));
    this.result(conn, iq);
    this.pairSuccess(conn, line.numero, advSecret, 'pairing code');
  }

  // ---------- contacts, receipts, incoming ----------

  addContact(numero: string, onNetwork: boolean, restore?: { lid: string; party: SignalParty }): Contact {
    const existing = this.contacts.get(numero);
    if (existing && !restore) {
      existing.onNetwork = onNetwork;
      return existing;
    }
    const inbox: DecryptedMessage[] = [];
    const c: Contact = {
      numero,
      lid: restore?.lid ?? String(this.lidCounter++),
      onNetwork,
      party: restore?.party ?? new SignalParty(),
      inbox,
      errors: [],
      received: () => [...inbox],
      waitFor: async (pred, timeoutMs = 20_000) => {
        const deadline = Date.now() + timeoutMs;
        for (;;) {
          const hit = inbox.find(pred);
          if (hit) return hit;
          if (Date.now() > deadline) throw new Error(`contact ${numero}: no matching message within ${timeoutMs} ms (has ${inbox.length})`);
          await new Promise((r) => setTimeout(r, 25));
        }
      },
    };
    this.contacts.set(numero, c);
    return c;
  }

  autoReceipts(on: boolean): void {
    this.auto = on;
  }

  /** Acks and receipts from lines are recorded but kept from taking effect, as if lost on the way: the stanza stays pending and comes again at the next login. */
  loseAcks(on: boolean): void {
    this.acksLost = on;
  }

  loseNextMessage(lineNumero: string): void {
    this.losing.add(lineNumero);
  }

  private openConns(line: Line): Conn[] {
    return [...this.conns].filter((c) => c.line === line && c.stage === 'open');
  }

  private deliver(line: Line, stanza: BinaryNode, durable: boolean): void {
    for (const d of line.devices.values()) {
      if (d.removed) continue;
      if (durable) d.pending.set(stanza.attrs.id!, stanza);
      for (const c of this.openConns(line).filter((x) => x.device === d)) this.send(c, stanza);
    }
  }

  async receipt(lineNumero: string, msgId: string, kind: 'delivery' | 'read', fromNumero: string): Promise<void> {
    const line = this.lines.get(lineNumero);
    if (!line) throw new Error(`no line ${lineNumero}`);
    const to = this.sent.get(msgId)?.to ?? `${fromNumero}@${S_WA}`;
    const attrs: Record<string, string> = { from: to, id: msgId, t: String(Math.floor(Date.now() / 1000)) };
    if (kind === 'read') attrs.type = 'read';
    this.deliver(line, n('receipt', attrs), false);
  }

  async sendText(fromNumero: string, toLineNumero: string, text: string): Promise<string> {
    const line = this.lines.get(toLineNumero);
    if (!line) throw new Error(`no line ${toLineNumero}`);
    const contact = this.contacts.get(fromNumero) ?? this.addContact(fromNumero, true);
    const id = `3A${randomBytes(9).toString('hex').toUpperCase()}`;
    const plain = this.baileys.writeRandomPadMax16(this.baileys.proto.Message.encode({ conversation: text }).finish());
    for (const d of line.devices.values()) {
      if (d.removed) continue;
      const { type, ciphertext } = await contact.party.encrypt(new ProtocolAddress(line.lidUser, d.id), Buffer.from(plain), () => this.deviceBundle(d));
      const stanza = n(
        'message',
        {
          from: `${contact.lid}@lid`,
          sender_pn: `${contact.numero}@${S_WA}`,
          addressing_mode: 'lid',
          id,
          t: String(Math.floor(Date.now() / 1000)),
          type: 'text',
          notify: `Contact ${contact.numero}`,
        },
        [n('enc', { v: '2', type }, ciphertext)],
      );
      d.pending.set(id, stanza);
      line.incoming.push({ id, from: fromNumero, device: d.id, type });
      for (const c of this.openConns(line).filter((x) => x.device === d)) this.send(c, stanza);
      this.log(`${fromNumero} → ${toLineNumero}:${d.id} ${type} ${id}`);
    }
    return id;
  }

  incoming(lineNumero: string): IncomingRecord[] {
    return [...(this.lines.get(lineNumero)?.incoming ?? [])];
  }

  /** What the network saw of a message stanza a line sent, each time its id came: its copies and what became of each. */
  stanza(id: string): SentStanza | undefined {
    return this.sent.get(id);
  }

  /** Incoming stanzas a device has not acknowledged yet (redelivered at its next login). */
  unacked(lineNumero: string): string[] {
    return [...(this.lines.get(lineNumero)?.devices.values() ?? [])].flatMap((d) => [...d.pending.keys()]);
  }

  acks(lineNumero: string): string[] {
    return [...(this.lines.get(lineNumero)?.devices.values() ?? [])].flatMap((d) => d.acks);
  }

  // ---------- stream errors ----------

  replaced(lineNumero: string): void {
    for (const c of this.openConns(this.mustLine(lineNumero))) this.streamError(c, {}, n('conflict', { type: 'replaced' }));
  }

  logoutFromPhone(lineNumero: string): void {
    const line = this.mustLine(lineNumero);
    for (const d of line.devices.values()) d.removed = true;
    for (const c of this.openConns(line)) this.streamError(c, { code: '401' }, n('conflict', { type: 'device_removed' }));
  }

  restartRequired(lineNumero: string): void {
    for (const c of this.openConns(this.mustLine(lineNumero))) this.streamError(c, { code: '515' });
  }

  connections(lineNumero: string): ConnectionRecord[] {
    return [...(this.lines.get(lineNumero)?.connections ?? [])];
  }

  maxConcurrent(lineNumero: string): number {
    return this.lines.get(lineNumero)?.maxConcurrent ?? 0;
  }

  private mustLine(numero: string): Line {
    const line = this.lines.get(numero);
    if (!line) throw new Error(`no line ${numero}`);
    return line;
  }

  // ---------- state file ----------

  /** The registry as JSON (opts.stateFile): lines, their devices and pending stanzas, contacts with their Signal state. */
  private loadState(): void {
    const file = this.opts.stateFile;
    if (!file || !existsSync(file)) return;
    const st = JSON.parse(readFileSync(file, 'utf8')) as SavedState;
    const hex = (h: string) => Buffer.from(h, 'hex');
    this.root = { pub: hex(st.root[0]), priv: hex(st.root[1]) };
    this.lidCounter = st.lidCounter;
    for (const l of st.lines) {
      const devices = new Map<number, Device>();
      for (const d of l.devices) {
        const pending = new Map<string, BinaryNode>();
        for (const [id, enc] of d.pending) pending.set(id, this.decodeSync(hex(enc)));
        devices.set(d.id, {
          ...d,
          noisePub: hex(d.noisePub),
          identityPub: hex(d.identityPub),
          signedPreKey: d.signedPreKey && { id: d.signedPreKey.id, pub: hex(d.signedPreKey.pub), signature: hex(d.signedPreKey.signature) },
          preKeys: d.preKeys.map(([id, pub]) => ({ id, pub: hex(pub) })),
          pending,
        });
      }
      this.lines.set(l.numero, { ...l, phone: new SignalParty(l.phone), devices, maxConcurrent: l.maxConcurrent });
    }
    for (const c of st.contacts) this.addContact(c.numero, c.onNetwork, { lid: c.lid, party: new SignalParty(c.party) });
    this.log(`state loaded from ${file}: ${this.lines.size} lines, ${this.contacts.size} contacts`);
  }

  private async fromStore(node: BinaryNode): Promise<BinaryNode> {
    return node.tag === '__encoded' ? this.baileys.decodeBinaryNode(Buffer.from(node.content as Uint8Array)) : node;
  }

  private decodeSync(buf: Buffer): BinaryNode {
    // Stored stanzas are re-decoded lazily at login; keep the encoded form wrapped until then.
    return { tag: '__encoded', attrs: {}, content: buf };
  }

  persist(): void {
    const file = this.opts.stateFile;
    if (!file) return;
    const hex = (b: Buffer) => b.toString('hex');
    const st: SavedState = {
      root: [hex(this.root.pub), hex(this.root.priv)],
      lidCounter: this.lidCounter,
      lines: [...this.lines.values()].map((l) => ({
        numero: l.numero,
        lidUser: l.lidUser,
        phone: l.phone.toJSON(),
        nextDevice: l.nextDevice,
        connections: l.connections,
        maxConcurrent: l.maxConcurrent,
        incoming: l.incoming,
        devices: [...l.devices.values()].map((d) => ({
          id: d.id,
          keyIndex: d.keyIndex,
          noisePub: hex(d.noisePub),
          identityPub: hex(d.identityPub),
          registrationId: d.registrationId,
          signedPreKey: d.signedPreKey && { id: d.signedPreKey.id, pub: hex(d.signedPreKey.pub), signature: hex(d.signedPreKey.signature) },
          preKeys: d.preKeys.map((k) => [k.id, hex(k.pub)] as [number, string]),
          removed: d.removed,
          acks: d.acks,
          pending: [...d.pending].map(([id, node]) => [id, hex(this.encodeStored(node))] as [string, string]),
        })),
      })),
      contacts: [...this.contacts.values()].map((c) => ({ numero: c.numero, lid: c.lid, onNetwork: c.onNetwork, party: c.party.toJSON() })),
    };
    writeFileSync(file, JSON.stringify(st));
  }

  private encodeStored(node: BinaryNode): Buffer {
    return node.tag === '__encoded' ? Buffer.from(node.content as Uint8Array) : this.baileys.encodeBinaryNode(node);
  }

  rootPublicKeyHex(): string {
    return this.root.pub.toString('hex');
  }
}
