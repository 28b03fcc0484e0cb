import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Clock } from '../../core/time/clock.js';
import { SESSION_STATUSES } from '../../core/ports/model.js';
import type { Store } from '../../core/ports/store.js';
import { VERSION } from '../../version.js';
import { processRegistry } from './process.js';
import { StoreGauges } from './store-gauges.js';

/**
 * Every metric `/metrics` exposes (docs/metrics.md is the reference, in the
 * same order). One registry per server, so servers in one process (tests)
 * never share counts; the process metrics are the process's, shared.
 *
 * Counters count what this process did: Prometheus sums them across nodes.
 * Gauges read from the store (queue, outbox, lines) are the store's, the
 * same on every node of a shared store: dashboards take their max().
 */

export const TIPOS = ['texto', 'imagen', 'documento', 'audio', 'video', 'sticker'] as const;
export const MODOS = ['cola', 'directo'] as const;
/** What a send became when it left `pendiente`. */
const FINISHED = ['enviado', 'error'] as const;
/** Where the network's receipts take a sent message. */
const RECEIPTS = ['entregado', 'leido', 'error'] as const;
const INBOUND_TIPOS = [...TIPOS, 'otro'] as const;
const WEBHOOK_ESTADOS = ['entregado', 'pendiente', 'fallido'] as const;
const ENGINE_MOVE_REASONS = ['free', 'gone', 'balance', 'stop'] as const;
export const GATEWAY_OPERATIONS = [
  'ensure_instance',
  'connect',
  'pairing_code',
  'status',
  'logout',
  'restart',
  'profile',
  'delete_instance',
  'send',
  'sent_message',
] as const;
export const GATEWAY_OUTCOMES = ['ok', 'permanent', 'rate_limited', 'transient', 'error'] as const;
export type GatewayOperation = (typeof GATEWAY_OPERATIONS)[number];
export type GatewayOutcome = (typeof GATEWAY_OUTCOMES)[number];

/** The route label of a request no route matched (a 404): one series, whatever the path. */
export const UNMATCHED = 'unmatched';
const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

const SECONDS_HTTP = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
const SECONDS_CALL = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
/** From a second to two days: a delivery retried on the schedule takes up to a day. */
const SECONDS_DELIVERY = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600, 6 * 3600, 24 * 3600, 48 * 3600];

export interface MetricsOptions {
  store: Store;
  clock: Clock;
  /** Store gauges are read at most this often (ms); scrapes in between get the last read. */
  storeCacheMs: number;
  info: { store: string; gateway: string };
  onError: (err: unknown) => void;
  /** Log lines dropped so far (log-sink.ts); none without it. */
  logLinesDropped?: () => number;
}

type HttpChild = Histogram.Internal<'route' | 'method' | 'status'>;

export class Metrics {
  /** What a scrape reads: this server's metrics and the process's. */
  readonly registry: Registry;
  private readonly own = new Registry();

  readonly httpDuration = new Histogram({
    name: 'pasarela_http_request_duration_seconds',
    help: 'HTTP requests answered, by route pattern (unmatched: no route), method and status, and how long each took; _count counts the requests',
    labelNames: ['route', 'method', 'status'] as const,
    buckets: SECONDS_HTTP,
    registers: [this.own],
  });

  readonly sendsAccepted = new Counter({
    name: 'pasarela_sends_accepted_total',
    help: 'Sends accepted (a message stored as pendiente), by tipo and modo',
    labelNames: ['tipo', 'modo'] as const,
    registers: [this.own],
  });

  readonly sendsFinished = new Counter({
    name: 'pasarela_sends_finished_total',
    help: 'Sends that left pendiente, by tipo, modo and estado: enviado (the gateway took it) or error (refused, failed for good, expired)',
    labelNames: ['tipo', 'modo', 'estado'] as const,
    registers: [this.own],
  });

  readonly receipts = new Counter({
    name: 'pasarela_message_receipts_total',
    help: "Sent messages moved on by the network's receipts, by tipo, modo and the estado reached: entregado, leido or error",
    labelNames: ['tipo', 'modo', 'estado'] as const,
    registers: [this.own],
  });

  readonly received = new Counter({
    name: 'pasarela_messages_received_total',
    help: 'Incoming messages, by tipo (otro: a kind pasarela does not name)',
    labelNames: ['tipo'] as const,
    registers: [this.own],
  });

  readonly sessionChanges = new Counter({
    name: 'pasarela_session_changes_total',
    help: "Changes of a line's session status, by the status reached",
    labelNames: ['status'] as const,
    registers: [this.own],
  });

  readonly lineBrakes = new Counter({
    name: 'pasarela_line_health_alerts_total',
    help: 'Lines that crossed a health threshold (celular.frenado), by causa (fallos, rechazados, sin_entregar) and whether the line was braked',
    labelNames: ['causa', 'frenado'] as const,
    registers: [this.own],
  });

