import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, seedClient, startTestServer, type ApiResponse, type Seeded, type TestServer } from '../helpers/server.js';
import { numeroNuevo } from '../helpers/expect.js';
import { until } from '../helpers/poll.js';

/**
 * Request ids (docs/logs.md): every response carries `X-Request-Id`, a new
 * id or the sane one the client sent; the request's one log line carries it
 * as `reqId`, with method, masked URL, status and time.
 */

const GENERATED = /^[0-9a-f]{12}$/;

let s: TestServer;
let A: Seeded;

beforeAll(async () => {
  s = await startTestServer();
  A = await seedClient(s, { numero: numeroNuevo() });
});
afterAll(async () => {
  await s?.stop();
});

const idOf = (r: ApiResponse): string => {
  const id = r.headers.get('x-request-id');
  expect(id, `X-Request-Id on ${r.status} ${r.text.slice(0, 100)}`).toBeTruthy();
  return id!;
};

/** The parsed log lines that carry `reqId`, once there is at least one. */
async function linesOf(reqId: string): Promise<Array<Record<string, any>>> {
  const find = () => s.logs.map((l) => JSON.parse(l) as Record<string, any>).filter((l) => l.reqId === reqId);
  await until(() => find().length > 0, { what: `a log line of ${reqId}` });
  return find();
}

/** A raw request written to the socket as is; the raw answer. */
function rawExchange(bytes: string): Promise<{ status: number; headers: Record<string, string> }> {
  const u = new URL(s.url);
  return new Promise((resolve, reject) => {
    const sock = connect(Number(u.port), u.hostname, () => sock.write(bytes));
    let buf = '';
    sock.on('data', (d) => (buf += String(d)));
    sock.on('error', reject);
    sock.on('close', () => {
      const [head = ''] = buf.split('\r\n\r\n');
      const lines = head.split('\r\n');
      const headers = Object.fromEntries(lines.slice(1).map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
      resolve({ status: Number(lines[0]!.split(' ')[1]), headers });
    });
  });
}

describe('X-Request-Id', () => {
  it('is generated for every request: short, unique', async () => {
    const ids = new Set<string>();
    for (let i = 0; i < 40; i++) {
      const id = idOf(await api(s.url, 'GET', '/health'));
      expect(id).toMatch(GENERATED);
      ids.add(id);
    }
    expect(ids.size).toBe(40);
  });

  it('is on every kind of answer: 200, 201, 400 (bad JSON, bad URL), 401, 404, 415, and a raw refusal before routing', async () => {
    const answers: Array<[number, ApiResponse]> = [
      [200, await api(s.url, 'GET', '/api/info.php', { key: A.clientKey })],
      [201, await api(s.url, 'POST', '/api/celular_crear.php', { key: A.clientKey, json: { numero: numeroNuevo() } })],
      [400, await api(s.url, 'POST', '/api/celular_crear.php', { key: A.clientKey, raw: '{"numero": ', contentType: 'application/json' })],
      [400, await api(s.url, 'GET', '/api/celular.php%zz')],
      [401, await api(s.url, 'GET', '/api/info.php')],
      [404, await api(s.url, 'GET', '/no/such/path')],
      [415, await api(s.url, 'POST', '/api/celular_crear.php', { key: A.clientKey, raw: 'x', contentType: 'application/xml' })],
    ];
    for (const [status, r] of answers) {
      expect(r.status, r.text).toBe(status);
      expect(idOf(r)).toMatch(GENERATED);
    }
    // A malformed request never reaches Fastify: the raw answer carries an id, logged with it.
    const raw = await rawExchange('NOT A REQUEST\r\n\r\n');
    expect(raw.status).toBe(400);
    expect(raw.headers['x-request-id']).toMatch(GENERATED);
    const [line] = await linesOf(raw.headers['x-request-id']!);
    expect(line).toMatchObject({ level: 30, event: 'request.refused', res: { statusCode: 400 }, msg: 'request refused before routing' });
  });

  it('is the one a client or proxy sent when sane, answered and logged as is', async () => {
    for (const given of ['proxy-7f3a', 'a', 'x'.repeat(128), 'req:1/2.3_4=5+6@7~!#$%&*()[]{}<>?|"\'']) {
      const r = await api(s.url, 'GET', '/health', { headers: { 'X-Request-Id': given } });
      expect(idOf(r)).toBe(given);
    }
    const r = await api(s.url, 'GET', `/api/info.php?key=${encodeURIComponent(A.clientKey)}`, { headers: { 'X-Request-Id': 'from-the-proxy-0001' } });
    expect(r.status).toBe(200);
    expect(idOf(r)).toBe('from-the-proxy-0001');
    const lines = await linesOf('from-the-proxy-0001');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ msg: 'request completed', req: { method: 'GET', url: '/api/info.php?key=[REDACTED]' }, res: { statusCode: 200 } });
  });

  it('is replaced by a new one when the one sent is not sane (spaces, too long, not ASCII, empty, repeated)', async () => {
    for (const given of ['two words', 'x'.repeat(129), 'ñandú', '']) {
      const r = await api(s.url, 'GET', '/health', { headers: { 'X-Request-Id': given } });
      expect(idOf(r)).toMatch(GENERATED);
    }
    // Two headers arrive joined ("a, b"): not one id.
    const raw = await rawExchange(`GET /health HTTP/1.1\r\nHost: x\r\nX-Request-Id: a\r\nX-Request-Id: b\r\nConnection: close\r\n\r\n`);
    expect(raw.status).toBe(200);
    expect(raw.headers['x-request-id']).toMatch(GENERATED);
  });
});

