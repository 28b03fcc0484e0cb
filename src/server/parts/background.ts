import type { Core } from '../../core/context.js';
import type { AcceptedMedia } from '../../core/ports/media.js';
import type { MensajeRow } from '../../core/ports/model.js';
import type { TempFiles } from '../../core/media/media.js';
import { NodePresence } from '../../core/nodes/node-presence.js';
import { EngineKeeper, type HolderChange } from '../../core/engine/engine-keeper.js';
import type { HolderReports } from '../../core/engine/engine-holders.js';
import type { RoutedEngine } from '../../gateways/baileys/routed.js';
import { EngineWatchdog } from '../watchdog.js';
import { QueueWorker } from '../../core/queue/queue-worker.js';
import { syncGatewayEvents } from '../../core/accounts/session-sync.js';
import type { HttpGatewayOptions } from '../../gateways/index.js';
import type { SqliteStore } from '../../store/sqlite/store.js';
import { mainGate, newGateBuffer } from '../../store/write-gate.js';
import { VERSION } from '../../version.js';
import { WebhookDispatcher, type WebhookControl } from '../../webhooks/dispatcher.js';
import { BackgroundThread } from '../background/handle.js';
import type { BackgroundSettings } from '../background/protocol.js';
import { newChangesBuffer, REQUEST_THREAD, shareChanges } from '../background/changes.js';
import { presenceSettings, webhookSettings, type ServeConfig } from '../config.js';
import type { Metrics } from '../metrics/metrics.js';
import type { GatewayPart } from './gateway.js';
import type { OpenedStore } from './store.js';
import type { Log, Parts } from './part.js';

/** This node among the store's (core/nodes/node-presence.ts): its heartbeat, and its streams freed when it stops. */
export async function startNode(parts: Parts, opts: ServeConfig, core: Pick<Core, 'store' | 'clock' | 'config'>, log: Log): Promise<NodePresence> {
  return parts.start({
    name: 'node presence',
    start: async () => {
      const node = new NodePresence(core.store, core.clock, {
        ...presenceSettings(opts, core.config.queue.leaseMs),
        alone: !core.store.caps.shared,
        sampleLag: true,
        onError: (err) => log.error({ err }, 'node heartbeat failed'),
      });
      await node.start();
      const stop = () =>
        node.stop().catch((err: unknown) => log.warn({ err }, 'could not tell the store this node stopped: its streams are free once its heartbeat is stale'));
      return { value: node, base: true, stop };
    },
  });
}

/** The queue worker and the webhook dispatcher, wherever they run; what the API wakes them with. */
export interface Background {
  webhooks: WebhookControl;
  queued: (celularId: number, m?: MensajeRow) => void;
  thread: BackgroundThread | null;
  /** On the request thread (null on the background thread): tests step it instead of waiting for its poll. */
  worker: QueueWorker | null;
  /** Likewise the webhook dispatcher. */
  dispatcher: WebhookDispatcher | null;
  /** `--gateway baileys`: which lines' sessions this node holds. */
  keeper: EngineKeeper | null;
}

interface BackgroundDeps {
  opts: ServeConfig;
  core: Core;
  node: NodePresence;
  opened: OpenedStore;
  media: AcceptedMedia;
  tmp: TempFiles;
  gw: GatewayPart;
  metrics: Metrics;
  log: Log;
  /** On a thread of their own (SQLite), or on the request thread. */
  onThread: boolean;
  /** Where a line's engine session changing hands here is reported (published and audited: core/engine/engine-holders.ts). */
  holders?: Pick<HolderReports, 'report' | 'idle'>;
}

/**
 * Starts, in this order: the handling of the gateway's events and the
 * adapter (its timers, its instances), the webhook dispatcher (inline), the
 * release of stale claims (SQLite), then the background thread or the queue
 * worker. Each is a part: stopped in reverse.
 */
