import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'vitest';
import type { MensajeRow } from '../../src/core/ports/model.js';
import { until } from '../helpers/poll.js';
import { api, type ApiResponse, type TestServer } from '../helpers/server.js';

/**
 * Shared pieces of the send-path HTTP suites (send-*.test.ts, queue.test.ts,
 * legacy.test.ts): tiny real media files, a loopback media server, a linked
 * line with credit, and waits on a message's state. The answers' checks are
 * helpers/expect.ts (expectOk, expectError), the poller helpers/poll.ts.
 */

export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

// ---- tiny but real files (magic numbers the server sniffs) ----
export const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==', 'base64');
export const JPEG = Buffer.from(
  '/9j/4AAQSkZJRgABAQEASABIAAD/2wBDAP//////////////////////////////////////////////////////////////////////////////////////wgALCAABAAEBAREA/8QAFBABAAAAAAAAAAAAAAAAAAAAAP/aAAgBAQABPxA=',
  'base64',
);
export const PDF = Buffer.from('%PDF-1.4\n1 0 obj<</Type/Catalog>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n', 'latin1');
export const MP3 = Buffer.concat([
  Buffer.from('ID3', 'latin1'),
  Buffer.from([0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00]),
  Buffer.from([0xff, 0xfb, 0x90, 0x64]),
  Buffer.alloc(200, 0x00),
]);
export const MP4 = Buffer.concat([
  Buffer.from([0x00, 0x00, 0x00, 0x18]),
  Buffer.from('ftypisom', 'latin1'),
  Buffer.from([0x00, 0x00, 0x02, 0x00]),
  Buffer.from('isomiso2', 'latin1'),
  Buffer.from([0x00, 0x00, 0x00, 0x08]),
  Buffer.from('free', 'latin1'),
]);
export const WEBP = (() => {
  const vp8 = Buffer.from([0x2f, 0x00, 0x00, 0x00, 0x00, 0x88, 0x88, 0x08, 0x00, 0x00]);
  const chunk = Buffer.concat([Buffer.from('VP8L', 'latin1'), u32le(vp8.length), vp8]);
  return Buffer.concat([Buffer.from('RIFF', 'latin1'), u32le(4 + chunk.length), Buffer.from('WEBP', 'latin1'), chunk]);
})();

function u32le(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(n);
  return b;
}

export const b64 = (b: Buffer): string => b.toString('base64');
export const dataUri = (mime: string, b: Buffer): string => `data:${mime};base64,${b.toString('base64')}`;

// ---- a media server on 127.0.0.1 (the test server runs with allowPrivateUrls) ----
export interface MediaServer {
  base: string;
  /** Requests seen, as "METHOD /path". */
  hits: string[];
  close(): Promise<void>;
}

const FILES: Record<string, { type: string; body: Buffer }> = {
  '/img.png': { type: 'image/png', body: PNG },
  '/img.jpg': { type: 'image/jpeg', body: JPEG },
  '/doc.pdf': { type: 'application/pdf', body: PDF },
  '/audio.mp3': { type: 'audio/mpeg', body: MP3 },
  '/video.mp4': { type: 'video/mp4', body: MP4 },
  '/sticker.webp': { type: 'image/webp', body: WEBP },
};

export const BIG_DECLARED = 6 * 1024 * 1024;

export async function startMediaServer(): Promise<MediaServer> {
  const hits: string[] = [];
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? '/').split('?')[0]!;
    hits.push(`${req.method} ${path}`);
    const f = FILES[path];
    if (f) {
      res.writeHead(200, { 'content-type': f.type, 'content-length': String(f.body.length) });
      res.end(req.method === 'HEAD' ? undefined : f.body);
      return;
    }
    if (path === '/big.png') {
      // Declares 6 MB (over the 5 MB of images by URL); sends nothing real.
      if (req.method === 'HEAD') {
        res.writeHead(200, { 'content-type': 'image/png', 'content-length': String(BIG_DECLARED) });
        res.end();
      } else {
        res.writeHead(206, { 'content-type': 'image/png', 'content-range': `bytes 0-0/${BIG_DECLARED}`, 'content-length': '1' });
        res.end(Buffer.from([0x89]));
      }
      return;
    }
    if (path === '/redirect.png') {
      res.writeHead(302, { location: '/img.png', 'content-length': '0' });
      res.end();
      return;
    }
    res.writeHead(404, { 'content-type': 'text/plain', 'content-length': '9' });
    res.end(req.method === 'HEAD' ? undefined : 'not found');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    base: `http://127.0.0.1:${port}`,
    hits,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

// ---- lines ----
export interface Line {
  clienteId: number;
  clientKey: string;
  celularId: number;
  celularKey: string;
  gatewayToken: string;
  numero: string;
}

let seq = 0;
const usedNumeros = new Set<string>();
/** A fresh Mexico City number (52 55 XXXX XXXX), unique in this process. */
export function numeroNuevo(): string {
  for (;;) {
    const n = `5255${String(Math.floor(Math.random() * 1e8)).padStart(8, '0')}`;
    if (!usedNumeros.has(n)) {
      usedNumeros.add(n);
      return n;
    }
  }
}

export async function admin(s: TestServer, method: string, path: string, json?: unknown): Promise<ApiResponse> {
  return api(s.url, method, path, { key: s.adminToken, json });
}