describe('the request log', () => {
  it('is one line per request, with its id, method, masked URL, address, status and time', async () => {
    const requests = [
      await api(s.url, 'GET', '/health'),
      await api(s.url, 'GET', `/api/saldo.php?key=${encodeURIComponent(A.clientKey)}&x=1`),
      await api(s.url, 'GET', '/api/info.php', { key: 'WAC_999_nope' }),
      await api(s.url, 'GET', `/nope?token=${encodeURIComponent(A.celularKey)}`),
      await api(s.url, 'POST', '/api/celular_crear.php', { key: A.clientKey, json: { numero: 'no es un numero' } }),
    ];
    const expected: Array<[string, string, number]> = [
      ['GET', '/health', 200],
      ['GET', '/api/saldo.php?key=[REDACTED]&x=[REDACTED]', 200],
      ['GET', '/api/info.php', 401],
      ['GET', '/nope?token=[REDACTED]', 404],
      ['POST', '/api/celular_crear.php', 400],
    ];
    for (const [i, r] of requests.entries()) {
      const id = idOf(r);
      const lines = await linesOf(id);
      expect(lines, JSON.stringify(lines)).toHaveLength(1);
      const [method, url, status] = expected[i]!;
      expect(lines[0]).toMatchObject({
        level: 30,
        reqId: id,
        msg: 'request completed',
        req: { method, url, remoteAddress: '127.0.0.1' },
        res: { statusCode: status },
      });
      expect(typeof lines[0]!.responseTime).toBe('number');
    }
    expect(s.logs.some((l) => l.includes('incoming request'))).toBe(false);
    // A client that goes away in the middle of its body: still one line, saying so.
    const sock = connect(Number(new URL(s.url).port), '127.0.0.1');
    await new Promise((r) => sock.once('connect', r));
    sock.write(
      'POST /api/celular_crear.php HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\nX-Request-Id: gone-midway\r\n\r\n{"numero":',
    );
    sock.end();
    const gone = await linesOf('gone-midway');
    expect(gone).toHaveLength(1);
    expect(gone[0]).toMatchObject({ msg: 'request ended before its answer', req: { method: 'POST', url: '/api/celular_crear.php' } });
    const all = s.logs.join('\n');
    expect(all).not.toContain(A.clientKey);
    expect(all).not.toContain(A.celularKey);
  });
});

describe('a malformed request pipelined after a complete one', () => {
  it('gets its own new id and request.refused line; the request before it keeps its id and no code of the other', async () => {
    const u = new URL(s.url);
    const answer = await new Promise<string>((resolve, reject) => {
      const sock = connect(Number(u.port), u.hostname, () =>
        sock.write(
          'GET /health HTTP/1.1\r\nHost: x\r\nX-Request-Id: pipelined-first\r\n\r\n' +
            'POST /api/info.php HTTP/1.1\r\nHost: x\r\nX-Request-Id: pipelined-bad\r\nContent-Length: 1x\r\n\r\n',
        ),
      );
      let buf = '';
      sock.on('data', (d) => (buf += String(d)));
      sock.on('error', reject);
      sock.on('close', () => resolve(buf));
    });
    const refused = /HTTP\/1\.1 400 [^]*?\r\nX-Request-Id: ([^\r]+)\r\n/.exec(answer);
    expect(refused, answer).not.toBeNull();
    const id = refused![1]!;
    expect(id).toMatch(GENERATED);
    expect(await linesOf(id)).toEqual([expect.objectContaining({ event: 'request.refused', res: { statusCode: 400 }, code: 'HPE_INVALID_CONTENT_LENGTH' })]);
    const first = await linesOf('pipelined-first');
    expect(first).toHaveLength(1);
    expect(first[0]!.code).toBeUndefined();
    expect(first[0]!.req).toMatchObject({ method: 'GET', url: '/health' });
  });
});

