// The fake's media host: HTTPS on 127.0.0.1 with a self-signed certificate (certificate.ts); Baileys hardcodes https://.
import { createDecipheriv, createHash, createHmac, hkdfSync, randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { selfSignedCertificate } from './certificate.js';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';

export interface MediaHost {
  host: string; // 127.0.0.1:port, as media_conn hands it out
  caFile: string;
  ca: string;
  blobs: Map<string, Buffer>; // direct path → encrypted blob
  uploads: Array<{ path: string; auth: string | null; bytes: number }>;
  close(): Promise<void>;
}

export async function startMediaHost(dir: string, auth: string): Promise<MediaHost> {
  const { key, cert } = selfSignedCertificate();
  const certFile = join(dir, 'media-ca.pem');
  writeFileSync(certFile, cert);
  const blobs = new Map<string, Buffer>();
  const uploads: MediaHost['uploads'] = [];
  const server: Server = createServer({ key, cert }, (req, res) => {
    const url = new URL(req.url ?? '/', 'https://127.0.0.1');
    if (req.method === 'GET') {
      const blob = blobs.get(url.pathname);
      res.writeHead(blob ? 200 : 404, { 'content-type': 'application/octet-stream' }).end(blob);
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      uploads.push({ path: url.pathname, auth: url.searchParams.get('auth'), bytes: body.length });
      if (url.searchParams.get('auth') !== auth) {
        res.writeHead(401, { 'content-type': 'application/json' }).end('{"error":"bad auth"}');
        return;
      }
      const direct = `/v/t62.7119-24/fake-${randomBytes(8).toString('hex')}.enc`;
      blobs.set(direct, body);
      const addr = server.address() as AddressInfo;
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ url: `https://127.0.0.1:${addr.port}${direct}`, direct_path: direct }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    host: `127.0.0.1:${port}`,
    caFile: certFile,
    ca: cert,
    blobs,
    uploads,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

const MEDIA_INFO: Record<string, string> = {
  image: 'WhatsApp Image Keys',
  sticker: 'WhatsApp Image Keys',
  video: 'WhatsApp Video Keys',
  audio: 'WhatsApp Audio Keys',
  document: 'WhatsApp Document Keys',
};

/** Decrypts a media blob as the recipient's phone would: keys from the media key, MAC, then both hashes. */
export function decryptMedia(blob: Buffer, kind: string, mediaKey: Uint8Array, fileEncSha256?: Uint8Array | null, fileSha256?: Uint8Array | null): Buffer {
  const info = MEDIA_INFO[kind];
  if (!info) throw new Error(`media kind ${kind} not known to the fake`);
  const keys = Buffer.from(hkdf(Buffer.from(mediaKey), info));
  const iv = keys.subarray(0, 16);
  const cipherKey = keys.subarray(16, 48);
  const macKey = keys.subarray(48, 80);
  const body = blob.subarray(0, blob.length - 10);
  const mac = blob.subarray(blob.length - 10);
  const want = createHmac('sha256', macKey).update(iv).update(body).digest().subarray(0, 10);
  if (!want.equals(mac)) throw new Error('media MAC mismatch');
  if (fileEncSha256 && !createHash('sha256').update(blob).digest().equals(Buffer.from(fileEncSha256))) throw new Error('fileEncSha256 mismatch');
  const d = createDecipheriv('aes-256-cbc', cipherKey, iv);
  const plain = Buffer.concat([d.update(body), d.final()]);
  if (fileSha256 && !createHash('sha256').update(plain).digest().equals(Buffer.from(fileSha256))) throw new Error('fileSha256 mismatch');
  return plain;
}

// HKDF-SHA256, empty salt, 112 bytes: Baileys' getMediaKeys.
const hkdf = (key: Buffer, info: string): ArrayBuffer => hkdfSync('sha256', key, Buffer.alloc(0), info, 112);
