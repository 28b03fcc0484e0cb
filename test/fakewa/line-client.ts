// A line as the product would run it: real Baileys with file credentials, pointed at the fake. Test helper only.
import type { ConnectionState, WAMessageUpdate, WASocket } from 'baileys';
import { Agent } from 'node:https';
import { pino } from 'pino';
import type { FakeNetwork } from './index.js';

export interface LineClient {
  sock(): WASocket;
  events: Array<Partial<ConnectionState>>;
  updates: WAMessageUpdate[];
  /** Highest status seen for each of our messages, from messages.update or, when Baileys' event buffer merged the
   * update into the upsert, from messages.upsert. */
  status: Map<string, number>;
  incoming: Array<{ id: string; remoteJid: string; text: string | null | undefined; senderPn?: string }>;
  /** Close codes seen, in order. */
  closes: number[];
  opened: number;
  waitOpen(count?: number): Promise<void>;
  stop(): Promise<void>;
  /** While held, a close does not reconnect; released, a reconnect held back goes at once. */
  holdReconnects(on: boolean): void;
}

export async function until<T>(what: string, fn: () => T | undefined | false, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = fn();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/**
 * Starts Baileys against the fake. It reconnects after a close like the product would (515, 440),
 * but not after 401 (logged out). `onQr` decides what the phone does with each QR.
 */
export async function startLine(
  fake: FakeNetwork,
  authDir: string,
  opts: { onQr?: (qr: string) => void; reconnect?: boolean; pairingNumero?: string; onCode?: (code: string) => void } = {},
): Promise<LineClient> {
  const baileys = await import('baileys');
  const makeWASocket = baileys.default;
  const { state, saveCreds } = await baileys.useMultiFileAuthState(authDir);
  const client: LineClient = {
    sock: () => current,
    events: [],
    updates: [],
    status: new Map(),
    incoming: [],
    closes: [],
    opened: 0,
    waitOpen: (count = 1) => until(`open #${count}`, () => client.opened >= count).then(() => undefined),
    stop: async () => {
      stopped = true;
      void current.end(undefined);
      await new Promise((r) => setTimeout(r, 20));
    },
    holdReconnects: (on) => {
      held = on;
      if (!on && heldBack) {
        heldBack = false;
        connect();
      }
    },
  };
  let stopped = false;
  let held = false;
  let heldBack = false;
  let current: WASocket;
  const connect = (): void => {
    const sock = makeWASocket({
      waWebSocketUrl: fake.wsUrl,
      auth: state,
      logger: pino({ level: process.env.FAKEWA_BAILEYS_LOG ?? 'silent' }),
      fetchAgent: new Agent({ ca: fake.ca }),
      markOnlineOnConnect: false,
      syncFullHistory: false,
      // The fake's phone sends no history sync: without this Baileys buffers every event for 20 s after a first login.
      shouldSyncHistoryMessage: () => false,
      fireInitQueries: true,
    });
    current = sock;
    let askedCode = false;
    sock.ev.on('creds.update', () => void saveCreds());
    const seen = (id: string | null | undefined, status: number | null | undefined): void => {
      if (id && typeof status === 'number') client.status.set(id, Math.max(status, client.status.get(id) ?? 0));
    };
    sock.ev.on('messages.update', (u) => {
      client.updates.push(...u);
      for (const x of u) seen(x.key.id, x.update.status);
    });
    sock.ev.on('messages.upsert', ({ messages }) => {
      for (const m of messages) {
        if (m.key.fromMe) {
          seen(m.key.id, m.status);
          continue;
        }
        client.incoming.push({
          id: m.key.id ?? '',
          remoteJid: m.key.remoteJid ?? '',
          text: m.message?.conversation ?? m.message?.extendedTextMessage?.text,
          senderPn: m.key.remoteJidAlt ?? undefined,
        });
      }
    });
    sock.ev.on('connection.update', (u) => {
      client.events.push(u);
      if (u.qr) {
        if (opts.pairingNumero && !askedCode) {
          askedCode = true;
          void sock.requestPairingCode(opts.pairingNumero).then((code) => opts.onCode?.(code));
        } else if (!opts.pairingNumero) opts.onQr?.(u.qr);
      }
      if (u.connection === 'open') client.opened++;
      if (u.connection === 'close') {
        const code = (u.lastDisconnect?.error as { output?: { statusCode?: number } } | undefined)?.output?.statusCode ?? 0;
        client.closes.push(code);
        if (!stopped && opts.reconnect !== false && code !== 401) {
          if (held) heldBack = true;
          else setTimeout(connect, 10);
        }
      }
    });
  };
  connect();
  return client;
}