  readonly lineResumes = new Counter({
    name: 'pasarela_line_resumes_total',
    help: 'Braked lines resumed (celular.reanudado)',
    registers: [this.own],
  });

  readonly webhookAttempts = new Counter({
    name: 'pasarela_webhook_attempts_total',
    help: 'Webhook delivery attempts, by what the delivery became: entregado, pendiente (failed, retried later) or fallido (given up)',
    labelNames: ['estado'] as const,
    registers: [this.own],
  });

  readonly webhookAttemptDuration = new Histogram({
    name: 'pasarela_webhook_attempt_duration_seconds',
    help: "How long one webhook attempt took, until the receiver's answer or the failure",
    buckets: SECONDS_CALL,
    registers: [this.own],
  });

  readonly webhookDeliveryLatency = new Histogram({
    name: 'pasarela_webhook_delivery_latency_seconds',
    help: 'From when a delivery was first due to when it was delivered, retries included',
    buckets: SECONDS_DELIVERY,
    registers: [this.own],
  });

  readonly gatewayCalls = new Counter({
    name: 'pasarela_gateway_calls_total',
    help: 'Calls to the gateway, by operation and outcome: ok, or a failure kind (permanent, rate_limited, transient; error: unclassified)',
    labelNames: ['operation', 'outcome'] as const,
    registers: [this.own],
  });

  readonly gatewayDuration = new Histogram({
    name: 'pasarela_gateway_call_duration_seconds',
    help: 'How long a call to the gateway took, by operation, whatever its outcome',
    labelNames: ['operation'] as const,
    buckets: SECONDS_CALL,
    registers: [this.own],
  });

  /** The engine's sockets on this node (`--gateway baileys`): each line's last status, read by the gauge. */
  readonly engineLines = new Map<string, string>();

  readonly engineReconnects = new Counter({
    name: 'pasarela_engine_reconnects_total',
    help: "The engine's reconnects after a socket closed (a lost connection, a restart the network asked for) on this node",
    registers: [this.own],
  });

  /** The engine's lines whose session this node holds now (`--gateway baileys`; set once the engine runs, serve.ts). */
  engineHeld: (() => number) | null = null;

  readonly engineMoves = new Counter({
    name: 'pasarela_engine_session_moves_total',
    help: 'Engine sessions this node took or gave, by reason: free (nobody held it), gone (its holder stopped beating), balance or stop (given away) (--gateway baileys; sum over nodes)',
    labelNames: ['reason'] as const,
    registers: [this.own],
  });

  /** Log lines the log output could not take (a full disk, a closed pipe): dropped, the service goes on (log-sink.ts). */
  readonly logLinesDropped: Counter;

  /** One call to the gateway, counted and timed (gateway.ts). */
  gatewayCall(operation: GatewayOperation, outcome: GatewayOutcome, seconds: number): void {
    this.gatewayDuration.labels(operation).observe(seconds);
    this.gatewayCalls.inc({ operation, outcome });
  }

  readonly stats: StoreGauges;
  private readonly http = new Map<string, Map<string, Map<number, HttpChild>>>();

