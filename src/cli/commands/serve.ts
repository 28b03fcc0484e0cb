import { Command, Option } from 'commander';
import { defaultDataDir } from '../../paths.js';
import { BACKGROUND_DEFAULT, REQUEST_LIMITS, SERVE_DEFAULTS } from '../../server/defaults.js';
import { CliError, EXIT } from '../exit-codes.js';
import type { IO } from '../io.js';
import { hostPort, int, wordOrUrl } from '../parse.js';
import { duration, msRange } from '../duration.js';
import { isValidTz } from '../../core/hours.js';
import { GATEWAYS } from '../../gateways/index.js';
import { colorLevel } from '../io.js';
import { LOG_FORMATS } from '../../server/log-format.js';

/** A yes/no environment variable: 1/true/yes or 0/false/no (or empty); anything else is a usage error, not a silent "yes". */
function envFlag(env: NodeJS.ProcessEnv, name: string): boolean {
  const v = env[name]?.trim().toLowerCase();
  if (v === undefined || v === '' || v === '0' || v === 'false' || v === 'no') return false;
  if (v === '1' || v === 'true' || v === 'yes') return true;
  throw new CliError(`${name}: "${env[name]}" is not 1/true/yes or 0/false/no`, EXIT.USAGE);
}

/**
 * A start that failed, as one line for stderr. The port, the address and the
 * data directory are named with what to do; anything else (a store out of
 * reach, a bad token, a bug) is "cannot start: <message>", its stack written
 * before it only under --log-level debug or trace, for a bug report.
 */
function startFailure(e: NodeJS.ErrnoException, host: string, port: string, logLevel: string, io: IO): CliError {
  switch (e.code) {
    case 'EADDRINUSE':
      return new CliError(`port ${port} on ${host} is already in use (--port or PASARELA_PORT picks another)`, EXIT.ERROR);
    case 'EACCES':
      if (e.syscall === 'listen')
        return new CliError(
          `not allowed to listen on port ${port} on ${host} (ports below 1024 need privileges; --port or PASARELA_PORT picks another)`,
          EXIT.ERROR,
        );
      break;
    case 'EADDRNOTAVAIL':
      return new CliError(`cannot listen on ${host}: not an address of this machine (--host or PASARELA_HOST)`, EXIT.ERROR);
    case 'EDATADIRINUSE':
      return new CliError(e.message, EXIT.ERROR);
  }
  if ((logLevel === 'debug' || logLevel === 'trace') && e.stack) io.stderr.write(`${e.stack}\n`);
  return new CliError(`cannot start: ${e.message}`, EXIT.ERROR);
}