describe('a routed request whose body turns out malformed', () => {
  it('keeps its id in the raw 400 and on its one line, with the code; no request.refused line', async () => {
    // Debug level: its "incoming request" line says when it was routed.
    const t = await startTestServer({ logLevel: 'debug' });
    try {
      const B = await seedClient(t, { numero: numeroNuevo() });
      const u = new URL(t.url);
      const parsed = () => t.logs.map((l) => JSON.parse(l) as Record<string, any>);
      const answer = await new Promise<string>((resolve, reject) => {
        const sock = connect(Number(u.port), u.hostname, () => {
          sock.write(
            `POST /api/celular_crear.php HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${B.clientKey}\r\nContent-Type: application/json\r\n` +
              'Transfer-Encoding: chunked\r\nX-Request-Id: body-cut\r\n\r\n3\r\n{"n\r\n',
          );
          // Once it is routed, a chunk size that is not hex.
          void until(() => parsed().some((l) => l.reqId === 'body-cut' && l.msg === 'incoming request'), { what: 'the request routed' }).then(() =>
            sock.write('zz\r\n'),
          );
        });
        let buf = '';
        sock.on('data', (d) => (buf += String(d)));
        sock.on('error', reject);
        sock.on('close', () => resolve(buf));
      });
      expect(answer).toMatch(/^HTTP\/1\.1 400 [^]*\r\nX-Request-Id: body-cut\r\n/);
      await until(() => parsed().some((l) => l.reqId === 'body-cut' && l.msg === 'request ended before its answer'), { what: 'its line' });
      const lines = parsed().filter((l) => l.reqId === 'body-cut' && l.level >= 30);
      expect(lines).toEqual([expect.objectContaining({ msg: 'request ended before its answer', code: 'HPE_INVALID_CHUNK_SIZE' })]);
      expect(parsed().filter((l) => l.event === 'request.refused')).toEqual([]);
    } finally {
      await t.stop();
    }
  });
});

describe("node's check of header and request timeouts (D-190)", () => {
  it('runs only while a connection is open: none armed on an idle server, one while connected, none after', async () => {
    const t = await startTestServer({ limits: { headerTimeoutMs: 300 } });
    const armed = () => {
      const sym = Object.getOwnPropertySymbols(t.app.server).find((x) => x.description === 'http.server.connectionsCheckingInterval');
      return sym !== undefined && Reflect.get(t.app.server, sym) !== undefined;
    };
    try {
      expect(armed()).toBe(false);
      const u = new URL(t.url);
      const sock = connect(Number(u.port), u.hostname, () => sock.write('GET /health HTTP/1.1\r\nHost: x\r\n'));
      // Read, or the server's end is never seen.
      let answer = '';
      sock.on('data', (d) => (answer += String(d)));
      const closed = new Promise((r) => sock.once('close', r));
      await until(() => armed());
      // The check cuts the request whose headers do not come: the 408 closing it is its work.
      await closed;
      expect(answer).toMatch(/^HTTP\/1\.1 408 /);
      await until(() => !armed());
    } finally {
      await t.stop();
    }
  });
});

describe('a request whose headers never finish', () => {
  it('gets the raw 408 with an X-Request-Id, and its one line says so with that id', async () => {
    const t = await startTestServer({ limits: { headerTimeoutMs: 300 } });
    try {
      const u = new URL(t.url);
      const answer = await new Promise<string>((resolve, reject) => {
        const sock = connect(Number(u.port), u.hostname, () => sock.write('GET /health HTTP/1.1\r\nHost: x\r\n'));
        let buf = '';
        sock.on('data', (d) => (buf += String(d)));
        sock.on('error', reject);
        sock.on('close', () => resolve(buf));
      });
      expect(answer).toMatch(/^HTTP\/1\.1 408 /);
      const id = /\r\nX-Request-Id: ([0-9a-f]{12})\r\n/.exec(answer)?.[1];
      expect(id, answer).toBeDefined();
      const lines = t.logs.map((l) => JSON.parse(l) as Record<string, any>).filter((l) => l.reqId === id);
      expect(lines).toEqual([expect.objectContaining({ event: 'request.refused', res: { statusCode: 408 }, code: 'ERR_HTTP_REQUEST_TIMEOUT' })]);
    } finally {
      await t.stop();
    }
  });
});
