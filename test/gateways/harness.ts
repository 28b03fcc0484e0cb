import type { Gateway } from '../../src/core/ports/gateway.js';
import type { Tipo } from '../../src/core/ports/model.js';

/**
 * One gateway plus the "other side" of it: the network and the phones, as
 * controls. The contract suite (contract.ts) runs against each harness: the
 * sim, and each HTTP adapter talking to its fake over real HTTP, with the
 * fake's webhooks arriving over real HTTP at the adapter's handleInbound.
 */
export interface SentRecord {
  instancia: string;
  /** Digits with country code. */
  to: string;
  tipo: Tipo;
  /** Text of a text message, or a media caption. */
  text?: string;
  url?: string;
  /** Decoded bytes when the media went as base64. */
  bytes?: Buffer;
  filename?: string;
  mime?: string;
  /** Sent as a voice note. */
  ptt?: boolean;
  /** The gateway's own id for the message (what send() returned). */
  gatewayMsgId: string;
}

export interface GatewayHarness {
  readonly name: string;
  readonly gateway: Gateway;
  /** The phone scans the QR showing now for the instance; the session becomes connected (and the gateway says so by event). */
  scan(instancia: string): Promise<void>;
  /** The phone enters a pairing code; it must be the last one issued for the instance. */
  enterCode(instancia: string, code: string): Promise<void>;
  /** The QR of a waiting session changes now (as it does every ~20 s on a real network). */
  rotateQr(instancia: string): Promise<void>;
  /** The phone removes the linked device. */
  phoneLogout(instancia: string): Promise<void>;
  /** Someone writes to the line; resolves once the gateway has reported it (its webhook answered). Returns the gateway's message id. */
  receive(instancia: string, from: string, text: string): Promise<string>;
  /** The recipient's phone acknowledges a sent message; resolves once reported. */
  ack(instancia: string, gatewayMsgId: string, estado: 'entregado' | 'leido'): Promise<void>;
  /** Every message that reached the network, in order. */
  sent(): SentRecord[];
  /** Sends to this number fail as "not on the network". */
  notOnNetwork(numero: string): void | Promise<void>;
  /** The next `n` sends are refused as rate-limited. */
  rateLimitNext(n: number): void;
  /** The gateway stops answering (connections refused) until up(). */
  down(): Promise<void>;
  up(): Promise<void>;
  /** The session dies while the gateway keeps reporting it as open/working (where the gateway is known to do so). */
  killSilently?(instancia: string): Promise<void>;
  close(): Promise<void>;
}
