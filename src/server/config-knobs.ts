import { GATEWAYS } from '../gateways/index.js';
import { LOG_FORMATS } from './log-format.js';

/**
 * Every setting of `serve` in one table: its flag and environment variable
 * (if it has them), its default, how its value is read, its `--help` text
 * and its line in docs/configuration.md's table (generated from here by
 * `npm run generate`). The CLI registers its flags from this table and builds
 * one configuration object (ServeConfig, config.ts) from flags, environment
 * and these defaults; the server reads every setting from that object and has no
 * defaults of its own. Settings without a flag are timings and sizes tests
 * shrink (docs/decisions.md D-04).
 *
 * Kept free of server code, so that `--help` loads nothing of the server.
 */

/** How a flag's value is read (the CLI maps each kind to its parser). */
export type KnobKind = 'text' | 'choice' | 'int' | 'duration' | 'range' | 'address' | 'switch' | 'secret' | 'proxies';

/**
 * Which proxies `serve --trust-proxy` believes: none (client addresses from the
 * socket), a number of hops counted from this server (the right-most
 * X-Forwarded-For entries, which those proxies appended), or the addresses
 * and CIDR ranges of the proxies themselves (also `loopback`, `linklocal`,
 * `uniquelocal`). The client is the right-most address not trusted.
 */
export type TrustProxy = false | number | string[];

export interface Knob<T> {
  kind: KnobKind;
  default: T;
  /** As commander takes it: `--name <value>`, or `--name` for a switch. None: a setting only code and tests set. */
  flag?: string;
  env?: string;
  /** What docs/configuration.md's table adds after the variable's name (how a switch or a secret reads it). */
  envNote?: string;
  /** A `duration` no timer waits for (a retention, an age): it may be longer than the 24.8 days a timer holds. */
  long?: boolean;
  /** Bounds of an `int`. */
  min?: number;
  max?: number;
  choices?: readonly string[];
  /** The `--help` text (for a setting without a flag: what it is). */
  help: string;
  /** How `--help` shows the default, where the value itself would not read well (`15s` for 15000). */
  helpDefault?: string;
  /** Its line in docs/configuration.md: the default and what the setting does. */
  doc?: string;
  /** docs/configuration.md's first column for a setting that is no flag. */
  label?: string;
}

const knob = <T>(k: Knob<T>): Knob<T> => k;

const MiB = 1024 * 1024;