export async function startBackground(parts: Parts, d: BackgroundDeps): Promise<Background> {
  const { opts, core, log } = d;
  const webhooks = webhookSettings(opts, `pasarela-webhooks/${VERSION}`);
  await parts.start({
    name: 'gateway events',
    start: async () => {
      const sync = syncGatewayEvents(core, (err) => log.error({ err }, 'gateway event handling failed'));
      await core.gateway.start();
      return { value: sync, stop: () => sync.idle() };
    },
  });
  // A line whose engine session this node takes may have a backlog only its holder sends: the worker looks at it then.
  let queueWorker: QueueWorker | null = null;
  const keeper = d.gw.engine
    ? await startEngineKeeper(parts, d, d.gw.engine, (c) => {
        if (c.to === d.node.info.id && c.celularId !== null) queueWorker?.poke();
      })
    : null;
  const dispatcher = d.onThread
    ? null
    : await parts.start({
        name: 'webhook dispatcher',
        start: () => {
          const dispatcher = new WebhookDispatcher(core, d.node, { ...webhooks, onError: (err) => log.error({ err }, 'webhook delivery step failed') });
          dispatcher.start();
          let stopping: Promise<void> | undefined;
          // At the halt, beside the rest: a receiver may take up to --webhook-timeout to answer, and what is abandoned stays due.
          const halt = () => void (stopping ??= dispatcher.stop());
          return { value: dispatcher, halt, stop: () => (stopping ??= dispatcher.stop()) };
        },
      });
  // Served alone (SQLite), nothing of this store is in flight before this process starts: every claim is stale.
  if (!d.opened.store.caps.shared) await core.store.releaseLeases();
  if (!dispatcher) {
    const thread = await parts.start({
      name: 'background thread',
      start: async () => {
        const thread = newThread(d, webhooks);
        await thread.start();
        return { value: thread, stop: () => thread.stop(), abandon: () => thread.kill() };
      },
    });
    return { webhooks: thread, queued: (id) => thread.queued(id), thread, worker: null, dispatcher: null, keeper };
  }
  const worker = await parts.start({
    name: 'queue worker',
    start: () => {
      const worker = new QueueWorker(core, d.media, d.node, {
        pollMs: opts.queuePollMs,
        onError: (err) => log.error({ err }, 'queue worker step failed'),
        // With the engine on several nodes, a line's queue is sent by the holder of its session (D-136).
        sendsHere: keeper && d.opened.store.caps.shared ? (id) => keeper.sendsHere(id) : undefined,
      });
      worker.start();
      return { value: worker, stop: () => worker.stop() };
    },
  });
  queueWorker = worker;
  return { webhooks: dispatcher, queued: (id, m) => worker.queued(id, m), thread: null, worker, dispatcher, keeper };
}

/**
 * The engine's keeper (`--gateway baileys`, core/engine/engine-keeper.ts): this
 * node's share of the lines' sessions, opened once the gateway's events are
 * handled; at a stop, after the queue and the requests, every socket closes
 * and its line is given back for the other nodes. On a shared store a
 * watchdog child stands by (server/watchdog.ts).
 */
async function startEngineKeeper(parts: Parts, d: BackgroundDeps, engine: RoutedEngine, taken: (c: HolderChange) => void): Promise<EngineKeeper> {
  const { opts, core, log } = d;
  const shared = d.opened.store.caps.shared;
  return parts.start({
    name: 'engine sessions',
    start: async () => {
      const watchdog = shared ? new EngineWatchdog((code) => log.error({ code }, 'the engine watchdog ended by itself: started again')) : undefined;
      const keeper = new EngineKeeper({
        store: core.store,
        engine: engine.sockets,
        node: d.node,
        clock: core.clock,
        shared,
        passMs: opts.nodeBeatMs,
        settleMs: opts.engineSettleMs,
        watchdog,
        onChange: (c) => {
          d.holders?.report(c);
          taken(c);
        },
        onError: (err) => log.error({ err }, 'engine sessions pass failed'),
      });
      try {
        await keeper.start();
      } catch (err) {
        watchdog?.close();
        throw err;
      }
      engine.bind(keeper);
      const stop = async () => {
        await keeper
          .handOver()
          .catch((err: unknown) => log.warn({ err }, 'engine sessions: could not give the lines back; they are taken once this node counts as gone'));
        watchdog?.close();
        // The hand-over's records are written before the store closes.
        await d.holders?.idle();
      };
      return { value: keeper, stop };
    },
  });
}

/** The background thread on the same SQLite file, sharing the write gate (store/write-gate.ts). */
function newThread(d: BackgroundDeps, webhooks: BackgroundSettings['webhooks']): BackgroundThread {
  const { opts, core, gw, log } = d;
  const gate = newGateBuffer();
  (core.store as SqliteStore).shareWrites(mainGate(gate));
  // Lives as long as the core: a thread started again finds the same counts.
  const changes = newChangesBuffer();
  shareChanges(core, changes, REQUEST_THREAD);
  return new BackgroundThread(
    {
      dbFile: d.opened.source,
      tmpDir: d.tmp.dir,
      gate,
      changes,
      gateway: opts.gateway,
      sim: gw.sim,
      http: plainHttp(gw.http),
      media: gw.mediaFetch,
      gatewayFetchesMedia: opts.gatewayFetchesMedia,
      config: core.config,
      webhooks,
      queuePollMs: opts.queuePollMs,
      presence: presenceSettings(opts, core.config.queue.leaseMs),
      resume: false,
    },
    {
      bus: core.bus,
      signals: core.signals,
      metrics: d.metrics,
      log: (level, obj, msg) => log[level](obj, msg),
      releaseClaims: () => core.store.releaseLeases(),
    },
    { restartMs: opts.backgroundRestartMs, healthyMs: opts.backgroundHealthyMs, clock: core.clock },
  );
}

/** The adapter options a thread can be handed: all but the clock and the media fetcher, which it makes. */
function plainHttp({ clock: _clock, media: _media, ...plain }: HttpGatewayOptions): BackgroundSettings['http'] {
  return plain;
}
