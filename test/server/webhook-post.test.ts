import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Agent } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AttemptDeadline } from '../../src/webhooks/deadline.js';
import { post, type PostAnswer } from '../../src/webhooks/post.js';

// post() replaced undici's request() and body.dump() (D-155): the same answer, limits and cuts, without their objects.
describe('a webhook POST through dispatch', () => {
  const LIMIT = 1024;
  let server: Server;
  let base: string;
  const agent = new Agent();
  /** Each path's answer; `/hang` sends its headers and one byte, then nothing more until the connection ends. */
  const routes: Record<string, (req: IncomingMessage, res: ServerResponse) => void> = {
    '/ok': (_req, res) => res.writeHead(200).end('fine'),
    '/busy': (_req, res) => res.writeHead(503, { 'Retry-After': '7' }).end(),
    '/long': (_req, res) => {
      // No content-length: only the bytes read tell it is too long.
      res.writeHead(200, { 'transfer-encoding': 'chunked' });
      res.write('x'.repeat(LIMIT));
      res.write('x');
      // Never ended: the POST must not wait for it.
    },
    '/declared': (_req, res) => res.writeHead(200, { 'content-length': String(LIMIT + 1) }).write('x'),
    '/hang': (_req, res) => res.writeHead(200, { 'content-length': '10' }).write('x'),
  };
  const deadline = () => new AttemptDeadline(60_000);
  const answer = (): PostAnswer => ({ status: null, retryAfter: undefined });

  beforeAll(async () => {
    server = createServer((req, res) => routes[req.url!]!(req, res));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
    await agent.close();
  });

  it('sends the headers and body, and resolves with the status once the whole answer came', async () => {
    const a = answer();
    const d = deadline();
    let seen = '';
    routes['/ok'] = (req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        seen = `${req.method} ${String(req.headers['x-sig'])} ${body}`;
        res.writeHead(204).end();
      });
    };
    await post(agent, new URL(`${base}/ok`), { 'x-sig': 'abc' }, '{"n":1}', d, LIMIT, a);
    d.done();
    expect(a).toEqual({ status: 204, retryAfter: undefined });
    expect(seen).toBe('POST abc {"n":1}');
  });

  it('reads Retry-After whatever its case', async () => {
    const a = answer();
    const d = deadline();
    await post(agent, new URL(`${base}/busy`), {}, '', d, LIMIT, a);
    d.done();
    expect(a).toEqual({ status: 503, retryAfter: '7' });
  });

  it('an answer longer than the limit, read or declared, stands with its status and is not read to its end', async () => {
    for (const path of ['/long', '/declared']) {
      const a = answer();
      const d = deadline();
      await post(agent, new URL(`${base}${path}`), {}, '', d, LIMIT, a);
      d.done();
      expect(a.status).toBe(200);
    }
  });

  it('a cut after the headers rejects with the cut reason, the status kept; a cut before the request rejects at once', async () => {
    const a = answer();
    const d = deadline();
    const p = post(agent, new URL(`${base}/hang`), {}, '', d, LIMIT, a);
    await expect.poll(() => a.status).toBe(200);
    d.abort('timeout');
    await expect(p).rejects.toThrow('timeout after 60 s');
    expect(a.status).toBe(200);

    const b = answer();
    const stopped = deadline();
    stopped.abort('stop');
    await expect(post(agent, new URL(`${base}/ok`), {}, '', stopped, LIMIT, b)).rejects.toThrow('the node is stopping');
    expect(b.status).toBeNull();
  });

  it('a connection refused rejects with no status', async () => {
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((r) => closed.close(r));
    const a = answer();
    const d = deadline();
    await expect(post(agent, new URL(`http://127.0.0.1:${port}/x`), {}, '', d, LIMIT, a)).rejects.toThrow();
    d.done();
    expect(a.status).toBeNull();
  });
});
