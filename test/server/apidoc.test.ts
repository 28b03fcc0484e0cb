import { request as httpRequest } from 'node:http';
import { createRequire } from 'node:module';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ERRORS } from '../../src/core/api/errors.js';
import { toAppError } from '../../src/server/errors.js';
import { SERVED_CACHE_MAX, ServedDocuments } from '../../src/server/docs.js';
import { evolutionNetwork, type Network } from '../e2e/gateways-network.js';
import { openapiDocument } from '../../src/server/openapi.js';
import { expectError, numeroNuevo } from '../helpers/expect.js';
import { api, seedClient, startTestServer, type ApiResponse, type Seeded, type TestServer } from '../helpers/server.js';

/**
 * The API document and its page (docs/decisions.md D-23):
 * operationIds, servers, what is left out, /docs served from bundled files
 * only, and the WWW-Authenticate challenge of every 401. Over real HTTP.
 */

let s: TestServer;
let A: Seeded;
let legacy: string;

const METHODS = new Set(['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace']);
type Op = { path: string; method: string; op: Record<string, any> };
const operations = (doc: any): Op[] =>
  Object.entries(doc.paths as Record<string, Record<string, any>>).flatMap(([path, item]) =>
    Object.entries(item)
      .filter(([m]) => METHODS.has(m))
      .map(([method, op]) => ({ path, method, op })),
  );

beforeAll(async () => {
  // Refused credentials on purpose: keep the address throttle out of the way.
  s = await startTestServer({ authMaxFailures: 100_000 });
  A = await seedClient(s, { numero: numeroNuevo() });
  legacy = `legacy-${A.celularId}-abcdefghijklmnop`;
  const l = await api(s.url, 'POST', `/admin/celulares/${A.celularId}/token-legacy`, { key: s.adminToken, json: { token: legacy } });
  expect(l.status, l.text).toBe(200);
});
afterAll(async () => {
  await s?.stop();
});

describe('the document', () => {
  let doc: any;
  beforeAll(async () => {
    const r = await api(s.url, 'GET', '/openapi.json');
    expect(r.status).toBe(200);
    doc = r.body;
  });

  it('gives every operation a unique, camelCase operationId', () => {
    const ops = operations(doc);
    expect(ops.length).toBeGreaterThan(50);
    const missing = ops.filter((o) => typeof o.op.operationId !== 'string' || o.op.operationId === '').map((o) => `${o.method.toUpperCase()} ${o.path}`);
    expect(missing, 'operations without an operationId (add one to the route schema, or hide: true for an internal route)').toEqual([]);
    const ids = ops.map((o) => o.op.operationId as string);
    const repeated = ids.filter((id, i) => ids.indexOf(id) !== i);
    expect(repeated, 'operationIds used twice').toEqual([]);
    for (const id of ids) expect(id).toMatch(/^[a-z][A-Za-z0-9]*$/);
  });

  it('names the operations as documented (a rename breaks generated SDKs)', () => {
    const id = (path: string, method: string) => doc.paths[path][method].operationId;
    expect(id('/api/mensaje_enviar_texto.php', 'post')).toBe('enviarTexto');
    expect(id('/api/mensaje_enviar_imagen_base64.php', 'post')).toBe('enviarImagenBase64');
    expect(id('/api/historial_listar.php', 'get')).toBe('listarHistorial');
    expect(id('/admin/clientes', 'post')).toBe('adminCrearCliente');
    expect(id('/api/celular_crear.php', 'post')).toBe('crearCelular');
  });

  it('gives an alias path its own operationId and names the operation it is an alias of', () => {
    const ops = operations(doc);
    const ids = new Set(ops.map((o) => o.op.operationId));
    const aliases = ops.filter((o) => o.op['x-alias-of'] !== undefined);
    expect(aliases.map((o) => `${o.method} ${o.path}`).sort()).toEqual(
      [
        'post /api/celular-crear.php',
        'post /api/admin-celular-crear.php',
        'post /api/celular-vincular-qr.php',
        'post /api/celular-vincular-codigo.php',
        'post /api/api-legacy.php',
        'post /api/webhook_escuchas_eliminar.php',
        'post /admin/clientes/{id}',
      ].sort(),
    );
    for (const a of aliases) {
      expect(ids.has(a.op['x-alias-of']), a.path).toBe(true);
      expect(a.op.operationId).toMatch(new RegExp(`^${a.op['x-alias-of']}Alias[A-Z]`));
    }
  });

  it('leaves out the gateway callback, /openapi.json and /docs', () => {
    const paths = Object.keys(doc.paths);
    expect(paths.filter((p) => p.startsWith('/gateway/') || p.includes('/gateway/'))).toEqual([]);
    expect(paths.filter((p) => p === '/openapi.json' || p.startsWith('/docs'))).toEqual([]);
    expect(JSON.stringify(doc)).not.toContain('/gateway/{gateway}');
  });

  it('served without --public-url, names its server "/": wherever the document was fetched from', () => {
    expect(doc.servers).toEqual([{ url: '/', description: 'this server' }]);
  });

  it('committed, names any server with variables defaulting to a local one', async () => {
    const committed = await openapiDocument();
    expect(committed.servers).toEqual([
      expect.objectContaining({
        url: '{scheme}://{host}',
        variables: { scheme: { enum: ['http', 'https'], default: 'http' }, host: expect.objectContaining({ default: '127.0.0.1:8080' }) },
      }),
    ]);
  });

  it('is the committed document apart from servers: nothing of this deployment (token, data directory) is in it', async () => {
    const { servers: _a, ...served } = doc;
    const { servers: _b, ...committed } = await openapiDocument();
    expect(served).toEqual(committed);
    const text = JSON.stringify(doc);
    expect(text).not.toContain(s.adminToken);
    expect(text).not.toContain(s.dataDir);
  });

  it('echoes no Host (N15): any Host, X-Forwarded-Host or -Proto, the server is "/"', async () => {
    const cases: Array<Record<string, string>> = [
      { host: 'evil.example:443' },
      { host: 'a"b<script>' },
      { 'x-forwarded-host': 'api.example.com', 'x-forwarded-proto': 'https' },
    ];
    for (const headers of cases) {
      for (const path of ['/openapi.json', '/docs/json']) {
        const r = await rawGet(path, headers);
        expect(r.status, path).toBe(200);
        expect(r.body.servers, `${path} ${JSON.stringify(headers)}`).toEqual([{ url: '/', description: 'this server' }]);
      }
    }
  });
});

