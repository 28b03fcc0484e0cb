import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { LookupAddress } from 'node:dns';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { TempFiles } from '../../src/core/media/media.js';
import { isBlockedAddress, probeUrl } from '../../src/core/media/media-url.js';
import { GatewayFailure, type OutboundMessage } from '../../src/core/ports/gateway.js';
import { MediaFetcher, type MediaFetchOptions } from '../../src/gateways/media-fetch.js';
import { until } from '../helpers/poll.js';

/**
 * The fetch pasarela makes for a real gateway at send time: every hop vetted,
 * each connection made to the address just vetted (never a second DNS answer),
 * the body streamed to a temp file within the type's limit, removed after.
 */

const PNG = Buffer.concat([Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex'), Buffer.alloc(48, 7)]);
const PDF = Buffer.from('%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n', 'latin1');

interface Seen {
  method: string;
  url: string;
  host: string;
}

let server: Server;
let base: string;
let port: number;
let dir: string;
let tmp: TempFiles;
const seen: Seen[] = [];

beforeAll(async () => {
  server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const u = new URL(req.url ?? '/', 'http://x');
    seen.push({ method: req.method ?? '', url: u.pathname, host: req.headers.host ?? '' });
    if (u.pathname === '/photo.png') return void res.writeHead(200, { 'content-type': 'image/png', 'content-length': String(PNG.length) }).end(PNG);
    if (u.pathname === '/file') return void res.writeHead(200, { 'content-type': 'application/octet-stream' }).end(PDF);
    if (u.pathname === '/to') return void res.writeHead(302, { location: u.searchParams.get('u') ?? '/' }).end();
    if (u.pathname === '/big') {
      // No declared size: the limit must stop the body as it streams.
      res.writeHead(200, { 'content-type': 'image/png' });
      const chunk = Buffer.alloc(64 * 1024, 1);
      let sent = 0;
      const more = (): void => {
        while (sent < 2 * 1024 * 1024) {
          sent += chunk.length;
          if (!res.write(chunk)) return void res.once('drain', more);
        }
        res.end();
      };
      return more();
    }
    if (u.pathname === '/declared-big') return void res.writeHead(200, { 'content-type': 'image/webp', 'content-length': String(5 * 1024 * 1024) }).end();
    if (u.pathname === '/gone') return void res.writeHead(404).end('no');
    if (u.pathname === '/busy') return void res.writeHead(503).end('later');
    if (u.pathname === '/hang') return; // never answers
    if (u.pathname === '/trickle') {
      // Headers at once, then a byte every 20 ms for as long as the connection lasts.
      res.writeHead(200, { 'content-type': 'image/png' });
      res.write(PNG.subarray(0, 1));
      const t = setInterval(() => res.write(Buffer.from([0])), 20);
      res.on('close', () => clearInterval(t));
      return;
    }
    res.writeHead(500).end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as AddressInfo).port;
  base = `http://127.0.0.1:${port}`;
  dir = mkdtempSync(join(tmpdir(), 'pasarela-fetch-'));
  tmp = new TempFiles(join(dir, 'tmp'));
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((r) => server.close(() => r()));
  rmSync(dir, { recursive: true, force: true });
});

beforeEach(() => {
  seen.length = 0;
});

const msg = (over: Partial<OutboundMessage>): OutboundMessage => ({ msgId: 'm-1', tipo: 'imagen', destinatario: '5215587654321', ...over });
const fetcher = (over: Partial<MediaFetchOptions> = {}) => new MediaFetcher({ tmp, allowPrivate: true, timeoutMs: 2000, ...over });
/** Only 127.0.0.1 counts as public, so a name answering it passes the private-address rule like a public host would. */
const loopbackPublic = (a: string) => a !== '127.0.0.1' && isBlockedAddress(a);
const answer = (address: string) => async (): Promise<LookupAddress[]> => [{ address, family: 4 }];
const leftovers = () => readdirSync(tmp.dir);

/** What the gateway got: the message, and its file's bytes read while the send is in progress. */
async function handedOver(f: MediaFetcher, m: OutboundMessage): Promise<{ m: OutboundMessage; bytes: Buffer | null }> {
  let got: { m: OutboundMessage; bytes: Buffer | null } | undefined;
  await f.withBytes(m, async (x) => {
    got = { m: x, bytes: x.filePath ? readFileSync(x.filePath) : null };
  });
  return got!;
}

async function rejectionOf(p: Promise<unknown>): Promise<unknown> {
  return p.then(
    () => {
      throw new Error('expected a rejection');
    },
    (e: unknown) => e,
  );
}

async function fetchFailure(p: Promise<unknown>): Promise<GatewayFailure> {
  const err = await rejectionOf(p);
  expect(err).toBeInstanceOf(GatewayFailure);
  return err as GatewayFailure;
}

describe('MediaFetcher', () => {
  it('hands over a file with the served bytes instead of the URL, and removes it after the send', async () => {
    const { m, bytes } = await handedOver(fetcher(), msg({ url: `${base}/photo.png`, caption: 'hola' }));
    expect(m.url).toBeUndefined();
    expect(bytes?.equals(PNG)).toBe(true);
    expect(m).toMatchObject({ caption: 'hola', mime: 'image/png' });
    expect(existsSync(m.filePath!)).toBe(false);
    expect(leftovers()).toEqual([]);
  });

  it('removes the file when the send fails too', async () => {
    let path = '';
    const err = await rejectionOf(
      fetcher().withBytes(msg({ url: `${base}/photo.png` }), async (x) => {
        path = x.filePath!;
        throw new GatewayFailure('gateway down', 'transient');
      }),
    );
    expect((err as Error).message).toBe('gateway down');
    expect(path).not.toBe('');
    expect(existsSync(path)).toBe(false);
  });

  it('without a declared type, names the type from the bytes (so the file name gets the right extension)', async () => {
    const { m } = await handedOver(fetcher(), msg({ tipo: 'documento', url: `${base}/file` }));
    expect(m.mime).toBe('application/pdf');
    // A type the accept check reported is kept.
    expect((await handedOver(fetcher(), msg({ tipo: 'documento', url: `${base}/file`, mime: 'text/plain' }))).m.mime).toBe('text/plain');
  });

  it('connects to the address it vetted, not to a second DNS answer', async () => {
    // `media.test` exists only in this resolver's answer: the request reaching the server proves the connection used it.
    const { bytes } = await handedOver(
      fetcher({ allowPrivate: false, isBlocked: loopbackPublic, resolve: answer('127.0.0.1') }),
      msg({ url: `http://media.test:${port}/photo.png` }),
    );
    expect(bytes?.equals(PNG)).toBe(true);
    expect(seen).toEqual([{ method: 'GET', url: '/photo.png', host: `media.test:${port}` }]);
  });

  it('refuses at send time a name that was public when accepted and points at a private address now', async () => {
    let dns = '127.0.0.1';
    const resolve = async (): Promise<LookupAddress[]> => [{ address: dns, family: 4 }];
    const url = `http://media.test:${port}/photo.png`;
    expect((await probeUrl(url, { allowPrivate: false, isBlocked: loopbackPublic, resolve, label: 'media URL' })).bytes).toBe(PNG.length);
    seen.length = 0;
    dns = '10.0.0.7'; // the rebinding
    let called = false;
    const f = await fetchFailure(
      fetcher({ allowPrivate: false, isBlocked: loopbackPublic, resolve }).withBytes(msg({ url }), async () => {
        called = true;
      }),
    );
    expect(f.kind).toBe('permanent');
    expect(f.message).toMatch(/media URL points at a private address \(10\.0\.0\.7\)/);
    expect(called).toBe(false);
    expect(seen).toEqual([]);
    expect(leftovers()).toEqual([]);
  });

  it('vets every redirect: a hop to a private address is refused after the first request only', async () => {
    const f = await fetchFailure(
      fetcher({ allowPrivate: false, isBlocked: loopbackPublic }).withBytes(
        msg({ url: `${base}/to?u=${encodeURIComponent('http://169.254.169.254/latest/meta-data')}` }),
        async () => undefined,
      ),
    );
    expect(f.kind).toBe('permanent');
    expect(f.message).toMatch(/after 1 redirect\) points at a private address \(169\.254\.169\.254\)/);
    expect(seen.map((s) => s.url)).toEqual(['/to']);
  });

  it('refuses a literal private address unless private URLs are allowed', async () => {
    const f = await fetchFailure(fetcher({ allowPrivate: false }).withBytes(msg({ url: `${base}/photo.png` }), async () => undefined));
    expect(f).toMatchObject({ kind: 'permanent', message: 'media URL points at a private address (127.0.0.1)' });
    expect(seen).toEqual([]);
  });

  it("stops a body past the type's limit, declared or not, as a permanent failure", async () => {
    const streamed = await fetchFailure(fetcher().withBytes(msg({ tipo: 'sticker', url: `${base}/big` }), async () => undefined));
    expect(streamed.kind).toBe('permanent');
    expect(streamed.message).toMatch(/^media URL file too large: over 1 MB; the maximum for sticker is 1 MB$/);
    const declared = await fetchFailure(fetcher().withBytes(msg({ tipo: 'sticker', url: `${base}/declared-big` }), async () => undefined));
    expect(declared.message).toBe('media URL file too large: 5.0 MB; the maximum for sticker is 1 MB');
    expect(leftovers()).toEqual([]);
  });

  it('classifies what went wrong: 4xx permanent; 5xx and timeouts transient', async () => {
    expect(await fetchFailure(fetcher().withBytes(msg({ url: `${base}/gone` }), async () => undefined))).toMatchObject({
      kind: 'permanent',
      message: 'media URL could not be fetched (HTTP 404)',
    });
    expect(await fetchFailure(fetcher().withBytes(msg({ url: `${base}/busy` }), async () => undefined))).toMatchObject({
      kind: 'transient',
      message: 'media URL could not be fetched (HTTP 503)',
    });
    expect(await fetchFailure(fetcher({ timeoutMs: 200 }).withBytes(msg({ url: `${base}/hang` }), async () => undefined))).toMatchObject({
      kind: 'transient',
      message: 'media URL could not be fetched (timeout after 0.2 s)',
    });
    expect(leftovers()).toEqual([]);
  });

  it('a body trickled a byte at a time is cut at the deadline of the whole fetch (not only between bytes): transient', async () => {
    let sent = false;
    const f = await fetchFailure(
      fetcher({ timeoutMs: 300 }).withBytes(msg({ url: `${base}/trickle` }), async () => {
        sent = true;
      }),
    );
    expect(f).toMatchObject({ kind: 'transient', message: 'media URL could not be fetched (timeout after 0.3 s)' });
    expect(sent).toBe(false);
    await until(() => leftovers().length === 0, { what: 'the temp file removed' });
  });

  it('leaves messages without a URL as they are', async () => {
    const text = msg({ tipo: 'texto', texto: 'hola' });
    expect((await handedOver(fetcher(), text)).m).toBe(text);
    expect(seen).toEqual([]);
  });
});
