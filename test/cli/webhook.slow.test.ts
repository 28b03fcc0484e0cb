import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ManualClock } from '../../src/core/time/clock.js';
import { createServer } from 'node:http';
import { numeroNuevo } from '../helpers/expect.js';
import { api, startTestServer, type TestServer } from '../helpers/server.js';
import { entrega as entregaOf, expectSigned, SECRET, startWebhookWorld, webhookView as webhookViewOf, type Hit, type WebhookWorld } from './webhook-fixture.js';
import { BIN, Cli, expectJsonOnly, until, waitForText } from './helpers.js';

/**
 * `pasarela webhook ...` through the built CLI against a real server that
 * may deliver to loopback (allowPrivateUrls) and retries quickly.
 */
let w: WebhookWorld;
let s: TestServer;
let cli: Cli;
let clientKey: string;
let celularId: number;
let celularKey: string;
let receiverUrl: string;
let hits: Hit[];

const env = () => ({ PASARELA_KEY: clientKey });
const webhookView = () => webhookViewOf(w);
const entrega = (id: string) => entregaOf(w, id);

beforeAll(async () => {
  w = await startWebhookWorld();
  ({ s, clientKey, celularId, celularKey, receiverUrl, hits } = w);
  cli = new Cli(w.s.url);
});
afterAll(async () => {
  cli?.cleanup();
  w?.receiver.close();
  await s?.stop();
});

