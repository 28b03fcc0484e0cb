import { STATUS_CODES } from 'node:http';
import swagger from '@fastify/swagger';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyServerOptions } from 'fastify';
import type { Core } from '../core/context.js';
import { AppError, errorBody } from '../core/api/errors.js';
import { EXIT_TABLE } from '../shared/exit-codes.js';
import { VERSION } from '../version.js';
import { installErrorHandling, toAppError } from './errors.js';
import { DOC_CONTENT_TYPE, registerDocs, ServedDocuments, serverOf, TEMPLATE_SERVERS } from './docs.js';
import accountRoutes from './routes/account.js';
import adminRoutes from './routes/admin.js';
import adminGatewayRoutes from './routes/admin-gateways.js';
import adminBackupRoutes from './routes/admin-backup.js';
import adminEstadisticasRoutes from './routes/admin-estadisticas.js';
import celularRoutes from './routes/celulares.js';
import celularSessionRoutes from './routes/celular-session.js';
import grupoRoutes from './routes/grupos.js';
import engineCallRoutes, { type EngineHost } from './routes/motor-interno.js';
import healthRoutes from './routes/health.js';
import simRoutes from './routes/sim.js';
import sendRoutes from './routes/send.js';
import colaRoutes from './routes/cola.js';
import type { SendDeps } from '../core/sending/send.js';
import type { WebhookControl } from '../webhooks/dispatcher.js';
import type { LineHealth } from '../core/accounts/line-health.js';
import type { NodePresence } from '../core/nodes/node-presence.js';
import gatewayInboundRoutes from './routes/gateway-inbound.js';
import webhookRoutes from './routes/webhook.js';
import eventosRoutes from './routes/eventos.js';
import panel from './panel/index.js';
import { EventStreams, STREAM_TIMING, type StreamTiming } from '../core/events/event-stream-pump.js';
import { procSendQueues } from './send-queues.js';
import { sharedSchemas } from './schemas/common.js';
import { safeIntegers } from './schemas/safe-integers.js';
import { installBodyGuards } from './body/body-guard.js';
import { installTextParsers } from './body/text-parsers.js';
import { checkTimeoutsWhileConnected } from './body/timeout-checks.js';
import { SERVE_DEFAULTS, type RequestLimits } from './config.js';
import type { TrustProxy } from './config-knobs.js';
import { installRequestIds, maskUrl, OneLineRequestLog, refusedRequestId, requestIdOf, unroutedReply } from './request-log.js';
import type { Metrics } from './metrics/metrics.js';
import { installMetrics } from './metrics/routes.js';

/** How often node checks the header and request timeouts of open connections. */
const TIMEOUT_CHECK_MS = 1000;

export interface AppOptions {
  core: Core;
  /** Fastify logger options; false in tests that do not look at logs. */
  logger?: FastifyServerOptions['logger'];
  /** A logger made before the app (`serve` logs from its first part on): instead of `logger`. */
  loggerInstance?: FastifyBaseLogger;
  /** `serve --trust-proxy`: hops or proxy addresses (config-knobs.ts); false: the socket's address. */
  trustProxy?: TrustProxy;
  /** The temp-file store and the queue worker's wake-up; sends need them. */
  send: SendDeps;
  webhooks: WebhookControl;
  /** The line health check, reported by /health. */
  health?: LineHealth;
  /** Timeouts and unauthenticated-body bounds; SERVE_DEFAULTS' by default (config.ts). */
  limits?: RequestLimits;
  /** This node among the store's: /health counts the present ones (core/nodes/node-presence.ts). */
  node?: Pick<NodePresence, 'presentNodes'>;
  /** Prometheus metrics: every response timed, and GET /metrics for the operator (src/server/metrics/). */
  metrics?: Metrics;
  /** `serve --public-url`: the server the API document names (docs.ts); `/` without it. */
  publicUrl?: string;
  /** The event streams' timing (core/events/event-stream-pump.ts); tests shorten it. */
  streamTiming?: Partial<StreamTiming>;
  /** `--gateway baileys`: the calls other nodes hand this one for the lines it holds (routes/motor-interno.ts). */
  engine?: EngineHost;
}

/** Paths into logged objects that may hold a secret; pino replaces their values. */
export const REDACT_PATHS = [
  'req.headers.authorization',
  'headers.authorization',
  '*.key',
  '*.token',
  '*.secret',
  '*.api_key',
  '*.gateway_token',
  '*.token_legacy',
  'body',
  '*.body',
];