export const SERVE_KNOBS = {
  host: knob({ kind: 'text', flag: '--host <host>', env: 'PASARELA_HOST', default: '127.0.0.1', help: 'address to listen on', doc: '`127.0.0.1`' }),
  port: knob({
    kind: 'int',
    flag: '--port <port>',
    env: 'PASARELA_PORT',
    default: 8080,
    min: 0,
    max: 65535,
    help: 'port to listen on (0: any free port)',
    doc: '`8080` (`0`: any free port; the banner names it)',
  }),
  publicUrl: knob<string | undefined>({
    kind: 'text',
    flag: '--public-url <url>',
    env: 'PASARELA_PUBLIC_URL',
    default: undefined,
    help: 'the URL clients reach this server at, named as the server in /openapi.json and /docs (default: "/", wherever the document was fetched)',
    doc: 'none: the API document names its server `/` (where it was fetched), never a Host header',
  }),
  dataDir: knob<string | undefined>({
    kind: 'text',
    flag: '--data-dir <dir>',
    env: 'PASARELA_DATA_DIR',
    default: undefined,
    help: 'data directory (database, operator token)',
    doc: 'per-user data folder',
  }),
  gateway: knob({
    kind: 'choice',
    flag: '--gateway <name>',
    env: 'PASARELA_GATEWAY',
    default: 'sim',
    choices: GATEWAYS,
    help: 'messaging gateway adapter',
    doc: "`sim`; or `evolution`, `waha`; or `baileys`, pasarela's own engine ([Linking a real phone](../README.md#linking-a-real-phone))",
  }),
  baileysWsUrl: knob<string | undefined>({
    kind: 'text',
    flag: '--baileys-ws-url <url>',
    env: 'PASARELA_BAILEYS_WS_URL',
    default: undefined,
    help: "baileys: the network's web socket (default the real network's)",
    doc: "baileys: the network's web socket URL (default the real network's; tests point it at their fake)",
  }),
  nodeUrl: knob<string | undefined>({
    kind: 'text',
    flag: '--node-url <url>',
    env: 'PASARELA_NODE_URL',
    default: undefined,
    help: "baileys on several nodes: the URL the store's other nodes reach this node at, to hand it calls for the lines it holds (default: its listening address, or the host's name when it listens on every address)",
    doc: "baileys on several nodes: this node's URL as the other nodes reach it (default its listening address; the host name when it listens on 0.0.0.0)",
  }),
  engineKeyFile: knob<string | undefined>({
    kind: 'text',
    flag: '--engine-key-file <path>',
    env: 'PASARELA_ENGINE_KEY_FILE',
    default: undefined,
    help: "baileys: the file with the key that encrypts the lines' authentication state (default in the data directory)",
    doc: "baileys: the key file that encrypts the lines' authentication state in the store (default in the data directory)",
  }),
  gatewayUrl: knob<string | undefined>({
    kind: 'text',
    flag: '--gateway-url <url>',
    env: 'PASARELA_GATEWAY_URL',
    default: undefined,
    help: "evolution/waha: base URL of the gateway's API",
    doc: "evolution/waha: the gateway's API base URL (required): the gateway server named `default`",
  }),
  gatewayKey: knob<string | undefined>({
    kind: 'text',
    flag: '--gateway-key <key>',
    env: 'PASARELA_GATEWAY_KEY',
    default: undefined,
    help: "evolution/waha: the gateway's global API key (prefer the environment variable: flags show in ps)",
    doc: 'evolution/waha: its global API key (required; prefer the variable, flags show in `ps`)',
  }),
  gatewayCallbackUrl: knob<string | undefined>({
    kind: 'text',
    flag: '--gateway-callback-url <url>',
    env: 'PASARELA_GATEWAY_CALLBACK_URL',
    default: undefined,
    help: 'evolution/waha: base URL at which the gateway reaches this server (default http://HOST:PORT)',
    doc: 'where the gateway reaches this server; `http://HOST:PORT`',
  }),
  gatewaySecret: knob<string | undefined>({
    kind: 'secret',
    label: 'gateway secret',
    env: 'PASARELA_GATEWAY_SECRET',
    envNote: '(16+ characters)',
    default: undefined,
    help: 'the secret gateways sign their events with',
    doc: 'generated into `<data-dir>/gateway-secret`; share it between nodes',
  }),
  gatewayTimeoutMs: knob({
    kind: 'duration',
    flag: '--gateway-timeout <duration>',
    env: 'PASARELA_GATEWAY_TIMEOUT',
    default: 15_000,
    helpDefault: '15s',
    help: 'evolution/waha: deadline of a whole call to the gateway, answer included (sends get 4 times as long)',
    doc: '`15s` per call to the gateway, all of it (connecting, the upload, reading the answer); sends get 4 times as long',
  }),
  healthIntervalMs: knob({
    kind: 'duration',
    flag: '--health-interval <duration>',
    env: 'PASARELA_HEALTH_INTERVAL',
    default: 60_000,
    helpDefault: '60s',
    help: "how often every line's session is checked with the gateway (0: never)",
    doc: "`60s`: every line's session is checked this often (`0`: never)",
  }),
  headerTimeoutMs: knob({
    kind: 'duration',
    flag: '--header-timeout <duration>',
    env: 'PASARELA_HEADER_TIMEOUT',
    default: 20_000,
    helpDefault: '20s',
    help: "time to receive a request's headers",
    doc: "`20s` to receive a request's headers",
  }),
  bodyTimeoutMs: knob({
    kind: 'duration',
    flag: '--body-timeout <duration>',
    env: 'PASARELA_BODY_TIMEOUT',
    default: 20_000,
    helpDefault: '20s',
    help: 'time for a request body to start; --body-min-rate bytes then buy a second each',
    doc: '`20s` for a body to start (then `--body-min-rate`)',
  }),
  bodyMinRate: knob({
    kind: 'int',
    flag: '--body-min-rate <bytes>',
    env: 'PASARELA_BODY_MIN_RATE',
    default: 500,
    min: 1,
    max: 1_000_000_000,
    help: 'slowest body accepted, in bytes per second (after --body-timeout)',
    doc: "500 bytes/s: each 500 bytes extend the body's deadline by 1 s",
  }),
  requestTimeoutMs: knob({
    kind: 'duration',
    flag: '--request-timeout <duration>',
    env: 'PASARELA_REQUEST_TIMEOUT',
    default: 600_000,
    helpDefault: '10m',
    help: 'hard cap on receiving a whole request, however fast its body comes',
    doc: '`10m`: hard cap on receiving one request',
  }),
  unauthPerAddress: knob({
    kind: 'int',
    flag: '--unauth-body-per-address <bytes>',
    env: 'PASARELA_UNAUTH_BODY_PER_ADDRESS',
    default: 128 * MiB,
    helpDefault: '128 MiB',
    min: 1,
    max: Number.MAX_SAFE_INTEGER,
    help: 'body bytes in flight per client address on requests whose key is not yet verified (429 past it)',
    doc: '134217728 (128 MiB) body bytes in flight per address before the key is verified, then 429',
  }),
  unauthServerWide: knob({
    kind: 'int',
    flag: '--unauth-body-total <bytes>',
    env: 'PASARELA_UNAUTH_BODY_TOTAL',
    default: 512 * MiB,
    helpDefault: '512 MiB',
    min: 1,
    max: Number.MAX_SAFE_INTEGER,
    help: 'the same for the whole server (503 past it)',
    doc: '536870912 (512 MiB) the same server-wide, then 503',
  }),
  store: knob({
    kind: 'text',
    flag: '--store <where>',
    env: 'PASARELA_STORE',
    default: 'sqlite',
    help: "where the data lives: sqlite (the data directory's pasarela.db) or postgres://USER[:PASSWORD]@HOST:PORT/DB, which any number of nodes may serve together",
    doc: "`sqlite`: the data directory's `pasarela.db`; `postgres://USER[:PASSWORD]@HOST:PORT/DB` for PostgreSQL, which any number of nodes may serve together (see [several-nodes.md](several-nodes.md))",
  }),
  counters: knob({
    kind: 'text',
    flag: '--counters <where>',
    env: 'PASARELA_COUNTERS',
    default: 'memory',
    help: 'where duplicate protection and the auth throttle count: memory (this process) or redis://[:PASSWORD@]HOST:PORT[/DB] shared by every node',
    doc: '`memory`: duplicate protection and the auth throttle count in this process; `redis://[:PASSWORD@]HOST:PORT[/DB]` (or `rediss://`) to share them between nodes (see [several-nodes.md](several-nodes.md))',
  }),
  countersPrefix: knob({
    kind: 'text',
    flag: '--counters-prefix <prefix>',
    env: 'PASARELA_COUNTERS_PREFIX',
    default: 'pasarela:',
    help: 'redis: put before every key (installations sharing one Redis need different ones)',
    doc: '`pasarela:`: put before every Redis key (installations sharing one Redis need different ones)',
  }),
  drainDelayMs: knob({
    kind: 'duration',
    flag: '--drain-delay <duration>',
    env: 'PASARELA_DRAIN_DELAY',
    default: 0,
    helpDefault: '0s',
    help: 'on SIGTERM/SIGINT, how long /ready answers 503 (draining) while requests are still served, before the listener closes',
    doc: '`0s`: on SIGTERM/SIGINT, how long `/ready` answers 503 (`draining`) while everything still serves, before the listener closes (at most `10m`)',
  }),
  stopTimeoutMs: knob({
    kind: 'duration',
    flag: '--stop-timeout <duration>',
    env: 'PASARELA_STOP_TIMEOUT',
    default: 10_000,
    helpDefault: '10s',
    help: 'after the drain delay, the longest a graceful stop waits for work in flight before it abandons it and exits',
    doc: '`10s`: after `--drain-delay`, the longest a graceful stop waits for requests and sends in flight; then it abandons them (they are retried) and exits. Webhook attempts in flight are abandoned at once and stay due (at most `10m`)',
  }),
  logLevel: knob({
    kind: 'choice',
    flag: '--log-level <level>',
    env: 'PASARELA_LOG_LEVEL',
    default: 'info',
    choices: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'],
    help: 'log level',
    doc: '`info`',
  }),
  metricsListen: knob<{ host: string; port: number } | null | undefined>({
    kind: 'address',
    flag: '--metrics-listen <host:port>',
    env: 'PASARELA_METRICS_LISTEN',
    default: undefined,
    help: 'also serve /metrics, without credentials, on this address of its own (a private interface Prometheus scrapes); on the API port it needs the operator token',
    doc: 'off: also serve `/metrics`, without credentials, on `HOST:PORT` (a private interface); on the API port `/metrics` needs the operator token',
  }),
  logFormat: knob<string | undefined>({
    kind: 'choice',
    flag: '--log-format <format>',
    env: 'PASARELA_LOG_FORMAT',
    default: undefined,
    choices: LOG_FORMATS,
    help: 'log lines: pretty (readable) or json (one object a line); default: pretty when stdout is a terminal, json otherwise',
    doc: '`pretty` when stdout is a terminal, `json` otherwise (see [logs.md](logs.md))',
  }),
  inboxRetentionMs: knob({
    kind: 'duration',
    long: true,
    flag: '--inbox-retention <duration>',
    env: 'PASARELA_INBOX_RETENTION',
    default: 90 * 86_400_000,
    helpDefault: '90d',
    help: 'how long incoming messages are kept (pasarela recibidos lists them) before they are purged; 0 keeps them for ever',
    doc: '`90d`: incoming messages older than this are purged (at start, then every 10 minutes); `0` keeps them for ever',
  }),
  adminToken: knob<string | undefined>({
    kind: 'secret',
    label: 'operator token',
    env: 'PASARELA_ADMIN_TOKEN',
    envNote: '(16+ characters)',
    default: undefined,
    help: 'the operator token (/admin/* API)',
    doc: 'generated into `<data-dir>/admin-token`',
  }),
  trustProxy: knob<TrustProxy>({
    kind: 'proxies',
    flag: '--trust-proxy [hops|addresses]',
    default: false,
    help: 'behind reverse proxies: the client is the right-most X-Forwarded-For address not added by a trusted proxy; trusted: this many hops (no value: 1, the nearest proxy) or these proxy addresses/CIDRs, comma-separated',
    doc: 'off: client addresses come from the socket. `--trust-proxy` alone trusts the nearest proxy (1 hop); `--trust-proxy 2` two hops; `--trust-proxy 10.0.0.0/8,127.0.0.1` the proxies at those addresses (also `loopback`, `linklocal`, `uniquelocal`). The client is the right-most `X-Forwarded-For` address not trusted, never the client-written left end',
  }),
  authMaxFailures: knob({
    kind: 'int',
    flag: '--auth-max-failures <n>',
    default: 20,
    min: 1,
    max: 1_000_000,
    help: 'failed authentications of one credential from one address per minute before 429 (the address: 10 times that)',
    doc: '20 failed authentications of one credential from one address per minute, then 429 for that credential there; an address gets 10 times that before unproven credentials are refused',
  }),
  tz: knob<string | undefined>({
    kind: 'text',
    flag: '--tz <zone>',
    env: 'PASARELA_TZ',
    default: undefined,
    help: "IANA time zone of allowed hours and history dates (default: the system's)",
    doc: "the system's zone: allowed hours and history dates",
  }),
  allowPrivateUrls: knob({
    kind: 'switch',
    flag: '--allow-private-urls',
    default: false,
    help: 'let media and webhook URLs point at loopback and private addresses (a receiver on this machine, tests, closed networks)',
    doc: 'off: media and webhook URLs may not point at loopback/private addresses (a receiver on this machine needs it on)',
  }),
  gatewayFetchesMedia: knob({
    kind: 'switch',
    flag: '--gateway-fetches-media',
    env: 'PASARELA_GATEWAY_FETCHES_MEDIA',
    envNote: '(`1`/`0`)',
    default: false,
    help: 'evolution/waha: hand the gateway media URLs to fetch itself instead of the bytes (trusted setups only; env PASARELA_GATEWAY_FETCHES_MEDIA=1)',
    doc: 'off: pasarela fetches media URLs at send time and hands Evolution/WAHA the bytes; on, the gateway gets the URL and fetches it itself (only where the gateway cannot reach anything private)',
  }),
  queueGapMs: knob<[number, number]>({
    kind: 'range',
    flag: '--queue-gap-ms <min-max>',
    default: [1000, 5000],
    helpDefault: '1000-5000',
    help: 'random pause between two queued sends of one line',
    doc: '`1000-5000`: random pause between two queued sends of a line',
  }),
  queueTtlMs: knob({
    kind: 'duration',
    long: true,
    flag: '--queue-ttl <duration>',
    default: 86_400_000,
    helpDefault: '24h',
    help: 'a queued message not sent within this ends as error',
    doc: '`24h`: a queued message not sent by then ends as `error`',
  }),
  queueLeaseMs: knob<number | undefined>({
    kind: 'duration',
    flag: '--queue-lease <duration>',
    default: undefined,
    help: 'how long a send may hold a queued message; a node silent this long plus 10s loses its lines to the others (default: twice the send timeout plus 10s, at least 60s)',
    doc: 'how long a send may hold a queued message (default twice the send timeout plus 10 s, at least 60 s); a node silent this long plus 10 s loses its lines to the other nodes',
  }),
  queueMaxPending: knob({
    kind: 'int',
    flag: '--queue-max-pending <n>',
    default: 10_000,
    min: 1,
    max: 10_000_000,
    help: 'pending messages per line before 429',
    doc: '10000 pending messages per line, then 429',
  }),
  brakeMinMessages: knob({
    kind: 'int',
    flag: '--brake-min-messages <n>',
    default: 20,
    min: 1,
    max: 1_000_000,
    help: 'messages a line must have sent in the last hour before its health thresholds are weighed (docs/brake.md)',
    doc: '20: messages that left a line in the last hour before its health is weighed ([docs/brake.md](brake.md))',
  }),
  brakeFailurePct: knob({
    kind: 'int',
    flag: '--brake-failure-pct <pct>',
    default: 30,
    min: 1,
    max: 100,
    help: "share of a line's messages of the last hour that failed, at or over which it is alerted (and braked where its brake is on)",
    doc: '30: failed share that alerts (and brakes a line with `freno`)',
  }),
  brakeRefusedPct: knob({
    kind: 'int',
    flag: '--brake-refused-pct <pct>',
    default: 10,
    min: 1,
    max: 100,
    help: "share of a line's messages of the last hour refused for good (numbers not on the network), at or over which it is alerted or braked",
    doc: '10: share refused for good (not on the network) that alerts or brakes',
  }),
  brakeUndeliveredPct: knob({
    kind: 'int',
    flag: '--brake-undelivered-pct <pct>',
    default: 50,
    min: 1,
    max: 100,
    help: "share of a line's messages sent one to two hours ago still without a delivery receipt, at or over which it is alerted or braked",
    doc: '50: share sent over an hour ago and never delivered that alerts or brakes',
  }),
  webhookRetryMs: knob({
    kind: 'int',
    flag: '--webhook-retry-ms <ms>',
    default: 5000,
    min: 1,
    max: 3_600_000,
    help: 'first webhook retry delay; the schedule (x1, x60, x360, x1440, x3600, x7200, x7200) spans about a day at 5000',
    doc: '5000: first webhook retry delay; the schedule multiplies it',
  }),
  webhookTimeoutMs: knob({
    kind: 'duration',
    flag: '--webhook-timeout <duration>',
    env: 'PASARELA_WEBHOOK_TIMEOUT',
    default: 10_000,
    helpDefault: '10s',
    help: 'a webhook attempt not answered within this fails (and is retried)',
    doc: '`10s`: a webhook attempt not answered by then fails (and is retried)',
  }),
  webhookConcurrency: knob({
    kind: 'int',
    flag: '--webhook-concurrency <n>',
    env: 'PASARELA_WEBHOOK_CONCURRENCY',
    default: 64,
    min: 2,
    max: 10_000,
    help: 'webhook deliveries in flight at once, across clients',
    doc: '64 webhook deliveries in flight across clients',
  }),
  webhookClientConcurrency: knob({
    kind: 'int',
    flag: '--webhook-client-concurrency <n>',
    env: 'PASARELA_WEBHOOK_CLIENT_CONCURRENCY',
    default: 16,
    min: 1,
    max: 1000,
    help: 'webhook deliveries in flight at once for one client (1: one at a time, in event order)',
    doc: '16 in flight for one client (`1`: one at a time, in event order)',
  }),
  webhookPollMs: knob({
    kind: 'duration',
    flag: '--webhook-poll <duration>',
    env: 'PASARELA_WEBHOOK_POLL',
    default: 5000,
    helpDefault: '5s',
    help: "the webhook dispatcher's safety look: how often the event journal's pending deliveries and the listeners are checked without a wake-up (events, other nodes' signals and due retries wake it at once): what a lost signal may cost",
    doc: "`5s`: the webhook dispatcher's safety look: the event journal's pending deliveries and the listeners are checked this often without a wake-up (events, other nodes' signals and due retries wake it at once); it bounds a lost signal (on PostgreSQL a look the last beat found nothing for reads nothing, so a beat more: D-197)",
  }),
  background: knob({
    kind: 'choice',
    flag: '--background <where>',
    env: 'PASARELA_BACKGROUND',
    default: 'thread',
    choices: ['thread', 'inline'],
    help: 'where the queue worker, its receipts and webhook delivery run: thread (their own, off the request thread; SQLite) or inline (the request thread; always so on PostgreSQL)',
    doc: '`thread`: the queue worker, the receipts of its sends and webhook delivery run on a thread of their own, off the request thread (SQLite; on PostgreSQL always `inline`); `inline` keeps them on the request thread (docs/decisions.md D-11)',
  }),
  simQrMs: knob({
    kind: 'int',
    flag: '--sim-qr-ms <ms>',
    default: 20_000,
    min: 100,
    max: 3_600_000,
    help: 'simulator: how often a pending QR changes',
    doc: '20000: a pending QR changes this often',
  }),
  simDeliveryMs: knob({
    kind: 'int',
    flag: '--sim-delivery-ms <ms>',
    default: 1000,
    min: 0,
    max: 3_600_000,
    help: 'simulator: delay of delivery receipts',
    doc: '1000: delivery receipt delay of simulated sends',
  }),
  simReadMs: knob({
    kind: 'int',
    flag: '--sim-read-ms <ms>',
    default: 3000,
    min: 0,
    max: 3_600_000,
    help: 'simulator: delay of read receipts',
    doc: '3000: read receipt delay of simulated sends',
  }),

  // No flag: timings and sizes of the server's own loops, which tests shrink.
  authWindowMs: knob({ kind: 'int', default: 60_000, help: 'the window of --auth-max-failures' }),
  queuePollMs: knob({
    kind: 'int',
    default: 5000,
    help: "the longest the queue worker waits before it looks at the queue again without a wake-up (accepts, other nodes' signals and its own timers wake it): what a lost signal may cost",
  }),
  queueRetryMs: knob({ kind: 'int', default: 5000, help: 'first retry delay of a queued send that failed transiently; doubled each time up to 120 times it' }),
  queueRateLimitPauseMs: knob({ kind: 'int', default: 60_000, help: 'how long a line pauses when the network rate-limits it without saying for how long' }),
  queueRecheckMs: knob({ kind: 'int', default: 1000, help: "the longest a waiting line's state (hours, caps, estado, TTL) goes unchecked" }),
  queueInactiveHoldMs: knob({
    kind: 'int',
    default: 5000,
    help: 'how long a line that cannot send (client suspended, line not active) waits before it is looked at again',
  }),
  webhookHeldRetryMs: knob({ kind: 'int', default: 1000, help: "how soon a client's outbox that another node holds is asked for again" }),
  webhookListenLeaseMs: knob({ kind: 'int', default: 30_000, help: 'how long a webhook listener lives after its last renewal' }),
  webhookListenerConcurrency: knob({ kind: 'int', default: 16, help: "copies to webhook listeners in flight at once, apart from the deliveries' slots" }),
  webhookListenerRetryMs: knob({ kind: 'int', default: 250, help: "a listener copy's first quick retry; the second comes 4 times as long after its attempt" }),
  webhookListenerRecheckMs: knob({ kind: 'int', default: 1000, help: "how stale this node's view of a listener may grow before the store is asked again" }),
  webhookRevetMs: knob({
    kind: 'int',
    default: 30_000,
    help: "how long a receiver's vetted addresses are trusted before its host is resolved and checked again",
  }),
  webhookAgentIdleMs: knob({ kind: 'int', default: 60_000, help: "how long an unused receiver's connections are kept" }),
  nodeBeatMs: knob({ kind: 'int', default: 2000, help: 'how often this node tells the store it is alive (alone on SQLite it tells it once, D-191)' }),
  engineSettleMs: knob({
    kind: 'duration',
    flag: '--engine-settle <duration>',
    env: 'PASARELA_ENGINE_SETTLE',
    default: 30_000,
    helpDefault: '30s',
    help: "baileys on several nodes: how long a node keeps a line's session before it may hand it to a node holding fewer",
    doc: '`30s`: baileys on several nodes, how long a node keeps a line before it may hand it to a node holding fewer (the lines spread one per beat)',
  }),
  nodeTakeoverMarginMs: knob({
    kind: 'int',
    default: 10_000,
    help: "beyond its longest send, how long a silent node's streams (queues, outboxes) are left to it before another node takes them",
  }),
  backgroundRestartMs: knob({ kind: 'int', default: 1000, help: 'a background thread that died starts again after this, doubling to 30 times it' }),
  backgroundHealthyMs: knob({
    kind: 'int',
    default: 60_000,
    help: 'a background thread that ran this long before dying starts again after the shortest delay',
  }),
  directRecoveryMs: knob({ kind: 'int', default: 60_000, help: 'period of the pass that resolves direct sends a crash left pending; 0: only at start' }),
  healthConcurrency: knob({ kind: 'int', default: 4, help: 'lines checked with the gateway at once by the health check' }),
  inboxPurgeIntervalMs: knob({ kind: 'int', default: 600_000, help: "period of the inbox's purge (it also runs at start); 0: only when called" }),
  eventPruneIntervalMs: knob({
    kind: 'int',
    default: 60_000,
    help: "period of the event log's prune and of the expired kv rows' purge (they also run at start); 0: only when called",
  }),
  countersTimeoutMs: knob({ kind: 'int', default: 500, help: 'a Redis command not answered within this falls back to memory' }),
  countersProbeMs: knob({ kind: 'int', default: 1000, help: 'how often a lost Redis is pinged' }),
  metricsCacheMs: knob({ kind: 'int', default: 2000, help: 'how long the store gauges of /metrics are reused' }),
  checkpointMs: knob({ kind: 'int', default: 1000, help: "how often SQLite's WAL is copied back into the database, off the request thread" }),
};

export type KnobName = keyof typeof SERVE_KNOBS;

/** Every setting's value, as the table types it. */
export type KnobValues = { [K in KnobName]: (typeof SERVE_KNOBS)[K] extends Knob<infer T> ? T : never };

/** Each setting's default, taken from the table. */
export function knobDefaults(): KnobValues {
  const out: Record<string, unknown> = {};
  for (const [name, k] of Object.entries(SERVE_KNOBS)) out[name] = k.default;
  return out as KnobValues;
}

/** docs/configuration.md's table: every setting with a flag or a variable (scripts/generate.mjs writes it between markers). */
export function configTableMarkdown(): string {
  const rows = ['| flag | env | default |', '|---|---|---|'];
  for (const k of Object.values(SERVE_KNOBS) as Array<Knob<unknown>>) {
    if (!k.doc) continue;
    const name = k.flag ? `\`${k.flag.split(' ')[0]}\`` : (k.label ?? '');
    const env = k.env ? `\`${k.env}\`${k.envNote ? ` ${k.envNote}` : ''} ` : '';
    rows.push(`| ${name} | ${env}| ${k.doc} |`);
  }
  return `${rows.join('\n')}\n`;
}
