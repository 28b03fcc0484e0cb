import { createHmac } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateSecret, verifyDelivery } from '../../src/cli/webhook-listen.js';
import { api, startTestServer, type TestServer } from '../helpers/server.js';
import { numeroNuevo } from '../helpers/expect.js';
import { Cli, expectJsonOnly, expectOk, fields, rows, until, waitForText } from './helpers.js';

/**
 * `pasarela webhook ...` through the built CLI against a real server that
 * may deliver to loopback (allowPrivateUrls) and retries quickly.
 */
interface Hit {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

let s: TestServer;
let cli: Cli;
let clientKey: string;
let celularId: number;
let celularKey: string;
let receiver: Server;
let receiverUrl: string;
const hits: Hit[] = [];
/** What the receiver answers next (per path prefix `/fail` it always answers 500 until flipped). */
let failing = false;

const env = () => ({ PASARELA_KEY: clientKey });
const SECRET = 'un-secreto-de-prueba-de-32-chars!';

/** The Standard Webhooks check a receiver would run (raw-secret format), plus the hex one. */
function expectSigned(h: Hit, secret: string): void {
  const headers = Object.fromEntries(Object.entries(h.headers).map(([k, v]) => [k, String(v)]));
  expect(() => new Webhook(secret, { format: 'raw' }).verify(h.body, headers)).not.toThrow();
  expect(h.headers['x-service-signature']).toBe(`sha256=${createHmac('sha256', secret).update(h.body).digest('hex')}`);
  expect(h.headers['webhook-id']).toBe(JSON.parse(h.body).id);
}

async function webhookView(): Promise<any> {
  return (await api(s.url, 'GET', '/api/webhook.php', { key: clientKey })).body;
}

async function entrega(id: string): Promise<any> {
  const r = await api(s.url, 'GET', '/api/webhook_entregas.php?limit=50', { key: clientKey });
  return r.body.entregas.find((e: { id: string }) => e.id === id);
}

beforeAll(async () => {
  s = await startTestServer({ allowPrivateUrls: true, webhookRetryMs: 200, queue: { gapMinMs: 0, gapMaxMs: 0 } });
  const c = await api(s.url, 'POST', '/admin/clientes', { key: s.adminToken, json: { nombre: 'Hooks', email: 'h@example.com', saldo: 100 } });
  clientKey = c.body.api_key;
  const cel = await api(s.url, 'POST', '/api/celular_crear.php', { key: clientKey, json: { numero: numeroNuevo() } });
  celularId = cel.body.celular_id;
  celularKey = cel.body.api_key;
  receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      hits.push({ path: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      res.writeHead(failing ? 500 : 201, { 'content-type': 'text/plain' });
      res.end(failing ? 'boom' : 'created');
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  cli = new Cli(s.url);
});
afterAll(async () => {
  cli?.cleanup();
  receiver?.close();
  await s?.stop();
});

describe('webhook get/set/delete/restore', () => {
  it('get before any set: not configured', async () => {
    const b = expectJsonOnly(await cli.run(['webhook', 'get', '--json'], { env: env() }));
    expect(b).toMatchObject({ ok: true, configurado: false, url: '', eventos: [], has_secret: false });
    expect(fields(expectOk(await cli.run(['webhook', 'get'], { env: env() })))).toMatchObject({ configurado: 'false' });
  });

  it('set --generate-secret prints the secret once (in the JSON too); get never shows it', async () => {
    const b = expectJsonOnly(await cli.run(['webhook', 'set', `${receiverUrl}/a`, '--generate-secret', '--eventos', 'message.status,session.status', '--json'], { env: env() }));
    expect(b).toMatchObject({ ok: true, configurado: true, url: `${receiverUrl}/a`, has_secret: true, eventos: ['message.status', 'session.status'], activo: true });
    expect(b.secret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const plain = expectOk(await cli.run(['webhook', 'set', `${receiverUrl}/b`, '--generate-secret', '--inactivo'], { env: env() }));
    const f = fields(plain);
    expect(f).toMatchObject({ configurado: 'true', url: `${receiverUrl}/b`, eventos: 'all', activo: 'false', secret: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/) });
    const got = expectOk(await cli.run(['webhook', 'get'], { env: env() }));
    expect(got).not.toContain(f.secret);
    expect(fields(got)).toMatchObject({ url: `${receiverUrl}/b`, secret: 'set', activo: 'false' });
  });

  it('exit codes: 2 for bad flags or a URL that is not http(s), 3 for a celular key', async () => {
    const bad = await cli.run(['webhook', 'set', `${receiverUrl}/x`, '--eventos', 'message.status,nope'], { env: env() });
    expect(bad.exitCode).toBe(2);
    expect(bad.stderr).toContain('nope');
    expect((await cli.run(['webhook', 'set', `${receiverUrl}/x`, '--secret', 'abcdefghijkl', '--generate-secret'], { env: env() })).exitCode).toBe(2);
    const ftp = await cli.run(['webhook', 'set', 'ftp://example.com/x', '--json'], { env: env() });
    expect(ftp.exitCode).toBe(2);
    expect(ftp.stderr).toContain('url "ftp://example.com/x"');
    expect((await cli.run(['webhook', 'set', `${receiverUrl}/x`], { env: { PASARELA_KEY: celularKey } })).exitCode).toBe(3);
    // Reading is client-wide too: the URL may carry the receiver's token.
    const read = await cli.run(['webhook', 'get', '--json'], { env: { PASARELA_KEY: celularKey } });
    expect(read.exitCode).toBe(3);
    expect(read.stdout + read.stderr).not.toContain(`${receiverUrl}/b`);
    expect((await cli.run(['webhook', 'get'], { env: { PASARELA_KEY: 'WAC_1_nope' } })).exitCode).toBe(3);
  });

  it('delete needs --yes off a TTY (exit 2), then removes; restore puts it back', async () => {
    const no = await cli.run(['webhook', 'delete'], { env: env() });
    expect(no.exitCode).toBe(2);
    expect(no.stderr).toContain('--yes');
    expect((await webhookView()).configurado).toBe(true);
    const d = expectJsonOnly(await cli.run(['webhook', 'delete', '-y', '--json'], { env: env() }));
    expect(d).toMatchObject({ ok: true, configurado: false, eliminado: true });
    const again = await cli.run(['webhook', 'delete', '--yes'], { env: env() });
    expect(again.exitCode).toBe(0);
    expect(again.stderr).toContain('nothing removed');
    const r = expectJsonOnly(await cli.run(['webhook', 'restore', '--json'], { env: env() }));
    expect(r).toMatchObject({ ok: true, configurado: true, url: `${receiverUrl}/b` });
  });
});

describe('webhook test/deliveries/redeliver', () => {
  it('test sends a signed webhook.test event; deliveries shows it delivered', async () => {
    expectJsonOnly(await cli.run(['webhook', 'set', `${receiverUrl}/t`, '--secret', SECRET, '--eventos', 'messages.received', '--json'], { env: env() }));
    const t = expectJsonOnly(await cli.run(['webhook', 'test', '--json'], { env: env() }));
    expect(t).toMatchObject({ ok: true, id: expect.any(String) });
    await until(async () => hits.some((h) => h.headers['webhook-id'] === t.id));
    const hit = hits.find((h) => h.headers['webhook-id'] === t.id)!;
    expect(hit.path).toBe('/t');
    expect(hit.headers['x-service-event']).toBe('webhook.test');
    expect(JSON.parse(hit.body)).toMatchObject({ id: t.id, evento: 'webhook.test' });
    expectSigned(hit, SECRET);

    await until(async () => (await entrega(t.id))?.estado === 'entregado');
    const list = expectJsonOnly(await cli.run(['webhook', 'deliveries', '--limit', '5', '--json'], { env: env() }));
    const e = list.entregas.find((x: { id: string }) => x.id === t.id);
    expect(e).toMatchObject({ evento: 'webhook.test', estado: 'entregado', intentos: 1, intentos_detalle: [{ n: 1, status: 201 }] });
    const tsv = rows(expectOk(await cli.run(['webhook', 'deliveries'], { env: env() })));
    const row = tsv.find((r) => r[0] === t.id)!;
    expect(row.slice(0, 5)).toEqual([t.id, 'webhook.test', 'entregado', '1', '201']);
    // Plain `test` prints the id alone.
    const plainId = expectOk(await cli.run(['webhook', 'test'], { env: env() })).trim();
    expect(plainId).toMatch(/\S+/);
    await until(async () => (await entrega(plainId))?.estado === 'entregado');
  });

  it('a failing receiver is retried and recorded; redeliver sends the same id again now', async () => {
    failing = true;
    const t = expectJsonOnly(await cli.run(['webhook', 'test', '--json'], { env: env() }));
    await until(async () => ((await entrega(t.id))?.intentos ?? 0) >= 1);
    const e = await entrega(t.id);
    expect(e.estado).not.toBe('entregado');
    expect(e.intentos_detalle[0]).toMatchObject({ n: 1, status: 500 });
    expect(e.ultimo_error).toEqual(expect.any(String));
    failing = false;
    const r = expectJsonOnly(await cli.run(['webhook', 'redeliver', t.id, '--json'], { env: env() }));
    expect(r).toMatchObject({ ok: true, id: t.id, estado: 'pendiente' });
    await until(async () => (await entrega(t.id))?.estado === 'entregado');
    const ok = hits.filter((h) => h.headers['webhook-id'] === t.id);
    expect(ok.length).toBeGreaterThanOrEqual(2);
    expect(new Set(ok.map((h) => h.body)).size).toBe(1);
    for (const h of ok) expectSigned(h, SECRET);
    const missing = await cli.run(['webhook', 'redeliver', 'evt_nope'], { env: env() });
    expect(missing.exitCode).toBe(4);
  });
});

describe('webhook listen', () => {
  it('repoints the webhook, verifies and prints each event as NDJSON, forwards it, and restores on SIGINT', async () => {
    // The configuration listen replaces (with its own secret and events) must come back.
    expectJsonOnly(await cli.run(['webhook', 'set', `${receiverUrl}/previa`, '--secret', SECRET, '--eventos', 'message.status', '--json'], { env: env() }));
    const lines: any[] = [];
    const proc = cli.spawn(['webhook', 'listen', '--print-secret', '--forward-to', `${receiverUrl}/fwd`], { env: env(), timeoutMs: 90_000 });
    let buf = '';
    proc.stdout?.on('data', (c: Buffer) => {
      buf += String(c);
      let i;
      while ((i = buf.indexOf('\n')) >= 0) {
        lines.push(JSON.parse(buf.slice(0, i)));
        buf = buf.slice(i + 1);
      }
    });
    const ready = await waitForText(proc.stderr, /Ready:.*\n/);
    const secret = /\(secret: ([A-Za-z0-9_-]+)\)/.exec(ready)?.[1];
    const port = /to http:\/\/127\.0\.0\.1:(\d+)\//.exec(ready)?.[1];
    expect(secret, ready).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(port, ready).toBeDefined();
    const during = await webhookView();
    expect(during).toMatchObject({ url: `http://127.0.0.1:${port}/`, has_secret: true, eventos: ['all'], activo: true });

    // session.status, messages.received, message.status, webhook.test
    await api(s.url, 'POST', `/api/celular_qr.php?id=${celularId}`, { key: clientKey });
    await api(s.url, 'POST', '/admin/sim/scan', { key: s.adminToken, json: { celular_id: celularId } });
    const de = numeroNuevo();
    await api(s.url, 'POST', '/admin/sim/receive', { key: s.adminToken, json: { celular_id: celularId, de, texto: 'hola listen' } });
    const sent = await api(s.url, 'POST', '/api/mensaje_enviar_texto.php', { key: celularKey, json: { destinatario: '5215598765432', mensaje: 'hola', directo: 1 } });
    expect(sent.status, sent.text).toBe(200);
    const t = expectJsonOnly(await cli.run(['webhook', 'test', '--json'], { env: env() }));
    const seen = (evento: string) => lines.filter((l) => l.evento === evento);
    await until(async () => ['session.status', 'messages.received', 'message.status', 'webhook.test'].every((k) => seen(k).length > 0), 15_000);
    await until(async () => seen('session.status').some((l) => l.body.data.status === 'connected'));
    for (const l of lines) {
      expect(l, JSON.stringify(l)).toMatchObject({ verified: true, id: expect.any(String), evento: l.body.evento, forward: { status: 201 } });
      expect(l.body.id).toBe(l.id);
    }
    expect(seen('session.status').map((l) => l.body.data)).toContainEqual(expect.objectContaining({ celular_id: celularId, status: 'connected', estado: 'activo' }));
    expect(seen('messages.received')[0].body.data).toMatchObject({ celular_id: celularId, de, texto: 'hola listen' });
    expect(seen('message.status').some((l) => l.body.data.msg_id === sent.body.msg_id)).toBe(true);
    expect(seen('webhook.test')[0].id).toBe(t.id);

    // Forwarded with the same bytes and headers: a Standard Webhooks receiver accepts it.
    const fwd = hits.filter((h) => h.path === '/fwd');
    const fwdTest = fwd.find((h) => h.headers['webhook-id'] === t.id)!;
    expect(fwdTest, 'forwarded webhook.test').toBeDefined();
    expect(JSON.parse(fwdTest.body)).toEqual(seen('webhook.test')[0].body);
    expectSigned(fwdTest, secret!);
    // The gateway got the forward's 201, so the deliveries count as delivered.
    await until(async () => (await entrega(t.id))?.estado === 'entregado');

    // A forged delivery is refused with 401 and reported, not forwarded.
    const forged = JSON.stringify({ id: 'evt_forged', evento: 'message.status', data: {} });
    const ts = String(Math.floor(Date.now() / 1000));
    const bad = await api(`http://127.0.0.1:${port}`, 'POST', '/', {
      raw: forged,
      contentType: 'application/json',
      headers: { 'webhook-id': 'evt_forged', 'webhook-timestamp': ts, 'webhook-signature': 'v1,AAAA', 'x-service-signature': 'sha256=00' },
    });
    expect(bad.status).toBe(401);
    await until(async () => lines.some((l) => l.id === 'evt_forged'));
    expect(lines.find((l) => l.id === 'evt_forged')).toMatchObject({ verified: false, evento: 'message.status' });
    expect(fwd.some((h) => h.headers['webhook-id'] === 'evt_forged')).toBe(false);

    proc.kill('SIGINT');
    const r = await proc;
    expect(r.exitCode, String(r.stderr)).toBe(0);
    expect(String(r.stderr)).toContain('warning: rejected delivery evt_forged');
    expect(String(r.stderr)).toContain(`Restored the webhook: ${receiverUrl}/previa`);
    expect(String(r.stderr)).not.toContain(SECRET);
    expect(await webhookView()).toMatchObject({ configurado: true, url: `${receiverUrl}/previa`, has_secret: true, eventos: ['message.status'] });
  });

  it('with no earlier webhook, SIGTERM removes the one listen set; the secret stays hidden without --print-secret', async () => {
    expectJsonOnly(await cli.run(['webhook', 'delete', '--yes', '--json'], { env: env() }));
    const proc = cli.spawn(['webhook', 'listen', '--eventos', 'session.status'], { env: env(), timeoutMs: 60_000 });
    const ready = await waitForText(proc.stderr, /Ready:.*\n/);
    expect(ready).toContain('secret hidden');
    expect(await webhookView()).toMatchObject({ configurado: true, eventos: ['session.status'] });
    proc.kill('SIGTERM');
    const r = await proc;
    expect(r.exitCode, String(r.stderr)).toBe(0);
    expect(String(r.stdout)).toBe('');
    expect(await webhookView()).toMatchObject({ configurado: false, url: '' });
  });

  it('a server that refuses loopback URLs: exit 1 and says to use --allow-private-urls', async () => {
    const strict = await startTestServer();
    try {
      const c = await api(strict.url, 'POST', '/admin/clientes', { key: strict.adminToken, json: { nombre: 'Strict', email: 's@example.com' } });
      const r = await new Cli(strict.url).run(['webhook', 'listen'], { env: { PASARELA_KEY: c.body.api_key } });
      expect(r.exitCode).toBe(1);
      expect(r.stderr).toContain('--allow-private-urls');
      expect((await api(strict.url, 'GET', '/api/webhook.php', { key: c.body.api_key })).body.configurado).toBe(false);
    } finally {
      await strict.stop();
    }
  });

  it('verifyDelivery: both signatures, constant-time, five minutes of tolerance', () => {
    const secret = generateSecret();
    const body = Buffer.from(JSON.stringify({ id: 'evt_1', evento: 'webhook.test', data: {} }));
    const now = Math.floor(Date.now() / 1000);
    const sign = (ts: number, b = body) => {
      const wh = new Webhook(secret, { format: 'raw' });
      return {
        'webhook-id': 'evt_1',
        'webhook-timestamp': String(ts),
        'webhook-signature': wh.sign('evt_1', new Date(ts * 1000), b.toString()),
        'x-service-signature': `sha256=${createHmac('sha256', secret).update(b).digest('hex')}`,
      };
    };
    expect(verifyDelivery(secret, sign(now), body, now)).toEqual({ ok: true });
    expect(verifyDelivery(secret, sign(now - 299), body, now)).toEqual({ ok: true });
    expect(verifyDelivery(secret, sign(now - 301), body, now)).toMatchObject({ ok: false, reason: expect.stringContaining('old') });
    expect(verifyDelivery(secret, sign(now + 301), body, now)).toMatchObject({ ok: false });
    expect(verifyDelivery(secret, sign(now), Buffer.from(`${body} `), now)).toMatchObject({ ok: false });
    expect(verifyDelivery(secret, { ...sign(now), 'x-service-signature': 'sha256=00' }, body, now)).toMatchObject({ ok: false, reason: expect.stringContaining('X-Service-Signature') });
    expect(verifyDelivery(secret, { ...sign(now), 'webhook-signature': `v1,AAAA ${sign(now)['webhook-signature']}` }, body, now)).toEqual({ ok: true });
    expect(verifyDelivery(generateSecret(), sign(now), body, now)).toMatchObject({ ok: false });
    expect(verifyDelivery(secret, {}, body, now)).toMatchObject({ ok: false });
  });
});
