import { readdirSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, startTestServer, type ApiResponse, type TestServer } from '../helpers/server.js';
import { expectError, expectOk } from '../helpers/expect.js';
import { linkedLine, MP4, PDF, PNG, waitEstado, type Line } from '../server/send-helpers.js';
import { evolutionNetwork, wahaNetwork, type Network } from './gateways-network.js';
import { until } from '../helpers/poll.js';

/**
 * Media by URL through a real gateway (Evolution, WAHA fakes): pasarela
 * fetches the URL at send time and hands the gateway the bytes, so the gateway
 * never resolves a client's host name; `--gateway-fetches-media` hands it the
 * URL instead. pasarela runs whole, real HTTP on every side.
 */

const MB = 1024 * 1024;

interface Media {
  base: string;
  /** "METHOD /path range?" of every request. */
  hits: string[];
  close(): Promise<void>;
}

async function startMedia(): Promise<Media> {
  const hits: string[] = [];
  const files: Record<string, { type: string; body: Buffer }> = {
    '/photo.png': { type: 'image/png', body: PNG },
    '/clip': { type: 'video/mp4', body: MP4 },
    // A server that does not know its type: the bytes say PDF.
    '/factura': { type: 'application/octet-stream', body: PDF },
  };
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? '/').split('?')[0]!;
    hits.push(`${req.method} ${path}${req.headers.range ? ' range' : ''}`);
    const f = files[path];
    if (f) return void res.writeHead(200, { 'content-type': f.type, 'content-length': String(f.body.length) }).end(req.method === 'HEAD' ? undefined : f.body);
    if (path === '/grows.png') {
      // Says no size when checked (accepted: size unknown); at send time streams past the 5 MB of images.
      if (req.method === 'HEAD' || req.headers.range) return void res.writeHead(200, { 'content-type': 'image/png' }).end();
      res.writeHead(200, { 'content-type': 'image/png' });
      const chunk = Buffer.alloc(256 * 1024, 3);
      let sent = 0;
      const more = (): void => {
        while (sent <= 6 * MB) {
          sent += chunk.length;
          if (!res.write(chunk)) return void res.once('drain', more);
        }
        res.end();
      };
      return more();
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    hits,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

const TO = '5215587654321';

/** A line linked by QR on the network's fake. */
async function linkLine(s: TestServer, net: Network): Promise<Line> {
  const line = await linkedLine(s, { saldo: 100, link: false });
  const instancia = (await s.core.store.getCelular(line.celularId))!.gateway_instancia!;
  await until(
    async () => {
      const qr = await api(s.url, 'POST', `/api/celular_qr.php?id=${line.celularId}`, { key: line.clientKey });
      return qr.status === 200 && qr.body.status === 'need_scan' && qr.body.qr !== '';
    },
    { what: 'a QR' },
  );
  await net.scan(s, instancia);
  await until(async () => (await s.core.store.getCelular(line.celularId))?.estado === 'activo', { what: 'celular activo' });
  return line;
}

const NETWORKS: Array<[string, () => Promise<Network>]> = [
  ['evolution', evolutionNetwork],
  ['waha', wahaNetwork],
];

describe.each(NETWORKS)('media URLs on %s', (_name, make) => {
  let media: Media;

  beforeAll(async () => {
    media = await startMedia();
  });
  afterAll(async () => {
    await media?.close();
  });

  describe('by default pasarela fetches and the gateway gets bytes', () => {
    let net: Network;
    let s: TestServer;
    let line: Line;
    const post = (path: string, body: Record<string, unknown>): Promise<ApiResponse> =>
      api(s.url, 'POST', path, { key: line.celularKey, json: { destinatario: TO, ...body } });
    const credit = async () => (await s.core.store.getCelular(line.celularId))!.saldo_actual + (await s.core.store.getCliente(line.clienteId))!.saldo_global;
    const tmpFiles = () => readdirSync(join(s.dataDir, 'tmp'));

    beforeAll(async () => {
      net = await make();
      s = await startTestServer({ ...net.serve, allowPrivateUrls: true, healthIntervalMs: 0, queue: { gapMinMs: 0, gapMaxMs: 0 } });
      line = await linkLine(s, net);
    });
    afterAll(async () => {
      await s?.stop();
      await net?.close();
    });

    it('sends the served bytes as base64, never the URL, directo and queued; no temp file is left', async () => {
      const cases = [
        { path: '/api/mensaje_enviar_imagen.php', body: { url: `${media.base}/photo.png`, caption: 'foto', directo: 1 }, bytes: PNG },
        { path: '/api/mensaje_enviar_video.php', body: { url: `${media.base}/clip`, caption: 'video' }, bytes: MP4 },
        { path: '/api/mensaje_enviar_documento.php', body: { url: `${media.base}/factura`, directo: 1 }, bytes: PDF },
      ];
      for (const c of cases) {
        const before = net.received!().length;
        const r = await post(c.path, c.body);
        expectOk(r);
        await waitEstado(s, r.body.msg_id, 'enviado');
        const got = net.received!().slice(before);
        expect(got).toHaveLength(1);
        expect(got[0]!.url).toBeUndefined();
        expect(got[0]!.bytes?.equals(c.bytes), `${c.path}: the gateway got the served file`).toBe(true);
        expect(got[0]!.json).not.toContain(media.base.replace(/^http:\/\//, ''));
      }
      // The document's type came from its bytes, so its name has the right extension.
      expect(net.received!().at(-1)!.filename).toBe('documento.pdf');
      // pasarela itself fetched each file (a GET without a range, after the accept check).
      expect(media.hits.filter((h) => h.startsWith('GET') && !h.endsWith('range'))).toEqual(['GET /photo.png', 'GET /clip', 'GET /factura']);
      expect(tmpFiles()).toEqual([]);
    });

    it('a file that turns out too large ends the message in error with the reason, refunded; nothing reaches the gateway', async () => {
      const before = net.received!().length;
      const start = await credit();
      const d = await post('/api/mensaje_enviar_imagen.php', { url: `${media.base}/grows.png`, directo: 1 });
      expectError(d, 502, 704);
      expect(d.body.error).toMatch(/media URL file too large: over 5 MB; the maximum for imagen is 5 MB .*refunded/);
      const q = await post('/api/mensaje_enviar_imagen.php', { url: `${media.base}/grows.png?cola`, caption: 'otra' });
      expectOk(q);
      const m = await waitEstado(s, q.body.msg_id, 'error');
      expect(m.error).toBe('refused for good: media URL file too large: over 5 MB; the maximum for imagen is 5 MB');
      expect(m.intentos).toBe(0);
      expect(await credit()).toBe(start);
      expect(net.received!().length).toBe(before);
      await until(() => tmpFiles().length === 0, { what: 'temp files removed' });
    });
  });

  describe('with --gateway-fetches-media the gateway gets the URL', () => {
    let net: Network;
    let s: TestServer;
    let line: Line;

    beforeAll(async () => {
      net = await make();
      s = await startTestServer({ ...net.serve, allowPrivateUrls: true, gatewayFetchesMedia: true, healthIntervalMs: 0, queue: { gapMinMs: 0, gapMaxMs: 0 } });
      line = await linkLine(s, net);
    });
    afterAll(async () => {
      await s?.stop();
      await net?.close();
    });

    it('passes the checked URL through and fetches nothing itself', async () => {
      media.hits.length = 0;
      const r = await api(s.url, 'POST', '/api/mensaje_enviar_imagen.php', {
        key: line.celularKey,
        json: { destinatario: TO, url: `${media.base}/photo.png`, directo: 1 },
      });
      expectOk(r);
      const got = net.received!().at(-1)!;
      expect(got.url).toBe(`${media.base}/photo.png`);
      expect(got.bytes).toBeUndefined();
      expect(media.hits.filter((h) => h.startsWith('GET') && !h.endsWith('range'))).toEqual([]);
    });
  });
});
