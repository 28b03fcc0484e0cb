import { createRequire } from 'node:module';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { SERVE_DEFAULTS } from './defaults.js';

/**
 * The API document as served, and the browsable page over it
 * (docs/decisions.md, "The API document").
 *
 * The document is built once from the route schemas (@fastify/swagger). The
 * committed openapi.json names its server with variables (`scheme`, `host`),
 * since no one server is the right one; a served copy names the server the
 * client is talking to instead, from the request (the Host header, or with
 * `serve --trust-proxy` X-Forwarded-Host and X-Forwarded-Proto).
 */

/** Where the committed document says the API is: any pasarela, by default a local one. */
export const TEMPLATE_SERVERS = [
  {
    url: '{scheme}://{host}',
    description: 'a pasarela server (pasarela serve); a copy fetched from a server names that server instead',
    variables: {
      scheme: { enum: ['http', 'https'], default: 'http' },
      host: { default: `${SERVE_DEFAULTS.host}:${SERVE_DEFAULTS.port}`, description: 'host and port the server listens on (serve --host, --port) or its public name' },
    },
  },
];

/** A host as a URL may carry it: a name, IPv4 or bracketed IPv6, and a port. Anything else is not echoed. */
const HOST_RE = /^(?:[A-Za-z0-9](?:[A-Za-z0-9.-]{0,252})|\[[0-9A-Fa-f:.]{2,45}\])(?::[0-9]{1,5})?$/;

/** The server this request reached, as the client sees it; `/` (this origin) when the request does not say. */
export function serverOf(req: FastifyRequest): { url: string; description: string } {
  const host = req.host;
  const scheme = req.protocol === 'https' ? 'https' : 'http';
  if (typeof host === 'string' && HOST_RE.test(host)) return { url: `${scheme}://${host}`, description: 'this server' };
  return { url: '/', description: 'this server' };
}

/** The document with `servers` naming the server the request reached; the built document is left as it is. */
export function servedDocument(doc: Record<string, unknown>, req: FastifyRequest): Record<string, unknown> {
  return { ...doc, servers: [serverOf(req)] };
}

/**
 * The Content-Security-Policy of the /docs pages: everything from this
 * origin, nothing from anywhere else. Swagger UI's scripts and styles are
 * files under /docs/static (no inline script); its icons are data: URIs and
 * it sets style attributes, hence `data:` images and 'unsafe-inline' styles.
 * `connect-src 'self'` is what "Try it out" and the document fetch need.
 */
export const DOCS_CSP = [
  "default-src 'none'",
  "base-uri 'none'",
  "connect-src 'self'",
  "font-src 'self' data:",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "img-src 'self' data:",
  "script-src 'self'",
  "script-src-attr 'none'",
  "style-src 'self' 'unsafe-inline'",
].join('; ');

/**
 * `/docs`: Swagger UI from the files bundled in @fastify/swagger-ui, over the
 * served document (`/docs/json`, the same as `/openapi.json`). No credential,
 * no CDN, no validator: the page works offline and tells no third party it
 * was opened. A key typed into "Authorize" stays in the page (not persisted).
 */
export async function registerDocs(app: FastifyInstance): Promise<void> {
  let swaggerUi: typeof import('@fastify/swagger-ui').default;
  try {
    // Its @fastify/static (loaded only when the plugin registers) is loaded here first, where a failure can be caught.
    const require = createRequire(import.meta.url);
    createRequire(require.resolve('@fastify/swagger-ui'))('@fastify/static');
    ({ default: swaggerUi } = await import('@fastify/swagger-ui'));
  } catch (err) {
    // @fastify/static loads an ES module with require(): Node 20.19 or later. The API does not depend on the page.
    app.log.warn({ err }, 'the /docs page is not available on this Node.js (it needs 20.19 or later); /openapi.json is served');
    return;
  }
  // A scope of its own: these headers go on every /docs answer (the static files too) and nowhere else.
  await app.register(async (scope) => {
    scope.addHook('onRequest', async (_req, reply) => {
      reply.header('x-content-type-options', 'nosniff');
      reply.header('referrer-policy', 'no-referrer');
    });
    await scope.register(swaggerUi, {
      routePrefix: '/docs',
      // No call to validator.swagger.io (the page would tell it where the document is).
      validatorUrl: false,
      staticCSP: DOCS_CSP,
      theme: { title: 'pasarela API' },
      // No top bar: it carries another project's logo and a box to load any other document.
      uiConfig: { layout: 'BaseLayout', deepLinking: true, persistAuthorization: false, displayOperationId: true },
      transformSpecificationClone: false,
      transformSpecification: (doc, req) => servedDocument(doc as Record<string, unknown>, req),
    });
  });
}
