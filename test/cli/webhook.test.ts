import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FORWARD_TIMEOUT_MS, verifyDelivery } from '../../src/cli/webhook-listen.js';
import { generateSecret } from '../../src/webhooks/sign.js';
import { LISTENER_TIMEOUT_MS } from '../../src/webhooks/dispatcher.js';
import { createHmac } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import type { TestServer } from '../helpers/server.js';
import { entrega as entregaOf, expectSigned, SECRET, startWebhookWorld, webhookView as webhookViewOf, type Hit, type WebhookWorld } from './webhook-fixture.js';
import { injectTransport } from '../helpers/inject-http.js';
import { Cli, expectJsonOnly, expectCleanExit, fields, rows, until } from './helpers.js';

/**
 * `pasarela webhook ...` through the built CLI against a real server that
 * may deliver to loopback (allowPrivateUrls) and retries quickly.
 */
let w: WebhookWorld;
let s: TestServer;
let cli: Cli;
let clientKey: string;

let celularKey: string;
let receiverUrl: string;
let hits: Hit[];
/** What the receiver answers next: 500 while true. */
let failing = false;

const env = () => ({ PASARELA_KEY: clientKey });
const webhookView = () => webhookViewOf(w);
const entrega = (id: string) => entregaOf(w, id);

beforeAll(async () => {
  w = await startWebhookWorld(() => failing);
  ({ s, clientKey, celularKey, receiverUrl, hits } = w);
  cli = new Cli(w.s.url, injectTransport(w.s.app));
});
afterAll(async () => {
  cli?.cleanup();
  w?.receiver.close();
  await s?.stop();
});