describe('webhook listen', () => {
  /** Collects the NDJSON lines a listen prints on stdout. */
  function ndjson(proc: ReturnType<Cli['spawn']>): any[] {
    const lines: any[] = [];
    let buf = '';
    proc.stdout?.on('data', (c: Buffer) => {
      buf += String(c);
      let i;
      while ((i = buf.indexOf('\n')) >= 0) {
        lines.push(JSON.parse(buf.slice(0, i)));
        buf = buf.slice(i + 1);
      }
    });
    return lines;
  }
  const listeners = async (srv: TestServer, key: string): Promise<any[]> => (await api(srv.url, 'GET', '/api/webhook_escuchas.php', { key })).body.escuchas;

  it('registers a listener beside the webhook (left untouched, still receiving), verifies and prints each event as NDJSON, forwards it, and removes the listener on SIGINT', async () => {
    // The real configuration, with its own secret and events: it must neither change nor stop receiving.
    expectJsonOnly(await cli.run(['webhook', 'set', `${receiverUrl}/previa`, '--secret', SECRET, '--eventos', 'message.status', '--json'], { env: env() }));
    const before = await webhookView();
    const proc = cli.spawn(['webhook', 'listen', '--print-secret', '--forward-to', `${receiverUrl}/fwd`], { env: env(), timeoutMs: 90_000 });
    const lines = ndjson(proc);
    const ready = await waitForText(proc.stderr, /Ready:.*\n/);
    const secret = /\(secret: ([A-Za-z0-9_-]+)\)/.exec(ready)?.[1];
    const port = /to http:\/\/127\.0\.0\.1:(\d+)\//.exec(ready)?.[1];
    expect(secret, ready).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(secret).not.toBe(SECRET);
    expect(port, ready).toBeDefined();
    expect(await webhookView()).toEqual(before);
    expect(await listeners(s, clientKey)).toEqual([
      expect.objectContaining({ url: `http://127.0.0.1:${port}/`, eventos: ['all'], id: expect.stringMatching(/^esc_/) }),
    ]);

    // session.status, messages.received, message.status, webhook.test
    await api(s.url, 'POST', `/api/celular_qr.php?id=${celularId}`, { key: clientKey });
    await api(s.url, 'POST', '/admin/sim/scan', { key: s.adminToken, json: { celular_id: celularId } });
    const de = numeroNuevo();
    await api(s.url, 'POST', '/admin/sim/receive', { key: s.adminToken, json: { celular_id: celularId, de, texto: 'hola listen' } });
    const sent = await api(s.url, 'POST', '/api/mensaje_enviar_texto.php', {
      key: celularKey,
      json: { destinatario: '5215598765432', mensaje: 'hola', directo: 1 },
    });
    expect(sent.status, sent.text).toBe(200);
    const t = expectJsonOnly(await cli.run(['webhook', 'test', '--json'], { env: env() }));
    const seen = (evento: string) => lines.filter((l) => l.evento === evento);
    await until(async () => ['session.status', 'messages.received', 'message.status', 'webhook.test'].every((k) => seen(k).length > 0), 15_000);
    await until(async () => seen('session.status').some((l) => l.body.data.status === 'connected'));
    for (const l of lines) {
      expect(l, JSON.stringify(l)).toMatchObject({ verified: true, id: expect.any(String), evento: l.body.evento, forward: { status: 201 } });
      expect(l.body.id).toBe(l.id);
    }
    expect(seen('session.status').map((l) => l.body.data)).toContainEqual(
      expect.objectContaining({ celular_id: celularId, status: 'connected', estado: 'activo' }),
    );
    expect(seen('messages.received')[0].body.data).toMatchObject({ celular_id: celularId, de, texto: 'hola listen' });
    expect(seen('message.status').some((l) => l.body.data.msg_id === sent.body.msg_id)).toBe(true);
    expect(seen('webhook.test')[0].id).toBe(t.id);

    // Forwarded with the same bytes and headers: a Standard Webhooks receiver accepts it with the listener's secret.
    const fwd = hits.filter((h) => h.path === '/fwd');
    const fwdTest = fwd.find((h) => h.headers['webhook-id'] === t.id)!;
    expect(fwdTest, 'forwarded webhook.test').toBeDefined();
    expect(JSON.parse(fwdTest.body)).toEqual(seen('webhook.test')[0].body);
    expectSigned(fwdTest, secret!);
    // The real webhook got its own deliveries meanwhile, same ids and bodies, signed with its own secret.
    await until(async () => (await entrega(t.id))?.estado === 'entregado');
    const real = hits.filter((h) => h.path === '/previa');
    const realTest = real.find((h) => h.headers['webhook-id'] === t.id)!;
    expect(realTest.body).toBe(fwdTest.body);
    expectSigned(realTest, SECRET);
    await until(async () => hits.some((h) => h.path === '/previa' && JSON.parse(h.body).data?.msg_id === sent.body.msg_id));
    for (const h of hits.filter((x) => x.path === '/previa')) expect(['message.status', 'webhook.test']).toContain(h.headers['x-service-event']);

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
    expect(String(r.stderr)).toMatch(/Removed the listener esc_[0-9a-f]+; the webhook configuration was not touched/);
    expect(String(r.stderr)).not.toContain(SECRET);
    // Gone at once; the configuration is as it was.
    expect(await listeners(s, clientKey)).toEqual([]);
    expect(await webhookView()).toEqual(before);
  });

  it('without a webhook configuration, SIGTERM removes the listener; the secret stays hidden without --print-secret', async () => {
    expectJsonOnly(await cli.run(['webhook', 'delete', '--yes', '--json'], { env: env() }));
    const proc = cli.spawn(['webhook', 'listen', '--eventos', 'session.status'], { env: env(), timeoutMs: 60_000 });
    const ready = await waitForText(proc.stderr, /Ready:.*\n/);
    expect(ready).toContain('secret hidden');
    expect(await listeners(s, clientKey)).toEqual([expect.objectContaining({ eventos: ['session.status'] })]);
    expect(await webhookView()).toMatchObject({ configurado: false });
    proc.kill('SIGTERM');
    const r = await proc;
    expect(r.exitCode, String(r.stderr)).toBe(0);
    expect(String(r.stdout)).toBe('');
    expect(await listeners(s, clientKey)).toEqual([]);
    expect(await webhookView()).toMatchObject({ configurado: false, url: '' });
  });

  it('`webhook listen | jq` whose reader went away: the listener is removed before the process ends (exit 0)', async () => {
    const child = spawn(process.execPath, [BIN, 'webhook', 'listen', '--json'], { env: cli.env(env()), stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.destroy(); // the reader is gone: the first event printed fails with EPIPE
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => (stderr += String(c)));
    const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
    await until(async () => /Ready:/.test(stderr), 30_000);
    // An event of the first test's message (its receipts come later) may reach this listener first and close it:
    // then the test event finds no destination (409, no configuration since the last test) and is not needed.
    const id = /Listener (esc_\w+)/.exec(stderr)?.[1];
    expect(id, stderr).toBeDefined();
    const test = await api(s.url, 'POST', '/api/webhook_test.php', { key: clientKey });
    if (test.status !== 200) expect([test.status, stderr]).toEqual([409, expect.stringContaining('output closed')]);
    expect(await exited, stderr).toBe(0);
    expect(stderr).toContain(`output closed: removing the listener ${id}`);
    expect(stderr).toMatch(/Removed the listener/);
    expect(await listeners(s, clientKey)).toEqual([]);
  });

  it('on the default server (no --allow-private-urls) it works; beyond 5 live listeners it exits 1 naming the limit', async () => {
    const strict = await startTestServer();
    try {
      const c = await api(strict.url, 'POST', '/admin/clientes', { key: strict.adminToken, json: { nombre: 'Strict', email: 's@example.com' } });
      const key = c.body.api_key;
      const strictCli = new Cli(strict.url);
      const proc = strictCli.spawn(['webhook', 'listen'], { env: { PASARELA_KEY: key }, timeoutMs: 60_000 });
      const lines = ndjson(proc);
      await waitForText(proc.stderr, /Ready:.*\n/);
      const t = expectJsonOnly(await strictCli.run(['webhook', 'test', '--json'], { env: { PASARELA_KEY: key } }));
      await until(async () => lines.some((l) => l.id === t.id));
      expect(lines.find((l) => l.id === t.id)).toMatchObject({ verified: true, evento: 'webhook.test' });
      // Four more through the API make five: a second listen is refused.
      for (let i = 0; i < 4; i++)
        expect((await api(strict.url, 'POST', '/api/webhook_escuchas.php', { key, json: { url: `${receiverUrl}/s${i}` } })).status).toBe(201);
      const sixth = await strictCli.run(['webhook', 'listen'], { env: { PASARELA_KEY: key } });
      expect(sixth.exitCode).toBe(1);
      expect(sixth.stderr).toMatch(/5 live webhook listeners/);
      proc.kill('SIGINT');
      expect((await proc).exitCode).toBe(0);
      expect(await listeners(strict, key)).toHaveLength(4);
      expect((await api(strict.url, 'GET', '/api/webhook.php', { key })).body.configurado).toBe(false);
    } finally {
      await strict.stop();
    }
  });

  describe('leases', () => {
    let short: TestServer;
    let clock: ManualClock;
    let key: string;
    let shortCli: Cli;
    beforeAll(async () => {
      // A 900 ms lease, renewed every 300 ms; the server's clock moves only when told.
      short = await startTestServer({ allowPrivateUrls: true, webhookListenLeaseMs: 900 });
      clock = short.clock as ManualClock;
      const c = await api(short.url, 'POST', '/admin/clientes', { key: short.adminToken, json: { nombre: 'Lease', email: 'l@example.com' } });
      key = c.body.api_key;
      shortCli = new Cli(short.url);
      expect((await api(short.url, 'POST', '/api/webhook.php', { key, json: { url: `${receiverUrl}/k-real` } })).status).toBe(200);
    });
    afterAll(async () => {
      await short?.stop();
    });

    it('killed with SIGKILL: the listener stays until its lease runs out, then is gone, and nothing more goes to its port', async () => {
      const proc = shortCli.spawn(['webhook', 'listen'], { env: { PASARELA_KEY: key }, timeoutMs: 60_000 });
      const ready = await waitForText(proc.stderr, /Ready:.*\n/);
      const port = Number(/to http:\/\/127\.0\.0\.1:(\d+)\//.exec(ready)?.[1]);
      const [l] = await listeners(short, key);
      proc.kill('SIGKILL');
      await proc;
      expect((await listeners(short, key)).map((e) => e.id)).toEqual([l.id]);
      clock.advance(901);
      expect(await listeners(short, key)).toEqual([]);
      expect((await api(short.url, 'POST', `/api/webhook_escuchas_renovar.php?id=${l.id}`, { key })).body.api_codigo).toBe(609);
      // Something else now on the dead listener's port would see any copy still sent there.
      const squatter: string[] = [];
      const sq = createServer((req, res) => {
        squatter.push(String(req.headers['webhook-id']));
        res.end();
      });
      await new Promise<void>((r) => sq.listen(port, '127.0.0.1', r));
      try {
        const t1 = expectJsonOnly(await shortCli.run(['webhook', 'test', '--json'], { env: { PASARELA_KEY: key } }));
        await until(async () => hits.some((h) => h.path === '/k-real' && h.headers['webhook-id'] === t1.id));
        // A listener added afterwards gets the next event: by then a copy for the dead one would have been sent.
        expect((await api(short.url, 'POST', '/api/webhook_escuchas.php', { key, json: { url: `${receiverUrl}/k-next` } })).status).toBe(201);
        const t2 = expectJsonOnly(await shortCli.run(['webhook', 'test', '--json'], { env: { PASARELA_KEY: key } }));
        await until(async () => hits.some((h) => h.path === '/k-next' && h.headers['webhook-id'] === t2.id));
        expect(squatter).toEqual([]);
      } finally {
        sq.close();
      }
      clock.advance(901);
    });

    it('a listen whose lease ran out while it was suspended registers again (new secret) and keeps receiving', async () => {
      const proc = shortCli.spawn(['webhook', 'listen', '--print-secret'], { env: { PASARELA_KEY: key }, timeoutMs: 60_000 });
      const lines = ndjson(proc);
      let err = '';
      proc.stderr?.on('data', (c: Buffer) => (err += String(c)));
      await until(async () => /Ready:.*\n/.test(err));
      const first = /\(secret: ([A-Za-z0-9_-]+)\)/.exec(err)![1];
      const [l] = await listeners(short, key);
      // Time jumps past the lease (as after a suspend) until the listen notices at its next renewal.
      await until(
        async () => {
          if (/registered again/.test(err)) return true;
          clock.advance(901);
          return false;
        },
        10_000,
        50,
      );
      expect(err).toMatch(
        new RegExp(
          `warning: the listener ${l.id} had expired \\(was this process suspended\\?\\); registered again as esc_[0-9a-f]+ \\(secret: [A-Za-z0-9_-]{43}\\)`,
        ),
      );
      expect(err).not.toMatch(new RegExp(`registered again .*\\(secret: ${first}\\)`));
      await until(async () => (await listeners(short, key)).length === 1);
      const t = expectJsonOnly(await shortCli.run(['webhook', 'test', '--json'], { env: { PASARELA_KEY: key } }));
      await until(async () => lines.some((x) => x.id === t.id));
      expect(lines.find((x) => x.id === t.id)).toMatchObject({ verified: true });
      proc.kill('SIGINT');
      expect((await proc).exitCode).toBe(0);
      expect(await listeners(short, key)).toEqual([]);
    });
  });
});
