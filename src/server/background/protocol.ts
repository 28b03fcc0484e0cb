import type { CoreConfig } from '../../core/context.js';
import type { PresenceTiming } from '../../core/nodes/node-presence.js';
import type { BusEventName, BusEvents } from '../../core/events/events.js';
import type { SimOptions } from '../../gateways/sim.js';
import type { DispatcherOptions } from '../../webhooks/dispatcher.js';
import type { GatewayOperation, GatewayOutcome } from '../metrics/metrics.js';

/**
 * What the request thread and the background thread (thread.ts) tell each
 * other. Everything is plain data (structured clone); the two share the
 * SQLite file and the write gate, nothing else.
 */

/** How the background thread builds its side: its own connection, gateway adapter and timers. */
export interface BackgroundSettings {
  dbFile: string;
  tmpDir: string;
  /** The write gate's words (store/write-gate.ts). */
  gate: SharedArrayBuffer;
  /** Each thread's count of line and client changes (changes.ts): what the other's caches follow. */
  changes: SharedArrayBuffer;
  gateway: string;
  sim: SimOptions;
  /** Evolution/WAHA: the adapter's options but the clock and the media fetcher, which the thread makes. */
  http: { url: string; key: string; callbackUrl: string; secret: string; timeoutMs: number; sendTimeoutMs: number };
  media: { allowPrivate: boolean; timeoutMs: number };
  gatewayFetchesMedia: boolean;
  config: CoreConfig;
  webhooks: Omit<DispatcherOptions, 'onError'>;
  queuePollMs: number;
  /** The node's longest send, heartbeat and takeover margin (NodePresence's). */
  presence: PresenceTiming;
  /**
   * A restart after the thread died: the simulator's owed receipts are armed
   * again here (the first start leaves them to the request thread's adapter,
   * which armed them when `serve` started).
   */
  resume: boolean;
}

export type ToBackground =
  /**
   * Coalesced per turn of the request thread's loop: lines with new queued messages, a look at the whole log,
   * clients whose deliveries changed, events logged ("cliente_id kind"), listeners removed.
   */
  | { t: 'wake'; queued: number[]; journal: boolean; clients: number[]; events: string[]; forget: string[] }
  | { t: 'test'; rid: number; clienteId: number; data: Record<string, unknown> }
  | { t: 'callbackUrl'; url: string }
  /** A client's webhook configuration changed on the request thread (null: any may have): the dispatcher's copy goes. */
  | { t: 'webhookConfig'; clienteId: number | null }
  | { t: 'stop' };

export type LogLevel = 'error' | 'warn' | 'info';
export interface LogLine {
  level: LogLevel;
  msg: string;
  obj: Record<string, unknown>;
}

export type BusRecord = { [K in BusEventName]: [K, BusEvents[K]] }[BusEventName];

export type FromBackground =
  | { t: 'ready' }
  | { t: 'failed'; message: string }
  /** Coalesced per turn of the background thread's loop: what its metrics and logs would have seen. */
  | { t: 'out'; events: BusRecord[]; calls: Array<[GatewayOperation, GatewayOutcome, number]>; logs: LogLine[] }
  | { t: 'reply'; rid: number; id?: string | null; error?: string };

/** An error as a log line's `err`: what pino would show of it, across the thread boundary. */
export function errObject(err: unknown): Record<string, unknown> {
  if (err instanceof Error) {
    const code = (err as Error & { code?: unknown }).code;
    return { type: err.name, message: err.message, stack: err.stack, ...(typeof code === 'string' ? { code } : {}) };
  }
  return { message: String(err) };
}