  constructor(opts: MetricsOptions) {
    const dropped = opts.logLinesDropped;
    this.logLinesDropped = new Counter({
      name: 'pasarela_log_lines_dropped_total',
      help: 'Log lines dropped because the log output (stdout) failed or could not keep up: a full disk, an I/O error, a pipe whose reader went away',
      registers: [this.own],
      // Read at each scrape: the log output is made before the metrics (serve.ts builds the logger first).
      collect() {
        if (!dropped) return;
        this.reset();
        this.inc(dropped());
      },
    });
    const stats = (this.stats = new StoreGauges(opts.store, opts.clock, opts.storeCacheMs, opts.onError));
    // The store gauges show what `scrape` read (or the cache kept) just before.
    new Gauge({
      name: 'pasarela_queue_pending',
      help: "Queued messages still pendiente (the store's: every node reports the same; aggregate with max)",
      registers: [this.own],
      collect() {
        this.set(stats.queue.pending);
      },
    });
    new Gauge({
      name: 'pasarela_queue_oldest_pending_age_seconds',
      help: "Age of the oldest pendiente queued message, 0 when none (the store's; aggregate with max)",
      registers: [this.own],
      collect() {
        this.set(stats.queue.oldestAgeSeconds);
      },
    });
    new Gauge({
      name: 'pasarela_webhook_backlog',
      help: "Webhook deliveries pending in the outbox, by state: due (to be posted now) or scheduled (waiting for a retry) (the store's; aggregate with max)",
      labelNames: ['state'] as const,
      registers: [this.own],
      collect() {
        this.set({ state: 'due' }, stats.outbox.due);
        this.set({ state: 'scheduled' }, stats.outbox.pending - stats.outbox.due);
      },
    });
    new Gauge({
      name: 'pasarela_lines',
      help: "Lines by estado and last known session status (unknown: never known) (the store's; aggregate with max)",
      labelNames: ['estado', 'session'] as const,
      registers: [this.own],
      collect() {
        // The pairs read last; one gone since drops out.
        this.reset();
        for (const [estado, bySession] of stats.lines) for (const [session, n] of bySession) this.set({ estado, session }, n);
      },
    });
    new Gauge({
      name: 'pasarela_lines_braked',
      help: "Lines whose queue waits for a resume after crossing a health threshold (docs/brake.md) (the store's; aggregate with max)",
      registers: [this.own],
      collect() {
        this.set(stats.braked);
      },
    });
    const engineLines = this.engineLines;
    new Gauge({
      name: 'pasarela_engine_sessions',
      help: "The engine's lines on this node by session status: connected, connecting, need_scan, disconnected, logged_out (--gateway baileys; sum over nodes)",
      labelNames: ['status'] as const,
      registers: [this.own],
      collect() {
        this.reset();
        const counts = new Map<string, number>(['connected', 'connecting', 'need_scan', 'disconnected', 'logged_out'].map((k) => [k, 0]));
        for (const status of engineLines.values()) counts.set(status, (counts.get(status) ?? 0) + 1);
        for (const [status, n] of counts) this.set({ status }, n);
      },
    });
    const held = () => this.engineHeld?.() ?? 0;
    new Gauge({
      name: 'pasarela_engine_sessions_held',
      help: "The engine's lines whose session this node holds (--gateway baileys; sum over nodes: the lines held anywhere)",
      registers: [this.own],
      collect() {
        this.set(held());
      },
    });
    new Gauge({
      name: 'pasarela_store_stats_up',
      help: 'Whether the last read of the store gauges succeeded (0: they hold the values of the last read that did)',
      registers: [this.own],
      collect() {
        this.set(stats.up ? 1 : 0);
      },
    });
    new Gauge({
      name: 'pasarela_info',
      help: 'Always 1; the labels say what this node runs',
      labelNames: ['version', 'store', 'gateway'] as const,
      registers: [this.own],
    }).set({ version: VERSION, store: opts.info.store, gateway: opts.info.gateway }, 1);

    // Zero from the start for every known label value: rate() and increase() see the first event.
    for (const tipo of TIPOS) {
      for (const modo of MODOS) {
        this.sendsAccepted.labels(tipo, modo).inc(0);
        for (const estado of FINISHED) this.sendsFinished.labels(tipo, modo, estado).inc(0);
        for (const estado of RECEIPTS) this.receipts.labels(tipo, modo, estado).inc(0);
      }
    }
    for (const tipo of INBOUND_TIPOS) this.received.labels(tipo).inc(0);
    for (const status of SESSION_STATUSES) this.sessionChanges.labels(status).inc(0);
    for (const estado of WEBHOOK_ESTADOS) this.webhookAttempts.labels(estado).inc(0);
    for (const reason of ENGINE_MOVE_REASONS) this.engineMoves.labels(reason).inc(0);
    for (const operation of GATEWAY_OPERATIONS) for (const outcome of GATEWAY_OUTCOMES) this.gatewayCalls.labels(operation, outcome).inc(0);

    this.registry = Registry.merge([this.own, processRegistry()]);
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  /** The text exposition of every metric; the store gauges are read first (or come from the cache). */
  async scrape(): Promise<string> {
    await this.stats.refresh();
    return this.registry.metrics();
  }

  /**
   * One HTTP request answered. Per request, so the series is looked up in
   * nested maps of label values rather than through a labels object.
   */
  observeHttp(route: string | undefined, method: string, status: number, seconds: number): void {
    const r = route ?? UNMATCHED;
    const m = METHODS.has(method) ? method : 'OTHER';
    let byMethod = this.http.get(r);
    if (!byMethod) this.http.set(r, (byMethod = new Map<string, Map<number, HttpChild>>()));
    let byStatus = byMethod.get(m);
    if (!byStatus) byMethod.set(m, (byStatus = new Map<number, HttpChild>()));
    let child = byStatus.get(status);
    if (!child) byStatus.set(status, (child = this.httpDuration.labels(r, m, String(status))));
    child.observe(seconds);
  }

  /** Inbound tipos come from gateways: anything not named is `otro`, so a gateway cannot grow the series. */
  inboundTipo(tipo: string): string {
    return (INBOUND_TIPOS as readonly string[]).includes(tipo) ? tipo : 'otro';
  }
}