/** `pasarela serve`: the whole service in this process until SIGINT or SIGTERM. */
export function registerServe(program: Command, io: IO, env: NodeJS.ProcessEnv): void {
  program
    .command('serve')
    .description('run the gateway service (HTTP API, gateway adapter, embedded SQLite)')
    .addOption(new Option('--host <host>', 'address to listen on').env('PASARELA_HOST').default(SERVE_DEFAULTS.host))
    .addOption(new Option('--port <port>', 'port to listen on (0: any free port)').env('PASARELA_PORT').default(SERVE_DEFAULTS.port).argParser(int(0, 65535)))
    .addOption(new Option('--data-dir <dir>', 'data directory (database, operator token)').env('PASARELA_DATA_DIR'))
    .addOption(
      new Option('--gateway <name>', 'messaging gateway adapter')
        .env('PASARELA_GATEWAY')
        .default(SERVE_DEFAULTS.gateway)
        .choices([...GATEWAYS]),
    )
    .addOption(new Option('--gateway-url <url>', "evolution/waha: base URL of the gateway's API").env('PASARELA_GATEWAY_URL'))
    .addOption(
      new Option('--gateway-key <key>', "evolution/waha: the gateway's global API key (prefer the environment variable: flags show in ps)").env(
        'PASARELA_GATEWAY_KEY',
      ),
    )
    .addOption(
      new Option('--gateway-callback-url <url>', 'evolution/waha: base URL at which the gateway reaches this server (default http://HOST:PORT)').env(
        'PASARELA_GATEWAY_CALLBACK_URL',
      ),
    )
    .addOption(
      new Option('--gateway-timeout <duration>', 'evolution/waha: timeout of a call to the gateway (sends get 4 times as long)')
        .env('PASARELA_GATEWAY_TIMEOUT')
        .default(15_000, '15s')
        .argParser(duration),
    )
    .addOption(
      new Option('--health-interval <duration>', "how often every line's session is checked with the gateway (0: never)")
        .env('PASARELA_HEALTH_INTERVAL')
        .default(60_000, '60s')
        .argParser(duration),
    )
    .addOption(
      new Option('--header-timeout <duration>', "time to receive a request's headers")
        .env('PASARELA_HEADER_TIMEOUT')
        .default(REQUEST_LIMITS.headerTimeoutMs, '20s')
        .argParser(duration),
    )
    .addOption(
      new Option('--body-timeout <duration>', 'time for a request body to start; --body-min-rate bytes then buy a second each')
        .env('PASARELA_BODY_TIMEOUT')
        .default(REQUEST_LIMITS.bodyTimeoutMs, '20s')
        .argParser(duration),
    )
    .addOption(
      new Option('--body-min-rate <bytes>', 'slowest body accepted, in bytes per second (after --body-timeout)')
        .env('PASARELA_BODY_MIN_RATE')
        .default(REQUEST_LIMITS.bodyMinRate)
        .argParser(int(1, 1_000_000_000)),
    )
    .addOption(
      new Option('--request-timeout <duration>', 'hard cap on receiving a whole request, however fast its body comes')
        .env('PASARELA_REQUEST_TIMEOUT')
        .default(REQUEST_LIMITS.requestTimeoutMs, '10m')
        .argParser(duration),
    )
    .addOption(
      new Option('--unauth-body-per-address <bytes>', 'body bytes in flight per client address on requests whose key is not yet verified (429 past it)')
        .env('PASARELA_UNAUTH_BODY_PER_ADDRESS')
        .default(REQUEST_LIMITS.unauthPerAddress, '128 MiB')
        .argParser(int(1, Number.MAX_SAFE_INTEGER)),
    )
    .addOption(
      new Option('--unauth-body-total <bytes>', 'the same for the whole server (503 past it)')
        .env('PASARELA_UNAUTH_BODY_TOTAL')
        .default(REQUEST_LIMITS.unauthServerWide, '512 MiB')
        .argParser(int(1, Number.MAX_SAFE_INTEGER)),
    )
    .addOption(
      new Option(
        '--store <where>',
        "where the data lives: sqlite (the data directory's pasarela.db) or postgres://USER[:PASSWORD]@HOST:PORT/DB, which any number of nodes may serve together",
      )
        .env('PASARELA_STORE')
        .default('sqlite'),
    )
    .addOption(
      new Option(
        '--counters <where>',
        'where duplicate protection and the auth throttle count: memory (this process) or redis://[:PASSWORD@]HOST:PORT[/DB] shared by every node',
      )
        .env('PASARELA_COUNTERS')
        .default('memory'),
    )
    .addOption(
      new Option('--counters-prefix <prefix>', 'redis: put before every key (installations sharing one Redis need different ones)')
        .env('PASARELA_COUNTERS_PREFIX')
        .default('pasarela:'),
    )
    .addOption(
      new Option(
        '--drain-delay <duration>',
        'on SIGTERM/SIGINT, how long /ready answers 503 (draining) while requests are still served, before the listener closes',
      )
        .env('PASARELA_DRAIN_DELAY')
        .default(SERVE_DEFAULTS.drainDelayMs, '0s')
        .argParser(duration),
    )
    .addOption(
      new Option(
        '--metrics-listen <host:port>',
        'also serve /metrics, without credentials, on this address of its own (a private interface Prometheus scrapes); on the API port it needs the operator token',
      )
        .env('PASARELA_METRICS_LISTEN')
        .argParser(hostPort),
    )
    .addOption(
      new Option('--log-level <level>', 'log level')
        .env('PASARELA_LOG_LEVEL')
        .default(SERVE_DEFAULTS.logLevel)
        .choices(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']),
    )
    .addOption(
      new Option('--log-format <format>', 'log lines: pretty (readable) or json (one object a line); default: pretty when stdout is a terminal, json otherwise')
        .env('PASARELA_LOG_FORMAT')
        .choices([...LOG_FORMATS]),
    )
    .addOption(new Option('--trust-proxy', 'take client addresses from X-Forwarded-For (behind a reverse proxy)'))
    .addOption(
      new Option('--auth-max-failures <n>', 'failed authentications of one credential from one address per minute before 429 (the address: 10 times that)')
        .default(SERVE_DEFAULTS.authMaxFailures)
        .argParser(int(1, 1_000_000)),
    )
    .addOption(new Option('--tz <zone>', "IANA time zone of allowed hours and history dates (default: the system's)").env('PASARELA_TZ'))
    .addOption(new Option('--allow-private-urls', 'let media URLs point at loopback and private addresses (tests, closed networks)'))
    .addOption(
      new Option(
        '--gateway-fetches-media',
        'evolution/waha: hand the gateway media URLs to fetch itself instead of the bytes (trusted setups only; env PASARELA_GATEWAY_FETCHES_MEDIA=1)',
      ),
    )
    .addOption(
      new Option('--queue-gap-ms <min-max>', 'random pause between two queued sends of one line').default([1000, 5000], '1000-5000').argParser(msRange),
    )
    .addOption(new Option('--queue-ttl <duration>', 'a queued message not sent within this ends as error').default(86_400_000, '24h').argParser(duration))
    .addOption(
      new Option(
        '--queue-lease <duration>',
        'how long a send may hold a queued message; a node silent this long plus 10s loses its lines to the others (default: twice the send timeout plus 10s, at least 60s)',
      ).argParser(duration),
    )
    .addOption(new Option('--queue-max-pending <n>', 'pending messages per line before 429').default(10_000).argParser(int(1, 10_000_000)))
    .addOption(
      new Option('--webhook-timeout <duration>', 'a webhook attempt not answered within this fails (and is retried)')
        .env('PASARELA_WEBHOOK_TIMEOUT')
        .default(SERVE_DEFAULTS.webhookTimeoutMs, '10s')
        .argParser(duration),
    )
    .addOption(
      new Option('--webhook-concurrency <n>', 'webhook deliveries in flight at once, across clients')
        .env('PASARELA_WEBHOOK_CONCURRENCY')
        .default(SERVE_DEFAULTS.webhookConcurrency)
        .argParser(int(2, 10_000)),
    )
    .addOption(
      new Option('--webhook-client-concurrency <n>', 'webhook deliveries in flight at once for one client (1: one at a time, in event order)')
        .env('PASARELA_WEBHOOK_CLIENT_CONCURRENCY')
        .default(SERVE_DEFAULTS.webhookClientConcurrency)
        .argParser(int(1, 1000)),
    )
    .addOption(
      new Option('--webhook-poll <duration>', 'how often the event journal is checked without a wake-up (new events wake the dispatcher at once)')
        .env('PASARELA_WEBHOOK_POLL')
        .default(SERVE_DEFAULTS.webhookPollMs, '500ms')
        .argParser(duration),
    )
    .addOption(
      new Option(
        '--inbox-retention <duration>',
        'how long incoming messages are kept (pasarela recibidos lists them) before they are purged; 0 keeps them for ever',
      )
        .env('PASARELA_INBOX_RETENTION')
        .default(SERVE_DEFAULTS.inboxRetentionMs, '90d')
        .argParser(duration),
    )
    .addOption(
      new Option('--webhook-retry-ms <ms>', 'first webhook retry delay; the schedule (x1, x60, x360, x1440, x3600, x7200, x7200) spans about a day at 5000')
        .default(5000)
        .argParser(int(1, 3_600_000)),
    )
    .addOption(new Option('--sim-qr-ms <ms>', 'simulator: how often a pending QR changes').default(SERVE_DEFAULTS.simQrMs).argParser(int(100, 3_600_000)))
    .addOption(new Option('--sim-delivery-ms <ms>', 'simulator: delay of delivery receipts').default(SERVE_DEFAULTS.simDeliveryMs).argParser(int(0, 3_600_000)))
    .addOption(new Option('--sim-read-ms <ms>', 'simulator: delay of read receipts').default(SERVE_DEFAULTS.simReadMs).argParser(int(0, 3_600_000)))
    .addOption(
      new Option(
        '--background <where>',
        'where the queue worker, its receipts and webhook delivery run: thread (their own, off the request thread; SQLite) or inline (the request thread; always so on PostgreSQL)',
      )
        .env('PASARELA_BACKGROUND')
        .default(BACKGROUND_DEFAULT)
        .choices(['thread', 'inline']),
    )
    .action(async (o: Record<string, unknown>) => {
      const gateway = String(o.gateway);
      if (Number(o.gatewayTimeout) < 100) throw new CliError('--gateway-timeout must be at least 100ms', EXIT.USAGE);
      for (const flag of ['headerTimeout', 'bodyTimeout', 'requestTimeout'] as const) {
        if (Number(o[flag]) < 100) throw new CliError(`--${flag.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)} must be at least 100ms`, EXIT.USAGE);
      }
      if (Number(o.headerTimeout) > Number(o.requestTimeout)) throw new CliError('--header-timeout may not be longer than --request-timeout', EXIT.USAGE);
      if (Number(o.webhookTimeout) < 100) throw new CliError('--webhook-timeout must be at least 100ms', EXIT.USAGE);
      if (Number(o.drainDelay) > 600_000) throw new CliError('--drain-delay may be at most 10m', EXIT.USAGE);
      if (Number(o.webhookPoll) < 10) throw new CliError('--webhook-poll must be at least 10ms', EXIT.USAGE);
      if (Number(o.inboxRetention) !== 0 && Number(o.inboxRetention) < 3_600_000)
        throw new CliError('--inbox-retention must be 0 (keep for ever) or at least 1h', EXIT.USAGE);
      if (gateway !== 'sim') {
        for (const [flag, v] of [
          ['--gateway-url', o.gatewayUrl],
          ['--gateway-key', o.gatewayKey],
        ] as const) {
          if (!v) throw new CliError(`--gateway ${gateway} needs ${flag} (or PASARELA_${flag.slice(2).toUpperCase().replace('-', '_')})`, EXIT.USAGE);
        }
        for (const [flag, v] of [
          ['--gateway-url', o.gatewayUrl],
          ['--gateway-callback-url', o.gatewayCallbackUrl],
        ] as const) {
          if (v && !/^https?:\/\/[^/\s]+/.test(String(v))) throw new CliError(`${flag}: "${String(v)}" is not an http(s) URL`, EXIT.USAGE);
        }
      }
      const store = wordOrUrl('--store', String(o.store), 'sqlite', /^postgres(ql)?:$/, 'a postgres:// URL (postgres://USER@HOST:5432/DB)');
      const counters = wordOrUrl('--counters', String(o.counters), 'memory', /^rediss?:$/, 'a redis:// URL (redis://HOST:6379)');
      const countersPrefix = String(o.countersPrefix);
      if (!/^[^\s*?[\]]{1,100}$/.test(countersPrefix))
        throw new CliError(`--counters-prefix: "${countersPrefix}" must be 1 to 100 characters, without spaces or * ? [ ]`, EXIT.USAGE);
      const gatewayFetchesMedia = Boolean(o.gatewayFetchesMedia) || envFlag(env, 'PASARELA_GATEWAY_FETCHES_MEDIA');
      const tz = (o.tz as string | undefined) || undefined;
      if (tz && !isValidTz(tz)) throw new CliError(`--tz: unknown time zone "${tz}" (an IANA name such as America/Mexico_City)`, EXIT.USAGE);
      const [gapMinMs, gapMaxMs] = o.queueGapMs as [number, number];
      const leaseMs = o.queueLease === undefined ? undefined : Number(o.queueLease);
      // A claim that ends before a send can has another worker send the same message.
      if (leaseMs !== undefined && leaseMs < 2 * Number(o.gatewayTimeout) * 4) {
        throw new CliError(
          `--queue-lease must be at least twice the send timeout (4 x --gateway-timeout): ${(8 * Number(o.gatewayTimeout)) / 1000}s`,
          EXIT.USAGE,
        );
      }
      // Loaded here so that client commands never pay for the server's modules.
      const { banner, startServer } = await import('../../server/serve.js');
      let server;
      try {
        server = await startServer({
          host: String(o.host),
          port: Number(o.port),
          dataDir: (o.dataDir as string | undefined) || defaultDataDir(env),
          gateway,
          logLevel: String(o.logLevel),
          adminToken: env.PASARELA_ADMIN_TOKEN || undefined,
          trustProxy: Boolean(o.trustProxy),
          authMaxFailures: Number(o.authMaxFailures),
          authWindowMs: SERVE_DEFAULTS.authWindowMs,
          simQrMs: Number(o.simQrMs),
          simDeliveryMs: Number(o.simDeliveryMs),
          simReadMs: Number(o.simReadMs),
          tz,
          allowPrivateUrls: Boolean(o.allowPrivateUrls),
          gatewayFetchesMedia,
          webhookRetryMs: Number(o.webhookRetryMs),
          webhookTimeoutMs: Number(o.webhookTimeout),
          webhookConcurrency: Number(o.webhookConcurrency),
          webhookClientConcurrency: Number(o.webhookClientConcurrency),
          webhookPollMs: Number(o.webhookPoll),
          queue: { gapMinMs, gapMaxMs, ttlMs: Number(o.queueTtl), maxPending: Number(o.queueMaxPending), ...(leaseMs === undefined ? {} : { leaseMs }) },
          logStream: io.stdout,
          logFormat: o.logFormat === 'pretty' || o.logFormat === 'json' ? o.logFormat : io.stdoutIsTTY ? 'pretty' : 'json',
          logColor: colorLevel(io.stdoutIsTTY, env, false) === 1,
          gatewayUrl: (o.gatewayUrl as string | undefined) || undefined,
          gatewayKey: (o.gatewayKey as string | undefined) || undefined,
          gatewayCallbackUrl: (o.gatewayCallbackUrl as string | undefined) || undefined,
          gatewaySecret: env.PASARELA_GATEWAY_SECRET || undefined,
          gatewayTimeoutMs: Number(o.gatewayTimeout),
          gatewaySendTimeoutMs: Number(o.gatewayTimeout) * 4,
          healthIntervalMs: Number(o.healthInterval),
          inboxRetentionMs: Number(o.inboxRetention),
          store,
          counters,
          countersPrefix,
          metricsListen: (o.metricsListen as { host: string; port: number } | null | undefined) ?? undefined,
          background: o.background === 'inline' ? 'inline' : 'thread',
          limits: {
            headerTimeoutMs: Number(o.headerTimeout),
            bodyTimeoutMs: Number(o.bodyTimeout),
            bodyMinRate: Number(o.bodyMinRate),
            requestTimeoutMs: Number(o.requestTimeout),
            unauthPerAddress: Number(o.unauthBodyPerAddress),
            unauthServerWide: Number(o.unauthBodyTotal),
          },
        });
      } catch (err) {
        // One line, no stack trace: what went wrong is the message (docs/logs.md, "Start failures").
        throw startFailure(err as NodeJS.ErrnoException, String(o.host), String(o.port), String(o.logLevel), io);
      }
      io.stderr.write(banner(server, gateway));
      // The first signal stops gracefully; a second one falls back to Node's default and ends the process.
      const signal = await new Promise<string>((resolve) => {
        process.once('SIGINT', () => resolve('SIGINT'));
        process.once('SIGTERM', () => resolve('SIGTERM'));
      });
      const drainMs = Number(o.drainDelay);
      io.stderr.write(`${signal}: ${drainMs > 0 ? `not ready (draining) for ${drainMs / 1000}s, then ` : ''}finishing requests in flight, then stopping…\n`);
      // Readiness first (/ready: 503 draining), then the pause that lets a load balancer see it, then the stop as before.
      server.drain(`the node got ${signal} and is stopping`);
      if (drainMs > 0) await new Promise((resolve) => setTimeout(resolve, drainMs));
      await server.close();
      io.stderr.write('pasarela stopped\n');
    });
}
