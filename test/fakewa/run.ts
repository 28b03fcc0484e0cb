// Runs the fake standalone (`npm run fakewa`) for a new user's walk and the bench: prints where it listens and
// serves a small control API on 127.0.0.1 (the phone's and the contacts' side). Port: FAKEWA_CONTROL_PORT or 7787.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startFakeNetwork, type FakeNetwork } from './index.js';

const HELP = `POST /scan {qr, numero}          the phone scans a QR the line showed
POST /code {numero, code}        the phone types a pairing code
POST /text {from, to, text}      a contact writes to a line → {id}
POST /receipt {line, id, kind: delivery|read, from}
POST /auto-receipts {on}
POST /logout {numero}            logout from the phone (device removed, 401)
POST /replace {numero}           another socket took over (440)
POST /restart {numero}           restart required (515)
GET  /contacts/:numero/received  what a contact decrypted
GET  /lines/:numero              connections, maxConcurrent, acks, unacked`;

async function body(req: IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  const text = Buffer.concat(chunks).toString() || '{}';
  return JSON.parse(text) as Record<string, unknown>;
}

const str = (b: Record<string, unknown>, k: string): string => {
  const v = b[k];
  if (typeof v !== 'string' || v === '') throw new BadRequest(`"${k}" is required (string)`);
  return v;
};

class BadRequest extends Error {}

async function route(fake: FakeNetwork, req: IncomingMessage): Promise<unknown> {
  const url = new URL(req.url ?? '/', 'http://127.0.0.1');
  const parts = url.pathname.split('/').filter(Boolean);
  if (req.method === 'GET' && parts.length === 0) return { help: HELP.split('\n') };
  if (req.method === 'GET' && parts[0] === 'contacts' && parts[2] === 'received') {
    return fake
      .contact(parts[1]!)
      .received()
      .map((m) => ({ id: m.id, from: m.from, message: m.message, mediaBytes: m.media?.length }));
  }
  if (req.method === 'GET' && parts[0] === 'lines' && parts[1]) {
    const l = parts[1];
    return { connections: fake.connections(l), maxConcurrent: fake.maxConcurrent(l), acks: fake.acks(l), unacked: fake.unacked(l) };
  }
  if (req.method !== 'POST') return undefined;
  const b = await body(req);
  switch (parts[0]) {
    case 'scan':
      return fake.scanQr(str(b, 'qr'), str(b, 'numero')).then(() => ({ ok: true }));
    case 'code':
      return fake.enterPairingCode(str(b, 'numero'), str(b, 'code')).then(() => ({ ok: true }));
    case 'text':
      return { id: await fake.sendText(str(b, 'from'), str(b, 'to'), str(b, 'text')) };
    case 'receipt': {
      const kind = str(b, 'kind');
      if (kind !== 'delivery' && kind !== 'read') throw new BadRequest('"kind" is delivery or read');
      await fake.receipt(str(b, 'line'), str(b, 'id'), kind, str(b, 'from'));
      return { ok: true };
    }
    case 'auto-receipts':
      fake.autoReceipts(b.on !== false);
      return { ok: true };
    case 'logout':
      fake.logoutFromPhone(str(b, 'numero'));
      return { ok: true };
    case 'replace':
      fake.replaced(str(b, 'numero'));
      return { ok: true };
    case 'restart':
      fake.restartRequired(str(b, 'numero'));
      return { ok: true };
    default:
      return undefined;
  }
}

const fake = await startFakeNetwork({
  stateFile: process.env.FAKEWA_STATE_FILE,
  port: process.env.FAKEWA_PORT ? Number(process.env.FAKEWA_PORT) : undefined,
  log: (l) => console.log(l),
});
const control = createServer((req: IncomingMessage, res: ServerResponse) => {
  route(fake, req).then(
    (out) => {
      res.writeHead(out === undefined ? 404 : 200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(out ?? { error: 'no such route', help: HELP.split('\n') }));
    },
    (err: unknown) => {
      res.writeHead(err instanceof BadRequest || err instanceof SyntaxError ? 400 : 409, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: err instanceof Error ? err.message : String(err) }));
    },
  );
});
const controlPort = Number(process.env.FAKEWA_CONTROL_PORT ?? 7787);
control.listen(controlPort, '127.0.0.1', () => {
  console.log(`fakewa wsUrl       ${fake.wsUrl}`);
  console.log(`fakewa preload     ${fake.preloadFile}   (node --import <this>)`);
  console.log(`fakewa media CA    ${fake.caFile}   (NODE_EXTRA_CA_CERTS=<this>)`);
  console.log(`fakewa control API http://127.0.0.1:${(control.address() as AddressInfo).port}/`);
  // The preload through NODE_OPTIONS reaches `serve` under npm too; the CA lets the engine upload media to the fake.
  console.log(
    `pasarela: NODE_OPTIONS=--import=${fake.preloadFile} NODE_EXTRA_CA_CERTS=${fake.caFile} npm start -- --gateway baileys --baileys-ws-url ${fake.wsUrl}`,
  );
});
const stop = (): void => {
  control.close();
  void fake.close().then(() => process.exit(0));
};
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
