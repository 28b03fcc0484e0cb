import formbody from '@fastify/formbody';
import swagger from '@fastify/swagger';
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify';
import type { Core } from '../core/context.js';
import { AppError } from '../core/errors.js';
import { VERSION } from '../version.js';
import { installErrorHandling } from './errors.js';
import accountRoutes from './routes/account.js';
import adminRoutes from './routes/admin.js';
import celularRoutes from './routes/celulares.js';
import healthRoutes from './routes/health.js';
import simRoutes from './routes/sim.js';
import { sharedSchemas } from './schemas/common.js';

export interface AppOptions {
  core: Core;
  /** Fastify logger options; false in tests that do not look at logs. */
  logger?: FastifyServerOptions['logger'];
  trustProxy?: boolean;
}

/** Query parameters whose values are credentials; masked wherever a URL is logged. */
const SECRET_PARAMS = /([?&](?:key|token|secret|api_key)=)[^&#]*/gi;
export const maskUrl = (url: string) => url.replace(SECRET_PARAMS, '$1[REDACTED]');

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

/** Builds the whole HTTP service around a core. Never listens: `serve` does, tests may. */
export async function buildApp(opts: AppOptions): Promise<FastifyInstance> {
  const { core } = opts;
  const app = Fastify({
    logger: opts.logger ?? false,
    trustProxy: opts.trustProxy ?? false,
    bodyLimit: 1024 * 1024,
    return503OnClosing: false,
    ajv: { customOptions: { removeAdditional: false, coerceTypes: 'array', useDefaults: true, allErrors: false } },
  });
  let closing = false;
  app.addHook('onRequest', async (_req, reply) => {
    if (closing) {
      reply.header('Connection', 'close');
      throw new AppError('SHUTTING_DOWN', 'the server is stopping', { retryAfter: 5 });
    }
  });

  installErrorHandling(app);
  // Many clients POST `?id=N` with a JSON content type and no body; that is an
  // empty request, not malformed JSON. Everything else goes to Fastify's
  // parser, which also refuses prototype poisoning.
  const jsonParser = app.getDefaultJsonParser('error', 'error');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (req, body, done) => {
    if (typeof body === 'string' && body.trim() === '') return done(null, undefined);
    return jsonParser(req, body as string, done);
  });
  await app.register(formbody, { bodyLimit: 1024 * 1024 });
  for (const s of sharedSchemas) app.addSchema(s);
  await app.register(swagger, {
    openapi: {
      openapi: '3.0.3',
      info: {
        title: 'pasarela',
        version: VERSION,
        description:
          'Self-hosted messaging gateway. Every success body carries ok:true plus api_codigo/api_texto/api_descripcion/saldo; every error body ok:false, error and the same fields (see the api_codigo table in the README).',
      },
      components: {
        securitySchemes: {
          bearer: { type: 'http', scheme: 'bearer', description: 'client key WAC_..., celular key WA_..., gateway token or legacy token' },
          operator: { type: 'http', scheme: 'bearer', description: 'operator token (PASARELA_ADMIN_TOKEN or <data-dir>/admin-token)' },
        },
      },
    },
    refResolver: { buildLocalReference: (json, _base, _frag, i) => String(json.$id ?? `def-${i}`) },
  });

  await app.register(healthRoutes, { core });
  await app.register(accountRoutes, { core });
  await app.register(celularRoutes, { core });
  await app.register(async (admin) => {
    await admin.register(adminRoutes, { core });
    await admin.register(simRoutes, { core });
  });

  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());

  app.decorate('markClosing', () => {
    closing = true;
  });
  return app;
}

declare module 'fastify' {
  interface FastifyInstance {
    /** Refuse new requests with 503 while a graceful stop lets the ones in flight finish. */
    markClosing(): void;
  }
}
