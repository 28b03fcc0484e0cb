import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { api, startTestServer, type TestServer } from '../helpers/server.js';

/**
 * What both `send` test files send through: a server that sends at once (no
 * queue gap) and may fetch media from loopback, a client with 100 credits
 * and one linked line (whose key is `key`), and a local media server that
 * answers every GET or HEAD with PNG.
 */

export const PNG = Buffer.concat([Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex'), Buffer.alloc(64, 1)]);

export interface SendWorld {
  s: TestServer;
  key: string;
  celularId: number;
  media: Server;
  mediaUrl: string;
}

export async function startSendWorld(): Promise<SendWorld> {
  const s = await startTestServer({ allowPrivateUrls: true, queue: { gapMinMs: 0, gapMaxMs: 0 } });
  const c = await api(s.url, 'POST', '/admin/clientes', { key: s.adminToken, json: { nombre: 'Envios', email: 'e@example.com', saldo: 100 } });
  const cel = await api(s.url, 'POST', '/api/celular_crear.php', { key: c.body.api_key, json: { numero: '5215512345678' } });
  const celularId = cel.body.celular_id as number;
  const key = cel.body.api_key as string;
  await api(s.url, 'POST', `/api/celular_qr.php?id=${celularId}`, { key });
  await api(s.url, 'POST', '/admin/sim/scan', { key: s.adminToken, json: { celular_id: celularId } });
  const media = createServer((req, res) => {
    res.writeHead(200, { 'content-type': 'image/png', 'content-length': PNG.length });
    res.end(req.method === 'HEAD' ? undefined : PNG);
  });
  await new Promise<void>((r) => media.listen(0, '127.0.0.1', r));
  const mediaUrl = `http://127.0.0.1:${(media.address() as AddressInfo).port}/foto.png`;
  return { s, key, celularId, media, mediaUrl };
}

export interface LinkedLine {
  clientKey: string;
  celularId: number;
  celularKey: string;
  numero: string;
}

/** A new client with one linked line (and balance), through the API. */
export async function linkedLine(s: TestServer, numero: string): Promise<LinkedLine> {
  const c = await api(s.url, 'POST', '/admin/clientes', { key: s.adminToken, json: { nombre: `Linea ${numero}`, email: `${numero}@example.com`, saldo: 100 } });
  const cel = await api(s.url, 'POST', '/api/celular_crear.php', { key: c.body.api_key, json: { numero } });
  await api(s.url, 'POST', `/api/celular_qr.php?id=${cel.body.celular_id}`, { key: cel.body.api_key });
  await api(s.url, 'POST', '/admin/sim/scan', { key: s.adminToken, json: { celular_id: cel.body.celular_id } });
  return { clientKey: c.body.api_key, celularId: cel.body.celular_id, celularKey: cel.body.api_key, numero: cel.body.celular.numero };
}