describe('the document with --public-url', () => {
  let p: TestServer;
  beforeAll(async () => {
    // Behind a proxy too: what the proxy forwards is still not the server named.
    p = await startTestServer({ trustProxy: 1, publicUrl: 'https://api.example.com/pasarela' });
  });
  afterAll(async () => {
    await p?.stop();
  });

  it('names the public URL, whatever Host or X-Forwarded-Host, in /openapi.json, /docs/json and /docs/yaml', async () => {
    const cases: Array<Record<string, string>> = [{}, { host: 'evil.example:443' }, { 'x-forwarded-host': 'evil.example', 'x-forwarded-proto': 'http' }];
    for (const headers of cases) {
      for (const path of ['/openapi.json', '/docs/json']) {
        const r = await rawGet(path, headers, p.url);
        expect(r.body.servers, path).toEqual([{ url: 'https://api.example.com/pasarela', description: 'this server' }]);
      }
      const y = await rawGet('/docs/yaml', headers, p.url);
      expect(y.text).toContain('url: https://api.example.com/pasarela\n');
      expect(y.text).not.toContain('evil');
    }
  });
});

/** The attributes of a page that load something: src and href. */
const references = (html: string) => [...html.matchAll(/\s(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);
const EXPECTED_TYPE: Record<string, RegExp> = {
  css: /^text\/css/,
  js: /^(application|text)\/javascript/,
  png: /^image\/png$/,
};
/** http(s) URLs in a script, leaving out those in `//` line comments (never fetched). */
const urlsInScript = (js: string) =>
  js
    .split('\n')
    .filter((line) => !/^\s*\/\//.test(line))
    .flatMap((line) => [...line.matchAll(/https?:\/\/[^\s'"`)]+/g)].map((m) => m[0]));

describe('/docs', () => {
  let page: Response;
  let html: string;
  beforeAll(async () => {
    page = await fetch(`${s.url}/docs`); // redirects followed
    html = await page.text();
  });

  it('is an HTML page, without a credential', () => {
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    expect(html).toContain('<div id="swagger-ui">');
    expect(html).toContain('<title>pasarela API</title>');
    expect(page.headers.get('www-authenticate')).toBeNull();
  });

  it('/docs/static/index.html redirects once to the page, with or without a query (N14: never to itself)', async () => {
    for (const path of ['/docs/static/index.html', '/docs/static/index.html?url=x', '/docs/static/index.html?url=https://evil.example/x.json&a=b']) {
      const r = await fetch(`${s.url}${path}`, { redirect: 'manual' });
      expect(r.status, path).toBe(302);
      expect(r.headers.get('location'), path).toBe('/docs/');
      const followed = await fetch(`${s.url}${path}`);
      expect(followed.status, path).toBe(200);
      expect(await followed.text()).toContain('<div id="swagger-ui">');
    }
  });

  it('has a Content-Security-Policy that allows this origin only, and nosniff', () => {
    const csp = page.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("connect-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toMatch(/https?:|\*/);
    expect(page.headers.get('x-content-type-options')).toBe('nosniff');
  });

  it('names no other site: every script, style and icon is a file of this server', () => {
    expect(html).not.toMatch(/https?:\/\//);
    const refs = references(html);
    expect(refs.length).toBeGreaterThanOrEqual(5);
    for (const ref of refs) expect(new URL(ref, page.url).origin, ref).toBe(new URL(s.url).origin);
  });

  it('serves each file it refers to, by GET and HEAD, with its type', async () => {
    const refs = references(html);
    for (const kind of ['css', 'js', 'png'])
      expect(
        refs.some((r) => r.endsWith(`.${kind}`)),
        kind,
      ).toBe(true);
    for (const ref of refs) {
      const url = new URL(ref, page.url).href;
      const kind = url.split('.').pop()!;
      const get = await fetch(url);
      const body = Buffer.from(await get.arrayBuffer());
      expect(get.status, url).toBe(200);
      expect(get.headers.get('content-type'), url).toMatch(EXPECTED_TYPE[kind]!);
      expect(body.length, url).toBeGreaterThan(0);
      const head = await fetch(url, { method: 'HEAD' });
      expect(head.status, `HEAD ${url}`).toBe(200);
      expect(head.headers.get('content-type'), `HEAD ${url}`).toBe(get.headers.get('content-type'));
      expect((await head.arrayBuffer()).byteLength, `HEAD ${url}`).toBe(0);
    }
  });

  it('configures Swagger UI with no validator and no URL of another site, fetching ./json', async () => {
    const init = await (await fetch(`${s.url}/docs/static/swagger-initializer.js`)).text();
    expect(init).toContain('validatorUrl: null');
    expect(init).toContain("resolveUrl('./json')");
    expect(urlsInScript(init).filter((u) => !u.startsWith(s.url))).toEqual([]);
  });

  it('shows the same document as /openapi.json', async () => {
    const viaDocs = await api(s.url, 'GET', '/docs/json');
    const direct = await api(s.url, 'GET', '/openapi.json');
    expect(viaDocs.status).toBe(200);
    expect(viaDocs.headers.get('content-type')).toMatch(/^application\/json/);
    expect(viaDocs.body).toEqual(direct.body);
  });

  it('answers /docs/ the same page, and an unknown file with the usual 404', async () => {
    const slash = await fetch(`${s.url}/docs/`);
    expect(slash.status).toBe(200);
    expect(await slash.text()).toContain('<div id="swagger-ui">');
    const missing = await api(s.url, 'GET', '/docs/static/nothing-here.js');
    expectError(missing, 404, 104);
  });

  it('answers a path out of the static files (.., a NUL byte) 404 in the error shape, never a 500 or an error-level log line', async () => {
    for (const path of [
      '/docs/static/%00',
      '/docs/static/../../package.json',
      '/docs/static/a/../../x',
      '/docs/static/%2e%2e/%2e%2e/package.json',
      '/docs/static/..%2f..%2fpackage.json',
    ]) {
      const r = await rawGet(path);
      expectError(r, 404, 104);
      expect(Object.keys(r.body).sort(), path).toEqual(['api_codigo', 'api_descripcion', 'api_texto', 'error', 'ok', 'saldo']);
      expect(r.text, path).not.toContain('"name"');
      const lines = linesOf(s, r.headers.get('x-request-id')!);
      expect(lines.length, path).toBe(1);
      expect(lines[0]!.level, path).toBe(30);
      expect(lines[0]!.res.statusCode, path).toBe(404);
    }
  });

  it('answers a Range or a precondition a static file cannot meet 400, not 500', async () => {
    for (const headers of [{ range: 'bytes=99999999-' }, { 'if-match': '"nope"' }] as Record<string, string>[]) {
      const r = await rawGet('/docs/static/swagger-ui.css', headers);
      expectError(r, 400, 100);
      expect(linesOf(s, r.headers.get('x-request-id')!).map((l) => l.level)).toEqual([30]);
    }
  });
});

/** The log lines of one request, parsed. */
const linesOf = (t: TestServer, reqId: string) => t.logs.map((l) => JSON.parse(l) as Record<string, any>).filter((l) => l.reqId === reqId);

/** A GET with the path sent as is (no normalisation of `..`, as curl --path-as-is). */
function rawGet(path: string, headers: Record<string, string> = {}, base = s.url): Promise<ApiResponse> {
  const port = new URL(base).port;
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path, headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => {
        let body: unknown = text;
        try {
          body = JSON.parse(text);
        } catch {
          // not JSON: the body stays the text
        }
        resolve({ status: res.statusCode!, headers: new Headers(res.headers as Record<string, string>), body, text });
      });
    });
    req.on('error', reject);
    req.end();
  });
}

/** The YAML library @fastify/swagger-ui writes /docs/yaml with (what it answered before the cache). */
const yaml = createRequire(createRequire(import.meta.url).resolve('@fastify/swagger-ui'))('yaml') as { stringify: (v: unknown) => string };

describe('the served document, serialised once', () => {
  // The document as built (not parsed back from JSON): what is shared in it, YAML writes once with an anchor.
  let doc: Record<string, unknown>;
  beforeAll(async () => {
    doc = await openapiDocument();
  });
  const naming = (url: string) => ({ ...doc, servers: [{ url, description: 'this server' }] });

  it('/openapi.json and /docs/json: the document serialised whole, naming "/" whatever the Host', async () => {
    for (const host of [undefined, 'api.example.com', '[::1]:9', 'a"b']) {
      for (const path of ['/openapi.json', '/docs/json']) {
        const r = await rawGet(path, host ? { host } : {});
        expect(r.status, path).toBe(200);
        expect(r.headers.get('content-type'), path).toBe('application/json; charset=utf-8');
        expect(r.text, `${path} ${host}`).toBe(JSON.stringify(naming('/')));
      }
    }
  });

  it('/docs/yaml: the same YAML as serialising the served document whole, by GET and HEAD', async () => {
    for (const host of [undefined, '[::1]:9', 'x', 'a"b']) {
      const r = await rawGet('/docs/yaml', host ? { host } : {});
      expect(r.status).toBe(200);
      expect(r.headers.get('content-type')).toBe('application/x-yaml; charset=utf-8');
      expect(r.text, String(host)).toBe(yaml.stringify(naming('/')));
    }
    const head = await fetch(`${s.url}/docs/yaml`, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect((await head.arrayBuffer()).byteLength).toBe(0);
  });

  it('keeps at most SERVED_CACHE_MAX copies, least recently used out, serialising the document once per format', () => {
    let built = 0;
    const served = new ServedDocuments(() => {
      built++;
      return doc;
    });
    served.setYaml(yaml.stringify);
    const first = served.bytes('json', 'http://h0');
    expect(served.bytes('json', 'http://h0')).toBe(first); // the same bytes, not a copy
    // Three times the cap: every slot but h0's is evicted twice over.
    for (let i = 1; i < SERVED_CACHE_MAX * 3; i++) {
      const url = `http://h${i}`;
      expect(served.bytes(i % 2 ? 'json' : 'yaml', url).toString(), url).toBe(i % 2 ? JSON.stringify(naming(url)) : yaml.stringify(naming(url)));
      // h0 used again each time: never the least recently used, never evicted.
      expect(served.bytes('json', 'http://h0')).toBe(first);
      expect(served.size).toBeLessThanOrEqual(SERVED_CACHE_MAX);
    }
    expect(served.size).toBe(SERVED_CACHE_MAX);
    expect(built).toBe(2);
  });
});

describe("the gateway callback's 401", () => {
  let net: Network;
  let g: TestServer;
  beforeAll(async () => {
    net = await evolutionNetwork();
    g = await startTestServer({ ...net.serve, healthIntervalMs: 0 });
  });
  afterAll(async () => {
    await g?.stop();
    await net?.close();
  });

  it('carries no Bearer challenge: the callback authenticates with a per-instance secret, not a Bearer token', async () => {
    const path = '/gateway/evolution/pasarela-1';
    const body = { event: 'messages.upsert', instance: 'pasarela-1', data: {} };
    for (const headers of [{ 'x-pasarela-secret': 'f'.repeat(64) }, {}, { authorization: 'Bearer whatever-token-1234' }] as Record<string, string>[]) {
      const r = await api(g.url, 'POST', path, { json: body, headers });
      expectError(r, 401, 200);
      expect(r.headers.get('www-authenticate'), JSON.stringify(headers)).toBeNull();
    }
    // The rest of that server's API still challenges.
    expect((await api(g.url, 'GET', '/api/info.php')).headers.get('www-authenticate')).toBe(MISSING);
  });
});

describe('errors of Fastify and its plugins', () => {
  it('a 4xx a plugin raises about the request keeps a 4xx; anything else, whatever status it carries, is internal', () => {
    const fst = Object.assign(new Error('Forbidden'), { name: 'FastifyError', code: 'FST_STATIC_FORBIDDEN_PATH', statusCode: 403 });
    expect(toAppError(fst).row).toBe(ERRORS.ROUTE_NOT_FOUND);
    const httpError = Object.assign(new Error('Range Not Satisfiable'), { status: 416, statusCode: 416, expose: true });
    expect(toAppError(httpError).row).toBe(ERRORS.INVALID_PARAMS);
    // Not the client's fault: a plain error, a 5xx, a library's error that happens to carry a 404.
    expect(toAppError(new Error('boom')).row).toBe(ERRORS.INTERNAL);
    expect(toAppError(Object.assign(new Error('x'), { code: 'FST_SOMETHING', statusCode: 500 })).row).toBe(ERRORS.INTERNAL);
    expect(toAppError(Object.assign(new Error('upstream said 404'), { statusCode: 404 })).row).toBe(ERRORS.INTERNAL);
    expect(toAppError(Object.assign(new Error('hidden'), { statusCode: 403, expose: false })).row).toBe(ERRORS.INTERNAL);
  });
});

/** The challenge of a 401 with no credential, and of one with a credential refused. */
const MISSING = 'Bearer realm="pasarela"';
const INVALID = 'Bearer realm="pasarela", error="invalid_token"';

function expect401(r: ApiResponse, challenge: string): void {
  expectError(r, 401, 200);
  expect(r.headers.get('www-authenticate'), r.text).toBe(challenge);
  // The body is the usual error shape, nothing added.
  expect(Object.keys(r.body).sort()).toEqual(['api_codigo', 'api_descripcion', 'api_texto', 'error', 'ok', 'saldo']);
}

describe('WWW-Authenticate on 401', () => {
  const wrongClient = () => `WAC_${A.clienteId}_${'x'.repeat(43)}`;
  const wrongCelular = () => `WA_${A.celularId}_${'x'.repeat(43)}`;

  it('client key: none (Bearer realm), a wrong one (invalid_token)', async () => {
    expect401(await api(s.url, 'GET', '/api/info.php'), MISSING);
    expect401(await api(s.url, 'GET', '/api/info.php', { key: wrongClient() }), INVALID);
  });

  it('celular key: a wrong one as Bearer, in the query and in the body', async () => {
    expect401(await api(s.url, 'GET', `/api/celular.php?id=${A.celularId}`, { key: wrongCelular() }), INVALID);
    expect401(await api(s.url, 'GET', `/api/saldo.php?key=${encodeURIComponent(wrongCelular())}`), INVALID);
    expect401(await api(s.url, 'POST', `/api/celular_qr.php?id=${A.celularId}`, { form: { key: wrongCelular() } }), INVALID);
  });

  it('keys that name different clients or lines are refused as invalid_token', async () => {
    const B = await seedClient(s, { numero: numeroNuevo() });
    expect401(await api(s.url, 'GET', `/api/saldo.php?key=${encodeURIComponent(B.celularKey)}`, { key: A.clientKey }), INVALID);
  });

  it('operator token on /admin: none, a wrong one', async () => {
    expect401(await api(s.url, 'GET', '/admin/clientes'), MISSING);
    expect401(await api(s.url, 'GET', '/admin/clientes', { key: 'not-the-operator-token-at-all' }), INVALID);
    expect401(await api(s.url, 'POST', '/admin/backup', { key: 'not-the-operator-token-at-all' }), INVALID);
    // A client key is not the operator token.
    expect401(await api(s.url, 'GET', '/admin/gateways', { key: A.clientKey }), INVALID);
  });

  it("the legacy endpoint's token field: none, a wrong one", async () => {
    expect401(await api(s.url, 'POST', '/panel/api_wa.php', { form: { destinatario: numeroNuevo(), mensaje: 'hola' } }), MISSING);
    expect401(await api(s.url, 'POST', '/panel/api_wa.php', { form: { token: `${legacy}-wrong`, destinatario: numeroNuevo(), mensaje: 'hola' } }), INVALID);
    expect401(await api(s.url, 'POST', '/api/api-legacy.php', { json: { token: 'f'.repeat(64), destinatario: numeroNuevo(), mensaje: 'hola' } }), INVALID);
  });

  it('base64 sends: a wrong header key before the body, a wrong body key while it streams', async () => {
    const path = '/api/mensaje_enviar_imagen_base64.php';
    // A 1x1 PNG: without any key the body is read (and its file checked) before the 401.
    const imageBase64 = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';
    expect401(await api(s.url, 'POST', path, { key: wrongCelular(), json: { destinatario: numeroNuevo(), imageBase64 } }), INVALID);
    expect401(await api(s.url, 'POST', path, { json: { key: wrongCelular(), destinatario: numeroNuevo(), imageBase64 } }), INVALID);
    expect401(await api(s.url, 'POST', path, { json: { destinatario: numeroNuevo(), imageBase64 } }), MISSING);
  });

  it('webhook listeners and configuration: none, a wrong one', async () => {
    expect401(await api(s.url, 'GET', '/api/webhook_escuchas.php'), MISSING);
    expect401(await api(s.url, 'POST', '/api/webhook_escuchas.php', { key: wrongClient(), json: { url: 'https://example.com/hook' } }), INVALID);
    expect401(await api(s.url, 'POST', '/api/webhook_escuchas_renovar.php?id=esc_0', { key: wrongClient() }), INVALID);
    expect401(await api(s.url, 'GET', '/api/webhook.php', { key: wrongClient() }), INVALID);
  });

  it('an Authorization in another scheme (Basic) is no credential: Bearer realm without invalid_token; a key elsewhere still counts', async () => {
    const basic = { authorization: `Basic ${Buffer.from('ana:secreto').toString('base64')}` };
    expect401(await api(s.url, 'GET', '/api/info.php', { headers: basic }), MISSING);
    expect401(await api(s.url, 'GET', '/admin/clientes', { headers: basic }), MISSING);
    expect401(await api(s.url, 'GET', '/api/info.php', { headers: { authorization: 'Digest username="ana", realm="x"' } }), MISSING);
    // A proxy's login in the header, the key in the query: the key is what pasarela reads.
    const r = await api(s.url, 'GET', `/api/info.php?key=${encodeURIComponent(A.clientKey)}`, { headers: basic });
    expect(r.status, r.text).toBe(200);
    // A bare key (no scheme) is still a key, and a wrong one is refused as such.
    expect((await api(s.url, 'GET', '/api/info.php', { headers: { authorization: A.clientKey } })).status).toBe(200);
    expect401(await api(s.url, 'GET', '/api/info.php', { headers: { authorization: wrongClient() } }), INVALID);
  });

  it('is absent from answers that are not 401: a success, a 403, the public routes', async () => {
    const ok = [
      await api(s.url, 'GET', '/api/info.php', { key: A.clientKey }),
      await api(s.url, 'GET', `/api/celular.php?id=${A.celularId}`, { key: A.celularKey }),
      await api(s.url, 'GET', '/api/info.php', { key: legacy }),
      await api(s.url, 'GET', '/admin/clientes', { key: s.adminToken }),
      await api(s.url, 'GET', '/health'),
      await api(s.url, 'GET', '/openapi.json'),
      await api(s.url, 'GET', '/docs/json'),
    ];
    for (const r of ok) {
      expect(r.status, r.text).toBe(200);
      expect(r.headers.get('www-authenticate')).toBeNull();
    }
    // Known credentials refused for what they ask: a celular key reading the webhook
    // configuration, a send from a line not linked yet (legacy token). 403, no challenge.
    const forbidden = [
      [await api(s.url, 'GET', '/api/webhook.php', { key: A.celularKey }), 201],
      [await api(s.url, 'POST', '/panel/api_wa.php', { form: { token: legacy, destinatario: numeroNuevo(), mensaje: 'hola' } }), 301],
    ] as const;
    for (const [r, codigo] of forbidden) {
      expectError(r, 403, codigo);
      expect(r.headers.get('www-authenticate')).toBeNull();
    }
  });
});
