import { createRequire } from 'node:module';
import type { FastifyInstance } from 'fastify';
import { SERVE_DEFAULTS } from './config.js';

/**
 * The API document as served, and the browsable page over it
 * (docs/decisions.md D-23).
 *
 * The document is built once from the route schemas (@fastify/swagger). The
 * committed openapi.json names its server with variables (`scheme`, `host`),
 * since no one server is the right one; a served copy names this server:
 * `serve --public-url` when it is set, else `/` (relative: the origin the
 * document was fetched from). Never the request's Host or X-Forwarded-Host:
 * a cache that does not key on Host would hand another client's made-up
 * server to everyone, and Swagger UI sends the keys typed into it there.
 */

/** Where the committed document says the API is: any pasarela, by default a local one. */
export const TEMPLATE_SERVERS = [
  {
    url: '{scheme}://{host}',
    description: 'a pasarela server (pasarela serve); a copy fetched from a server names that server instead',
    variables: {
      scheme: { enum: ['http', 'https'], default: 'http' },
      host: {
        default: `${SERVE_DEFAULTS.host}:${SERVE_DEFAULTS.port}`,
        description: 'host and port the server listens on (serve --host, --port) or its public name',
      },
    },
  },
];

/** The server a served document names: the configured public URL, or `/` (the origin the document came from). */
export function serverOf(publicUrl: string | undefined): { url: string; description: string } {
  return { url: publicUrl ?? '/', description: 'this server' };
}

/** The document with `servers` naming this server; the built document is left as it is. */
export function servedDocument<T extends object>(doc: T, publicUrl: string | undefined): T & { servers: Array<{ url: string; description: string }> } {
  return { ...doc, servers: [serverOf(publicUrl)] };
}

/** How many served copies (a format and a server URL each) are kept. */
export const SERVED_CACHE_MAX = 16;

/** Stands for the server URL in the document serialised once; never a real URL (no `:` or `/`). */
const URL_MARK = 'pasarela-served-server-url-1b7e5c';

export type DocFormat = 'json' | 'yaml';
type Stringify = (value: unknown) => string;

/**
 * The served document's bytes: `servedDocument` serialised, without
 * serialising the whole (about 260 KB) document per request. Each format is
 * serialised once, with a mark where the server URL goes; a copy for a URL
 * is the two halves around the URL, and the last SERVED_CACHE_MAX copies are
 * kept (least recently used out), so a client asking again gets the same
 * bytes. A server names one URL (serverOf), so it keeps one copy a format;
 * the bound stays should that ever vary.
 */
export class ServedDocuments {
  private readonly halves = new Map<DocFormat, [string, string]>();
  private readonly copies = new Map<string, Buffer>();
  private yamlStringify: Stringify | undefined;

  /** `doc` is the built document, asked for once per format (after the app is ready). */
  constructor(
    private readonly doc: () => object,
    private readonly max = SERVED_CACHE_MAX,
  ) {}

  /** The YAML serialiser (the one @fastify/swagger-ui uses); without it only JSON is served. */
  setYaml(stringify: Stringify): void {
    this.yamlStringify = stringify;
  }

  /** How many copies are kept (at most SERVED_CACHE_MAX). */
  get size(): number {
    return this.copies.size;
  }

  /** The document naming `serverUrl`, in `format`, as bytes. */
  bytes(format: DocFormat, serverUrl: string): Buffer {
    const key = `${format} ${serverUrl}`;
    let copy = this.copies.get(key);
    if (copy) {
      // Most recently used goes last.
      this.copies.delete(key);
    } else {
      const [before, after] = this.halvesOf(format);
      copy = Buffer.from(before + this.scalar(format, serverUrl) + after, 'utf8');
      if (this.copies.size >= this.max) this.copies.delete(this.copies.keys().next().value!);
    }
    this.copies.set(key, copy);
    return copy;
  }