/** A client (saldo global, plan) with one celular, linked through QR + sim scan and `activo`. */
export async function linkedLine(s: TestServer, opts: { saldo?: number; plan?: 'medido' | 'ilimitado'; numero?: string; link?: boolean } = {}): Promise<Line> {
  seq += 1;
  const c = await admin(s, 'POST', '/admin/clientes', {
    nombre: `Envios ${seq}`,
    email: `envios${seq}.${Date.now()}@example.com`,
    saldo: opts.saldo ?? 100,
    ...(opts.plan ? { plan: opts.plan } : {}),
  });
  if (c.status !== 201) throw new Error(`client: ${c.status} ${c.text}`);
  const clientKey = c.body.api_key as string;
  const cel = await api(s.url, 'POST', '/api/celular_crear.php', { key: clientKey, json: { numero: opts.numero ?? numeroNuevo() } });
  if (cel.status !== 201) throw new Error(`celular: ${cel.status} ${cel.text}`);
  const line: Line = {
    clienteId: c.body.cliente.id,
    clientKey,
    celularId: cel.body.celular_id,
    celularKey: cel.body.api_key,
    gatewayToken: cel.body.gateway_token,
    numero: cel.body.celular.numero,
  };
  if (opts.link !== false) await link(s, line);
  return line;
}

export async function link(s: TestServer, line: Line): Promise<void> {
  const qr = await api(s.url, 'POST', `/api/celular_qr.php?id=${line.celularId}`, { key: line.clientKey });
  if (qr.status !== 200) throw new Error(`qr: ${qr.status} ${qr.text}`);
  const scan = await admin(s, 'POST', '/admin/sim/scan', { celular_id: line.celularId });
  if (scan.status !== 200) throw new Error(`scan: ${scan.status} ${scan.text}`);
  await until(async () => (await s.core.store.getCelular(line.celularId))?.estado === 'activo', { what: 'celular activo after scan' });
}

export async function editCelular(s: TestServer, line: Line, body: Record<string, unknown>): Promise<ApiResponse> {
  const r = await api(s.url, 'POST', `/api/celular_editar.php?id=${line.celularId}`, { key: line.clientKey, json: body });
  if (r.status !== 200) throw new Error(`celular_editar: ${r.status} ${r.text}`);
  return r;
}

/** POST a send endpoint with the celular key as Bearer and a JSON body. */
export function send(
  s: TestServer,
  line: Line,
  path: string,
  body: Record<string, unknown>,
  opts: { form?: boolean; key?: string | null } = {},
): Promise<ApiResponse> {
  const key = opts.key === undefined ? line.celularKey : (opts.key ?? undefined);
  if (opts.form) {
    const form: Record<string, string> = {};
    for (const [k, v] of Object.entries(body)) form[k] = String(v);
    return api(s.url, 'POST', path, { key, form });
  }
  return api(s.url, 'POST', path, { key, json: body });
}

export const TEXT = '/api/mensaje_enviar_texto.php';

let textSeq = 0;
/** A text unlikely to repeat (no dedupe interplay). */
export const uniqueText = (prefix = 'hola'): string => `${prefix} ${++textSeq} ${Math.random().toString(36).slice(2, 8)}`;

// ---- waiting ----
export async function mensaje(s: TestServer, msgId: string): Promise<MensajeRow> {
  const m = await s.core.store.getMensaje(msgId);
  if (!m) throw new Error(`no message ${msgId}`);
  return m;
}

/** Waits until the stored message is in `estado` (or one of them) and returns it. */
export async function waitEstado(s: TestServer, msgId: string, estado: string | string[], ms = 5000): Promise<MensajeRow> {
  const want = Array.isArray(estado) ? estado : [estado];
  let last: MensajeRow | null = null;
  return until(
    async () => {
      last = await s.core.store.getMensaje(msgId);
      return last !== null && want.includes(last.estado) && last;
    },
    { what: () => `message ${msgId} to be ${want.join('|')} (last: ${last ? `${last.estado} ${last.error ?? ''}` : 'none'})`, timeoutMs: ms },
  );
}

/** The balances as GET /api/saldo.php reports them for the line. */
export async function saldos(s: TestServer, line: Line): Promise<{ global: number; celular: number; consumo: number }> {
  const r = await api(s.url, 'GET', '/api/saldo.php', { key: line.celularKey });
  expect(r.status, r.text).toBe(200);
  return { global: r.body.saldo_global, celular: r.body.saldo_celular, consumo: r.body.consumo_mes };
}

/** On SQLite, the lines-with-a-queue table its triggers keep (D-180) says exactly what the queue holds. */
export function queueLinesExact(s: TestServer): void {
  if (s.core.store.caps.name !== 'sqlite') return;
  const db = (s.core.store as unknown as { db: { prepare(sql: string): { all(): unknown[] } } }).db;
  const kept = db.prepare('SELECT celular_id, n, proximo FROM cola_lineas ORDER BY celular_id').all();
  expect(kept).toEqual(
    db.prepare('SELECT celular_id, COUNT(*) AS n, MIN(proximo_intento_at) AS proximo FROM cola GROUP BY celular_id ORDER BY celular_id').all(),
  );
}