export function loggerOptions(level: string, stream?: NodeJS.WritableStream): Exclude<FastifyServerOptions['logger'], boolean | undefined> {
  return {
    level,
    ...(stream ? { stream } : {}),
    redact: { paths: REDACT_PATHS, censor: '[REDACTED]' },
    serializers: {
      req: (req: { method: string; url: string; ip?: string; socket?: { remoteAddress?: string } }) => ({
        method: req.method,
        url: maskUrl(req.url),
        remoteAddress: req.ip ?? req.socket?.remoteAddress,
      }),
    },
  };
}

/**
 * Fastify's `trustProxy` for `serve --trust-proxy`: addresses go to Fastify
 * (proxy-addr) as they are; a hop count becomes a function, since Fastify
 * reads a bare number as "trust nothing". Either way the client is the
 * right-most X-Forwarded-For address not trusted: the left end, which the
 * client writes, never counts.
 */
export function fastifyTrustProxy(tp: TrustProxy | undefined): false | string[] | ((address: string, hop: number) => boolean) {
  if (tp === undefined || tp === false) return false;
  if (typeof tp === 'number') return (_address, hop) => hop < tp;
  return tp;
}

/** Builds the whole HTTP service around a core. Never listens: `serve` does, tests may. */
export async function buildApp(opts: AppOptions): Promise<FastifyInstance> {
  const { core } = opts;
  const limits = opts.limits ?? SERVE_DEFAULTS.limits;
  const app = Fastify({
    ...(opts.loggerInstance ? { loggerInstance: opts.loggerInstance } : { logger: opts.logger ?? false }),
    trustProxy: fastifyTrustProxy(opts.trustProxy),
    // X-Request-Id when sane, else a new id (request-log.ts); one log line per request.
    genReqId: requestIdOf,
    logController: new OneLineRequestLog(),
    bodyLimit: 1024 * 1024,
    // Query strings are parsed once, strictly, by the onRequest hook of body/text-parsers.ts
    // (a parser here runs inside routing, where a refusal could not become a 400).
    routerOptions: { querystringParser: () => ({}) },
    return503OnClosing: false,
    // Node's own timers: headers, and the whole request as a backstop a little after
    // the body guard's (which answers in our JSON). Checked every second, not every 30,
    // while a connection is open (below). Node refuses a header timeout longer than the request timeout.
    http: { headersTimeout: Math.min(limits.headerTimeoutMs, limits.requestTimeoutMs + 5000), connectionsCheckingInterval: TIMEOUT_CHECK_MS },
    requestTimeout: limits.requestTimeoutMs + 5000,
    // A timeout or malformed request before any route: our JSON shape, then the connection closes.
    clientErrorHandler: (err: NodeJS.ErrnoException, socket) => {
      if (err.code === 'ECONNRESET' || socket.destroyed) return;
      const e =
        err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
          ? new AppError('REQUEST_TIMEOUT', 'the request did not arrive in time')
          : err.code === 'HPE_HEADER_OVERFLOW'
            ? new AppError('HEADERS_TOO_LARGE', 'the request headers are too large')
            : new AppError('MALFORMED_BODY', 'the request could not be parsed');
      const reqId = refusedRequestId(app.log, socket, err.code, e.status);
      if (socket.writable) {
        const body = JSON.stringify(errorBody(e));
        socket.write(
          `HTTP/1.1 ${e.status} ${STATUS_CODES[e.status] ?? ''}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nContent-Type: application/json; charset=utf-8\r\nX-Request-Id: ${reqId}\r\nConnection: close\r\n\r\n${body}`,
        );
      }
      socket.destroy(err);
    },
    // A malformed URL (bad percent-escape) never reaches a route; answer it in our shape too.
    frameworkErrors: (err, req, reply) => {
      const e = toAppError(err);
      void unroutedReply(req, reply).code(e.status).send(errorBody(e));
    },
    ajv: {
      // verbose: an error carries its schema and value, so a refused query field is told in words (errors.ts).
      customOptions: { removeAdditional: false, coerceTypes: 'array', useDefaults: true, allErrors: false, allowUnionTypes: true, verbose: true },
      // A coerced "Infinity" or "1e999" never passes an integer field (schemas/safe-integers.ts).
      plugins: [safeIntegers],
    },
  });
  // An idle node is not woken every second for connections it does not have (D-190).
  app.server.once('listening', () => checkTimeoutsWhileConnected(app.server, TIMEOUT_CHECK_MS));
  app.removeContentTypeParser('text/plain');
  installRequestIds(app);
  installBodyGuards(app, limits, core.clock);
  let closing = false;
  let drainingReason: string | null = null;
  app.addHook('onRequest', async (_req, reply) => {
    if (closing) {
      reply.header('Connection', 'close');
      throw new AppError('SHUTTING_DOWN', 'the server is stopping', { retryAfter: 5 });
    }
  });

  installErrorHandling(app);
  installTextParsers(app);
  for (const s of sharedSchemas) app.addSchema(s);
  if (opts.metrics) installMetrics(app, core, opts.metrics);
  await app.register(swagger, {
    openapi: {
      openapi: '3.0.3',
      info: {
        title: 'pasarela',
        version: VERSION,
        description:
          'Self-hosted messaging gateway. Every success body carries ok:true plus api_codigo/api_texto/api_descripcion/saldo; every error body ok:false, error and the same fields (see the api_codigo table in docs/api-codigo.md). ' +
          'The x-cli-exit-codes field of this object lists the exit codes of the pasarela command line, which maps these answers (HTTP status and api_codigo) onto them.',
        // The CLI's table (src/cli/exit-codes.ts, constants only), an OpenAPI extension the swagger types do not list.
        ...{ 'x-cli-exit-codes': Object.fromEntries(EXIT_TABLE.map((e) => [String(e.code), e.meaning])) },
      },
      // The committed document's; a served copy names the server it came from (docs.ts).
      servers: TEMPLATE_SERVERS,
      components: {
        securitySchemes: {
          bearer: { type: 'http', scheme: 'bearer', description: 'client key WAC_..., celular key WA_..., gateway token or legacy token' },
          operator: { type: 'http', scheme: 'bearer', description: 'operator token (PASARELA_ADMIN_TOKEN or <data-dir>/admin-token)' },
        },
      },
    },
    refResolver: { buildLocalReference: (json, _base, _frag, i) => (typeof json.$id === 'string' ? json.$id : `def-${i}`) },
  });

  await app.register(healthRoutes, { core, health: opts.health, node: opts.node, draining: () => drainingReason });
  await app.register(gatewayInboundRoutes, { core });
  await app.register(accountRoutes, { core });
  await app.register(celularRoutes, { core });
  await app.register(celularSessionRoutes, { core });
  await app.register(grupoRoutes, { core });
  if (opts.engine) await app.register(engineCallRoutes, opts.engine);
  await app.register(sendRoutes, { core, deps: opts.send });
  await app.register(colaRoutes, { core, deps: opts.send });
  await app.register(webhookRoutes, { core, dispatcher: opts.webhooks });
  await app.register(import('./routes/historial.js'), { core });
  // Ended at the halt (clients resume on another node) and at any close: an open stream would hold the close.
  const streams = new EventStreams(core, { ...STREAM_TIMING, ...opts.streamTiming }, procSendQueues());
  app.decorate('eventStreams', streams);
  app.addHook('preClose', (done) => {
    streams.closeAll();
    done();
  });
  await app.register(eventosRoutes, { core, streams });
  await app.register(import('./routes/recibidos.js'), { core });
  await app.register(import('./routes/movimientos.js'), { core });
  await app.register(async (admin) => {
    await admin.register(adminRoutes, { core });
    await admin.register(adminGatewayRoutes, { core });
    await admin.register(simRoutes, { core });
    await admin.register(adminBackupRoutes, { core, tmpDir: opts.send.tmp.dir });
    await admin.register(adminEstadisticasRoutes, { core });
  });

  await app.register(panel, { prefix: '/panel', core, send: opts.send, webhooks: opts.webhooks, streams });

  // The served document, serialised once per format and kept per server URL (docs.ts).
  const served = new ServedDocuments(() => ({ ...app.swagger() }));
  app.get('/openapi.json', { schema: { hide: true } }, async (_req, reply) =>
    reply.type(DOC_CONTENT_TYPE.json).send(served.bytes('json', serverOf(opts.publicUrl).url)),
  );
  await registerDocs(app, served, opts.publicUrl);

  app.decorate('markClosing', () => {
    closing = true;
    streams.closeAll();
  });
  app.decorate('markDraining', (reason: string) => {
    drainingReason ??= reason;
  });
  return app;
}

declare module 'fastify' {
  interface FastifyInstance {
    /** Refuse new requests with 503 while a graceful stop lets the ones in flight finish. */
    markClosing(): void;
    /** Turn /ready to 503 (`draining`) for the rest of the process's life: the first step of a graceful stop. */
    markDraining(reason: string): void;
    /** This node's open event streams (`/api/eventos.php`). */
    eventStreams: EventStreams;
  }
}
