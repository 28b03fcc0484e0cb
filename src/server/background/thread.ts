import { parentPort, workerData, type MessagePort } from 'node:worker_threads';
import { systemClock } from '../../core/time/clock.js';
import { MemoryCounters } from '../../core/nodes/counters-memory.js';
import { EventBus, type BusEventName } from '../../core/events/events.js';
import { TempFiles } from '../../core/media/media.js';
import { NodePresence } from '../../core/nodes/node-presence.js';
import { QueueWorker } from '../../core/queue/queue-worker.js';
import { syncGatewayEvents } from '../../core/accounts/session-sync.js';
import { createGateway } from '../../gateways/index.js';
import { LocalMedia } from '../../store/sqlite/media.js';
import { openSqliteStore } from '../../store/sqlite/store.js';
import { backgroundGate } from '../../store/write-gate.js';
import { JOURNALED_EVENTS, WebhookDispatcher } from '../../webhooks/dispatcher.js';
import { makeCore } from '../make-core.js';
import { BACKGROUND_THREAD, shareChanges } from './changes.js';
import { countGatewayCalls } from '../metrics/gateway.js';
import type { GatewayOperation, GatewayOutcome } from '../metrics/metrics.js';
import { errObject, type BackgroundSettings, type BusRecord, type FromBackground, type LogLevel, type LogLine, type ToBackground } from './protocol.js';

/**
 * The background thread of `serve` on SQLite (handle.ts starts it): the
 * queue worker, the simulator's receipts of the sends made here, and the
 * webhook dispatcher, on a connection of their own to the same file. What
 * they publish goes to the request thread, batched per turn of this loop,
 * for its metrics and logs.
 */

const BUS_EVENTS: BusEventName[] = [...JOURNALED_EVENTS, 'webhook.attempt'];

/** What goes to the request thread, sent once per turn of the loop. */
class Outbox {
  private events: BusRecord[] = [];
  private calls: Array<[GatewayOperation, GatewayOutcome, number]> = [];
  private logs: LogLine[] = [];
  private scheduled = false;

  constructor(private readonly port: MessagePort) {}

  event(record: BusRecord): void {
    this.events.push(record);
    this.schedule();
  }

  gatewayCall(operation: GatewayOperation, outcome: GatewayOutcome, seconds: number): void {
    this.calls.push([operation, outcome, seconds]);
    this.schedule();
  }

  log(level: LogLevel, msg: string, err?: unknown): void {
    this.logs.push({ level, msg, obj: err === undefined ? {} : { err: errObject(err) } });
    this.schedule();
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => this.flush());
  }

  flush(): void {
    this.scheduled = false;
    if (this.events.length + this.calls.length + this.logs.length === 0) return;
    const out: FromBackground = { t: 'out', events: this.events, calls: this.calls, logs: this.logs };
    this.events = [];
    this.calls = [];
    this.logs = [];
    this.port.postMessage(out);
  }
}

async function main(port: MessagePort, s: BackgroundSettings): Promise<void> {
  const post = (m: FromBackground) => port.postMessage(m);
  const out = new Outbox(port);
  const onError = (msg: string) => (err: unknown) => out.log('error', msg, err);
  const store = openSqliteStore(s.dbFile);
  store.shareWrites(backgroundGate(s.gate));
  const clock = systemClock;
  const tmp = new TempFiles(s.tmpDir);
  const media = new LocalMedia(tmp);
  const http = { ...s.http, clock };
  const gateway = countGatewayCalls(
    await createGateway(s.gateway, store, clock, { sim: s.sim, http, media: { tmp, ...s.media }, gatewayFetchesMedia: s.gatewayFetchesMedia }),
    out,
  );
  const bus = new EventBus((err) => out.log('error', 'event listener failed', err));
  for (const name of BUS_EVENTS) bus.subscribe(name, (data) => out.event([name, data] as BusRecord));
  const core = makeCore(s.config, { store, counters: new MemoryCounters(clock), gateway, clock, bus });
  shareChanges(core, s.changes, BACKGROUND_THREAD);
  const node = new NodePresence(store, clock, { ...s.presence, alone: !store.caps.shared, onError: onError('node heartbeat failed') });
  await node.start();
  // Receipts of the sends made here come from this thread's adapter (the simulator's timers); HTTP gateways report to the request thread.
  const sync = syncGatewayEvents(core, onError('gateway event handling failed'));
  if (s.resume) await gateway.start();
  const dispatcher = new WebhookDispatcher(core, node, { ...s.webhooks, onError: onError('webhook delivery step failed') });
  const worker = new QueueWorker(core, media, node, { pollMs: s.queuePollMs, onError: onError('queue worker step failed') });
  dispatcher.start();
  worker.start();

  let stopping: Promise<void> | undefined;
  const stop = async () => {
    // Together: the dispatcher abandons its attempts at once (they stay due) while the worker's sends end.
    await Promise.all([worker.stop(), dispatcher.stop()]);
    await sync.idle();
    await node.stop().catch(() => undefined);
    await gateway.close();
    await store.close();
    out.flush();
    port.close();
  };
  port.on('message', (m: ToBackground) => {
    switch (m.t) {
      case 'wake':
        for (const id of m.queued) worker.queued(id);
        if (m.journal) dispatcher.poke();
        for (const id of m.clients) dispatcher.poke(id);
        for (const e of m.events) {
          const [id, kind] = e.split(' ');
          dispatcher.eventMade(Number(id), kind!);
        }
        for (const id of m.forget) dispatcher.forgetListener(id);
        return;
      case 'test':
        dispatcher.enqueueTest(m.clienteId, m.data).then(
          (id) => post({ t: 'reply', rid: m.rid, id }),
          (err: unknown) => post({ t: 'reply', rid: m.rid, error: err instanceof Error ? err.message : String(err) }),
        );
        return;
      case 'webhookConfig':
        dispatcher.configChanged(m.clienteId);
        return;
      case 'callbackUrl':
        http.callbackUrl = m.url;
        return;
      case 'stop':
        stopping ??= stop().catch((err: unknown) => {
          out.log('error', 'the background thread did not stop cleanly', err);
          out.flush();
          port.close();
        });
        return;
    }
  });
  post({ t: 'ready' });
}

if (parentPort) {
  const port = parentPort;
  main(port, workerData as BackgroundSettings).catch((err: unknown) => {
    port.postMessage({ t: 'failed', message: err instanceof Error ? err.message : String(err) } satisfies FromBackground);
    port.close();
  });
}