  private stringify(format: DocFormat): Stringify {
    if (format === 'json') return JSON.stringify;
    if (!this.yamlStringify) throw new Error('no YAML serialiser');
    return this.yamlStringify;
  }

  /** The URL as the serialiser writes it in that place (a JSON string; a YAML scalar, plain or quoted as yaml decides). */
  private scalar(format: DocFormat, url: string): string {
    return this.stringify(format)(url).replace(/\n$/, '');
  }

  private halvesOf(format: DocFormat): [string, string] {
    let h = this.halves.get(format);
    if (!h) {
      const text = this.stringify(format)({ ...this.doc(), servers: [{ url: URL_MARK, description: 'this server' }] });
      const mark = this.scalar(format, URL_MARK);
      const parts = text.split(mark);
      if (parts.length !== 2) throw new Error(`the served document's server mark is found ${parts.length - 1} times`);
      h = [parts[0]!, parts[1]!];
      this.halves.set(format, h);
    }
    return h;
  }
}

/** Content types of the served document, as they were when Fastify serialised it. */
export const DOC_CONTENT_TYPE: Record<DocFormat, string> = {
  json: 'application/json; charset=utf-8',
  yaml: 'application/x-yaml; charset=utf-8',
};

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
/** The plugin's routes answered from the cache, and in what format. */
const DOC_ROUTES: Record<string, DocFormat | undefined> = { '/docs/json': 'json', '/docs/yaml': 'yaml' };

export async function registerDocs(app: FastifyInstance, served: ServedDocuments, publicUrl: string | undefined): Promise<void> {
  let swaggerUi: typeof import('@fastify/swagger-ui').default;
  try {
    // Its @fastify/static (loaded only when the plugin registers) is loaded here first, where a failure can be caught.
    const require = createRequire(import.meta.url);
    const uiRequire = createRequire(require.resolve('@fastify/swagger-ui'));
    uiRequire('@fastify/static');
    // /docs/yaml is written by the plugin's own YAML library (not a dependency of pasarela's).
    served.setYaml((uiRequire('yaml') as { stringify: Stringify }).stringify);
    ({ default: swaggerUi } = await import('@fastify/swagger-ui'));
  } catch (err) {
    // @fastify/static loads an ES module with require(): Node 20.19 or later. The API does not depend on the page.
    app.log.warn({ err }, 'the /docs page is not available on this Node.js (it needs 20.19 or later); /openapi.json is served');
    return;
  }
  // A scope of its own: these headers go on every /docs answer (the static files too) and nowhere else.
  await app.register(async (scope) => {
    scope.addHook('onRequest', async (req, reply) => {
      reply.header('x-content-type-options', 'nosniff');
      reply.header('referrer-policy', 'no-referrer');
      // The plugin redirects its index.html to the page by rewriting the URL's end, so with a query
      // (`?url=x`) to itself, for ever: one redirect to the page, the query dropped (Swagger UI reads none).
      if (req.routeOptions.url === '/docs/static/index.html') return reply.redirect('/docs/');
      // The document, in JSON and YAML, from the cache: the plugin's handlers would serialise all of it per request.
      const format = DOC_ROUTES[req.routeOptions.url ?? ''];
      if (format) return reply.type(DOC_CONTENT_TYPE[format]).send(served.bytes(format, serverOf(publicUrl).url));
    });
    await scope.register(swaggerUi, {
      routePrefix: '/docs',
      // No call to validator.swagger.io (the page would tell it where the document is).
      validatorUrl: false,
      staticCSP: DOCS_CSP,
      theme: { title: 'pasarela API' },
      // No top bar: it carries another project's logo and a box to load any other document.
      uiConfig: { layout: 'BaseLayout', deepLinking: true, persistAuthorization: false, displayOperationId: true },
      // Never called: the onRequest hook above answers /docs/json and /docs/yaml. Should it be, it is right, only slower.
      transformSpecificationClone: false,
      transformSpecification: (doc) => servedDocument(doc, publicUrl),
    });
  });
}
