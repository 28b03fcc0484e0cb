// The fake of the network's web server, for tests that drive real Baileys offline (issue 37). See README.md here.
import { createRequire } from 'node:module';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import {
  FakeNetworkServer,
  type ConnectionRecord,
  type DecryptedMessage,
  type FakeContact,
  type FakeNetworkOptions,
  type IncomingRecord,
  type SentStanza,
} from './network.js';

export type { ConnectionRecord, DecryptedMessage, FakeContact, FakeNetworkOptions, IncomingRecord, SentStanza };

export interface FakeNetwork {
  wsUrl: string;
  /** For `node --import <file>`: makes baileys trust the fake's certificate root before the product loads it. */
  preloadFile: string;
  trustInProcess(): Promise<void>;
  caFile: string;
  ca: string;
  /** host:port of the HTTPS media host (what media_conn hands out). */
  mediaHost: string;
  scanQr(qr: string, numero: string): Promise<void>;
  enterPairingCode(numero: string, code: string): Promise<void>;
  contact(numero: string, opts?: { onNetwork?: boolean }): FakeContact;
  receipt(lineNumero: string, msgId: string, kind: 'delivery' | 'read', fromNumero: string): Promise<void>;
  autoReceipts(on: boolean): void;
  /** The line's acks and receipts are recorded but lost on the way: what it received is delivered again at its next login. */
  loseAcks(on: boolean): void;
  /** The line's next message stanza is lost on the way: the network never acks nor delivers it, and ends that socket. */
  loseNextMessage(lineNumero: string): void;
  sendText(fromNumero: string, toLineNumero: string, text: string): Promise<string>;
  replaced(lineNumero: string): void;
  logoutFromPhone(lineNumero: string): void;
  restartRequired(lineNumero: string): void;
  connections(lineNumero: string): ConnectionRecord[];
  maxConcurrent(lineNumero: string): number;
  /** The acks and receipts the line sent for incoming stanzas ("message:<id>", "receipt:read:<id>"...). */
  acks(lineNumero: string): string[];
  /** Every incoming copy the fake encrypted to the line's devices, with its Signal type (pkmsg first, then msg). */
  incoming(lineNumero: string): IncomingRecord[];
  /** A message stanza a line sent, as the network saw it: each copy and what became of it (undefined: it never came). */
  stanza(id: string): SentStanza | undefined;
  /** Ids of incoming stanzas not yet acknowledged by the line: redelivered at its next login. */
  unacked(lineNumero: string): string[];
  /** Negative control: the next pair-success carries an ADV HMAC that does not match the QR's secret. */
  corruptNextHmac(): void;
  /** Link attempts the phone refused (wrong pairing code, mismatched identities, bad device signature). */
  refusedLinks(): number;
  /** The fake's certificate root (32-byte Curve25519 public key, hex). */
  rootPublicKey: string;
  close(): Promise<void>;
}

/** The file baileys resolves to from here: the product in this checkout resolves to the same module instance. */
export const baileysEntry = (): string => createRequire(import.meta.url).resolve('baileys');

export async function startFakeNetwork(opts: FakeNetworkOptions = {}): Promise<FakeNetwork> {
  const baileys = await import('baileys');
  const server = new FakeNetworkServer(baileys, opts);
  await server.start();
  const rootHex = server.rootPublicKeyHex();
  const preloadFile = join(server.dir, 'trust-fakewa.mjs');
  writeFileSync(
    preloadFile,
    [
      '// Written by test/fakewa: trust the fake network certificate root (tests only).',
      `const baileys = await import(${JSON.stringify(pathToFileURL(baileysEntry()).href)});`,
      `baileys.WA_CERT_DETAILS.PUBLIC_KEY = Buffer.from(${JSON.stringify(rootHex)}, 'hex');`,
      '',
    ].join('\n'),
  );
  return {
    wsUrl: server.wsUrl,
    preloadFile,
    trustInProcess: async () => {
      baileys.WA_CERT_DETAILS.PUBLIC_KEY = Buffer.from(rootHex, 'hex');
    },
    caFile: server.media.caFile,
    ca: server.media.ca,
    mediaHost: server.media.host,
    scanQr: (qr, numero) => server.scanQr(qr, numero),
    enterPairingCode: (numero, code) => server.enterPairingCode(numero, code),
    contact: (numero, o) => server.addContact(numero, o?.onNetwork ?? true),
    receipt: (line, id, kind, from) => server.receipt(line, id, kind, from),
    autoReceipts: (on) => server.autoReceipts(on),
    loseAcks: (on) => server.loseAcks(on),
    loseNextMessage: (l) => server.loseNextMessage(l),
    sendText: (from, to, text) => server.sendText(from, to, text),
    replaced: (l) => server.replaced(l),
    logoutFromPhone: (l) => server.logoutFromPhone(l),
    restartRequired: (l) => server.restartRequired(l),
    connections: (l) => server.connections(l),
    maxConcurrent: (l) => server.maxConcurrent(l),
    acks: (l) => server.acks(l),
    incoming: (l) => server.incoming(l),
    unacked: (l) => server.unacked(l),
    stanza: (id) => server.stanza(id),
    corruptNextHmac: () => {
      server.corruptNextHmac = true;
    },
    refusedLinks: () => server.refusedLinks,
    rootPublicKey: rootHex,
    close: () => server.close(),
  };
}