describe('webhook get/set/delete/restore', () => {
  it('get before any set: not configured', async () => {
    const b = expectJsonOnly(await cli.run(['webhook', 'get', '--json'], { env: env() }));
    expect(b).toMatchObject({ ok: true, configurado: false, url: '', eventos: [], has_secret: false });
    expect(fields(expectCleanExit(await cli.run(['webhook', 'get'], { env: env() })))).toMatchObject({ configurado: 'false' });
  });

  it('set --generate-secret prints the secret once (in the JSON too); get never shows it', async () => {
    const b = expectJsonOnly(
      await cli.run(['webhook', 'set', `${receiverUrl}/a`, '--generate-secret', '--eventos', 'message.status,session.status', '--json'], { env: env() }),
    );
    expect(b).toMatchObject({
      ok: true,
      configurado: true,
      url: `${receiverUrl}/a`,
      has_secret: true,
      eventos: ['message.status', 'session.status'],
      activo: true,
    });
    expect(b.secret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const plain = expectCleanExit(await cli.run(['webhook', 'set', `${receiverUrl}/b`, '--generate-secret', '--inactivo'], { env: env() }));
    const f = fields(plain);
    expect(f).toMatchObject({
      configurado: 'true',
      url: `${receiverUrl}/b`,
      eventos: 'all',
      activo: 'false',
      secret: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
    });
    const got = expectCleanExit(await cli.run(['webhook', 'get'], { env: env() }));
    expect(got).not.toContain(f.secret);
    expect(fields(got)).toMatchObject({ url: `${receiverUrl}/b`, secret: 'set', activo: 'false' });
  });

  it('set to a host that does not resolve now: saved (exit 0) with the warning on stderr, aviso in the JSON; get shows the URL', async () => {
    const url = 'https://hooks.pasarela-test.invalid/in';
    const r = await cli.run(['webhook', 'set', url, '--inactivo'], { env: env() });
    expectCleanExit(r);
    expect(r.stderr).toMatch(/warning: the host hooks\.pasarela-test\.invalid does not resolve now/);
    const j = expectJsonOnly(await cli.run(['webhook', 'set', url, '--inactivo', '--json'], { env: env() }));
    expect(j.aviso).toMatch(/does not resolve now/);
    expect(expectJsonOnly(await cli.run(['webhook', 'get', '--json'], { env: env() }))).toMatchObject({ url, activo: false });
    // Undo both sets: the tests below expect the configuration before them.
    for (let i = 0; i < 2; i++) expectCleanExit(await cli.run(['webhook', 'restore'], { env: env() }));
  });

  it('exit codes: 2 for bad flags or a URL that is not http(s), 3 for a celular key', async () => {
    const bad = await cli.run(['webhook', 'set', `${receiverUrl}/x`, '--eventos', 'message.status,nope'], { env: env() });
    expect(bad.exitCode).toBe(2);
    expect(bad.stderr).toContain('nope');
    expect(
      (await cli.run(['webhook', 'set', `${receiverUrl}/x`, '--secret', 'abcdefghijkl-mnopqrstuvwxyz', '--generate-secret'], { env: env() })).exitCode,
    ).toBe(2);
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
    const tsv = rows(expectCleanExit(await cli.run(['webhook', 'deliveries'], { env: env() })));
    const row = tsv.find((r) => r[0] === t.id)!;
    expect(row.slice(0, 5)).toEqual([t.id, 'webhook.test', 'entregado', '1', '201']);
    // Plain `test` prints the id alone.
    const plainId = expectCleanExit(await cli.run(['webhook', 'test'], { env: env() })).trim();
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
  it('--forward-to gives up on the app (and answers 502) a second before the server stops waiting for the copy, so a slow app is not sent the event again', () => {
    expect(FORWARD_TIMEOUT_MS + 1000).toBeLessThanOrEqual(LISTENER_TIMEOUT_MS);
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
    expect(verifyDelivery(secret, sign(now), Buffer.from(`${body.toString('utf8')} `), now)).toMatchObject({ ok: false });
    expect(verifyDelivery(secret, { ...sign(now), 'x-service-signature': 'sha256=00' }, body, now)).toMatchObject({
      ok: false,
      reason: expect.stringContaining('X-Service-Signature'),
    });
    expect(verifyDelivery(secret, { ...sign(now), 'webhook-signature': `v1,AAAA ${sign(now)['webhook-signature']}` }, body, now)).toEqual({ ok: true });
    expect(verifyDelivery(generateSecret(), sign(now), body, now)).toMatchObject({ ok: false });
    expect(verifyDelivery(secret, {}, body, now)).toMatchObject({ ok: false });
  });

  it('verifyDelivery names what failed, as before it used the shared verify (webhooks/sign.ts)', () => {
    const secret = generateSecret();
    const body = Buffer.from(JSON.stringify({ id: 'evt_2', evento: 'webhook.test', data: {} }));
    const now = Math.floor(Date.now() / 1000);
    const signed = {
      'webhook-id': 'evt_2',
      'webhook-timestamp': String(now),
      'webhook-signature': `v1,${createHmac('sha256', secret).update(`evt_2.${now}.`).update(body).digest('base64')}`,
      'x-service-signature': `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`,
    };
    const reason = (h: Record<string, string>) => {
      const v = verifyDelivery(secret, h, body, now);
      return v.ok ? 'ok' : v.reason;
    };
    expect(reason(signed)).toBe('ok');
    // The hex signature is compared trimmed and in lower case.
    expect(reason({ ...signed, 'x-service-signature': ` ${signed['x-service-signature'].toUpperCase().replace('SHA256=', 'sha256=')} ` })).toBe('ok');
    expect(reason({ ...signed, 'x-service-signature': 'sha256=00' })).toBe('X-Service-Signature does not match');
    expect(reason({ ...signed, 'x-service-signature': ' ' })).toBe('X-Service-Signature does not match');
    expect(reason({ ...signed, 'webhook-signature': 'v1,AAAA' })).toBe('webhook-signature does not match');
    expect(reason({ ...signed, 'webhook-signature': 'v1,AAAA', 'x-service-signature': 'sha256=00' })).toBe(
      'neither X-Service-Signature nor webhook-signature matches the secret',
    );
    expect(reason({ ...signed, 'webhook-timestamp': 'soon' })).toBe('webhook-timestamp is not a number');
    expect(reason({ ...signed, 'webhook-timestamp': String(now + 400) })).toBe('webhook-timestamp is 400 s in the future');
    const { 'webhook-id': _, ...noId } = signed;
    expect(reason(noId)).toBe('missing webhook-id, webhook-timestamp, webhook-signature or X-Service-Signature');
  });
});
