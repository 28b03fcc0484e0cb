import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock, type ManualClock } from '../../src/core/time/clock.js';
import { pgSchema } from '../contract/adapters.js';
import { api, startTestServer, tempDir, type ApiResponse, type TestServer } from '../helpers/server.js';
import { describeWith, postgres, schemaUrl } from '../helpers/services.js';
import { expectError, expectOk } from '../helpers/expect.js';
import { admin, linkedLine, numeroNuevo, send, TEXT, uniqueText, type Line } from './send-helpers.js';
import { entregas, expectEnvelope, expectSigned, getWebhook, setWebhook, startReceiver, waitFor, type Hit, type Receiver } from './webhook-helpers.js';

/**
 * Webhook listeners (`POST /api/webhook_escuchas.php`, what `webhook listen`
 * registers) over real HTTP: copies of the client's events, with the real
 * deliveries' ids and bodies, signed with the listener's own secret, while
 * the real configuration is untouched and keeps receiving; leases renewed,
 * expired (the injected clock moved) or removed; the per-client limit; the
 * loopback rule; and a listener registered on one node getting the events
 * another node produced (PostgreSQL).
 */

const SECRET = 'pasarela-listen-real-secret-0123456789';
const LEASE = 30_000;

let s: TestServer;
let R: Receiver;

const register = (srv: TestServer, key: string, json: Record<string, unknown>, headers?: Record<string, string>) =>
  api(srv.url, 'POST', '/api/webhook_escuchas.php', { key, json, headers });
const renew = (srv: TestServer, key: string, id: string) => api(srv.url, 'POST', `/api/webhook_escuchas_renovar.php?id=${id}`, { key });
const list = async (srv: TestServer, key: string): Promise<any[]> => {
  const r = await api(srv.url, 'GET', '/api/webhook_escuchas.php', { key });
  expectOk(r);
  return r.body.escuchas;
};
const testEvent = async (srv: TestServer, key: string): Promise<string> => {
  const t = await api(srv.url, 'POST', '/api/webhook_test.php', { key });
  expectOk(t);
  return t.body.id as string;
};
const at = (path: string) => (h: Hit) => h.path === path;
const hitsAt = (rec: Receiver, path: string) => rec.hits.filter(at(path));
const ids = (hits: Hit[]) => hits.map((h) => h.headers['webhook-id']);

/** Registers a listener and checks the answer's shape; the listener and its secret. */
async function listener(srv: TestServer, key: string, url: string, eventos?: string[]): Promise<{ id: string; secret: string; r: ApiResponse }> {
  const r = await register(srv, key, { url, ...(eventos ? { eventos } : {}) });
  expectOk(r, 201);
  return { id: r.body.escucha.id, secret: r.body.secret, r };
}

beforeAll(async () => {
  R = await startReceiver(200);
  // A failing listener's copies are retried after 20 and 80 ms instead of 250 ms and 1 s.
  s = await startTestServer({ allowPrivateUrls: true, simDeliveryMs: 30, simReadMs: 60, webhookListenerRetryMs: 20, queue: { gapMinMs: 0, gapMaxMs: 0 } });
});
afterAll(async () => {
  await R?.close();
  await s?.stop();
});

describe('copies next to the real webhook', () => {
  it('the real webhook keeps receiving every event, untouched; each listener gets a copy of what it subscribes to, same id and body, signed with its own secret', async () => {
    const L = await linkedLine(s);
    expectOk(await setWebhook(s, L.clientKey, { url: `${R.url}/real`, secret: SECRET, eventos: ['all'] }));
    const before = (await getWebhook(s, L.clientKey)).body;

    const all = await listener(s, L.clientKey, `${R.url}/todo`);
    expect(all.r.body.escucha).toEqual({
      id: expect.stringMatching(/^esc_[0-9a-f]{32}$/),
      url: `${R.url}/todo`,
      eventos: ['all'],
      created_at: expect.any(String),
      expira_at: new Date(Date.parse(all.r.body.escucha.created_at) + LEASE).toISOString(),
      vigencia_ms: LEASE,
    });
    expect(all.secret).toMatch(/^[A-Za-z0-9_][A-Za-z0-9_-]{42}$/);
    const inbound = await listener(s, L.clientKey, `${R.url}/entrantes`, ['messages.received']);
    expect(inbound.secret).not.toBe(all.secret);
    // Listed without secrets.
    const listed = await list(s, L.clientKey);
    expect(listed.map((e) => [e.id, e.eventos]).sort()).toEqual(
      [
        [all.id, ['all']],
        [inbound.id, ['messages.received']],
      ].sort(),
    );
    expect(JSON.stringify(listed)).not.toContain(all.secret);

    // Another client's listener, which must never get this client's events.
    const other = await linkedLine(s, { link: false });
    const foreign = await listener(s, other.clientKey, `${R.url}/ajeno`);

    expectOk(await admin(s, 'POST', '/admin/sim/receive', { celular_id: L.celularId, de: numeroNuevo(), texto: 'hola listen' }));
    const sent = await send(s, L, TEXT, { destinatario: numeroNuevo(), mensaje: uniqueText(), directo: 1 });
    expectOk(sent);
    // Every message.status of the send (enviado, entregado, leido) reached the real webhook: they were moved.
    await R.wait((h) => h.path === '/real' && h.json?.data?.estado === 'leido', 5000, 'the send read at the real webhook');
    const testId = await testEvent(s, L.clientKey);
    await R.wait((h) => h.path === '/real' && h.json?.id === testId, 5000, 'the test event at the real webhook');

    const real = hitsAt(R, '/real');
    expect(real.map((h) => h.headers['x-service-event'])).toEqual(expect.arrayContaining(['messages.received', 'message.status', 'webhook.test']));
    for (const h of real) expectSigned(h, SECRET);
    // The "all" listener: a copy of every real delivery, same id and bytes, its own signature.
    await waitFor(
      () => real.every((h) => hitsAt(R, '/todo').some((c) => c.headers['webhook-id'] === h.headers['webhook-id'])),
      'a copy of each event at the listener',
    );
    for (const h of real) {
      const copy = hitsAt(R, '/todo').find((c) => c.headers['webhook-id'] === h.headers['webhook-id'])!;
      expect(copy.body).toBe(h.body);
      expectEnvelope(copy, h.headers['x-service-event'] as string, L.clienteId);
      expectSigned(copy, all.secret);
      expect(copy.headers['x-service-signature']).not.toBe(h.headers['x-service-signature']);
    }
    // The filtered one: messages.received, and the test event (whatever the subscription); it came last, in order.
    await waitFor(() => ids(hitsAt(R, '/entrantes')).includes(testId), 'the test event at the filtered listener');
    expect(hitsAt(R, '/entrantes').map((h) => h.headers['x-service-event'])).toEqual(['messages.received', 'webhook.test']);
    for (const h of hitsAt(R, '/entrantes')) expectSigned(h, inbound.secret);

    // The other client's listener got nothing of this client's; its own test event reaches it.
    const own = await testEvent(s, other.clientKey);
    await R.wait((h) => h.path === '/ajeno' && h.headers['webhook-id'] === own, 5000, "the other client's own test event");
    expect(ids(hitsAt(R, '/ajeno'))).toEqual([own]);
    expectSigned(hitsAt(R, '/ajeno')[0]!, foreign.secret);

    // The configuration is as it was, and the deliveries list holds the real deliveries only.
    expect((await getWebhook(s, L.clientKey)).body).toEqual(before);
    expect((await entregas(s, L.clientKey)).map((e) => e.id).sort()).toEqual(ids(real).sort());
  });

  it('a listener without a configuration gets the events (webhook_test too); with neither, webhook_test is 409', async () => {
    const L = await linkedLine(s, { link: false });
    expectError(await api(s.url, 'POST', '/api/webhook_test.php', { key: L.clientKey }), 409, 604);
    const l = await listener(s, L.clientKey, `${R.url}/solo`, ['session.status', 'messages.received']);
    expectOk(await api(s.url, 'POST', `/api/celular_qr.php?id=${L.celularId}`, { key: L.clientKey }));
    expectOk(await admin(s, 'POST', '/admin/sim/scan', { celular_id: L.celularId }));
    await R.wait((h) => h.path === '/solo' && h.json?.data?.status === 'connected', 5000, 'session.status connected at the listener');
    const t = await testEvent(s, L.clientKey);
    await R.wait((h) => h.path === '/solo' && h.headers['webhook-id'] === t, 5000, 'the test event at the listener');
    for (const h of hitsAt(R, '/solo')) expectSigned(h, l.secret);
    expect((await getWebhook(s, L.clientKey)).body).toMatchObject({ configurado: false });
    expect(await entregas(s, L.clientKey)).toEqual([]);
  });

  it('a failing listener gets a few quick attempts per copy, never more, while the real webhook gets everything', async () => {
    const bad = await startReceiver(500);
    try {
      const L = await linkedLine(s);
      expectOk(await setWebhook(s, L.clientKey, { url: `${R.url}/real2`, secret: SECRET }));
      await listener(s, L.clientKey, `${bad.url}/x`);
      const first = await testEvent(s, L.clientKey);
      await waitFor(() => bad.of(first).length === 3, 'three attempts of the copy', 5000);
      for (let i = 0; i < 5; i++) expectOk(await admin(s, 'POST', '/admin/sim/receive', { celular_id: L.celularId, de: numeroNuevo(), texto: `n${i}` }));
      await waitFor(() => hitsAt(R, '/real2').filter((h) => h.headers['x-service-event'] === 'messages.received').length === 5, 'five real deliveries');
      const last = await testEvent(s, L.clientKey);
      await waitFor(() => bad.of(last).length === 3, 'three attempts of the last copy', 8000);
      // One lane, in order: every earlier copy has had its turn, and none got a fourth attempt.
      const byId = new Map<string, number>();
      for (const h of bad.hits) byId.set(h.headers['webhook-id'] as string, (byId.get(h.headers['webhook-id'] as string) ?? 0) + 1);
      expect(byId.size).toBe(7);
      expect([...byId.values()].every((n) => n === 3)).toBe(true);
      for (const e of await entregas(s, L.clientKey)) expect(e.estado).toBe('entregado');
    } finally {
      await bad.close();
    }
  });
});

describe('leases', () => {
  let t: TestServer;
  let clock: ManualClock;
  beforeAll(async () => {
    t = await startTestServer({ allowPrivateUrls: true, webhookListenLeaseMs: 1000, queue: { gapMinMs: 0, gapMaxMs: 0 } });
    clock = t.clock as ManualClock;
  });
  afterAll(async () => {
    await t?.stop();
  });

  it('renewing moves the lease; once it passes, the listener is gone: not listed, not renewable, and its copies stop', async () => {
    const L = await linkedLine(t, { link: false });
    expectOk(await setWebhook(t, L.clientKey, { url: `${R.url}/l-real` }));
    const l = await listener(t, L.clientKey, `${R.url}/l-esc`);
    expect(l.r.body.escucha.vigencia_ms).toBe(1000);
    clock.advance(900);
    const r = await renew(t, L.clientKey, l.id);
    expectOk(r);
    expect(Date.parse(r.body.escucha.expira_at)).toBe(clock.now() + 1000);
    clock.advance(900);
    // Still live thanks to the renewal.
    const t1 = await testEvent(t, L.clientKey);
    await R.wait((h) => h.path === '/l-esc' && h.headers['webhook-id'] === t1);
    clock.advance(101);
    expect(await list(t, L.clientKey)).toEqual([]);
    expectError(await renew(t, L.clientKey, l.id), 404, 609);
    expectError(await api(t.url, 'DELETE', `/api/webhook_escuchas.php?id=${l.id}`, { key: L.clientKey }), 404, 609);
    // Events after the lease: the real webhook gets them, the listener nothing (a new listener, added after, does).
    const t2 = await testEvent(t, L.clientKey);
    const t3id = await (async () => {
      await R.wait((h) => h.path === '/l-real' && h.headers['webhook-id'] === t2);
      await listener(t, L.clientKey, `${R.url}/l-nuevo`);
      return testEvent(t, L.clientKey);
    })();
    await R.wait((h) => h.path === '/l-nuevo' && h.headers['webhook-id'] === t3id);
    expect(ids(hitsAt(R, '/l-esc'))).toEqual([t1]);
  });

  it('removing stops the copies at once (DELETE or POST _eliminar); another client cannot remove or renew it', async () => {
    const L = await linkedLine(t, { link: false });
    const other = await linkedLine(t, { link: false });
    const a = await listener(t, L.clientKey, `${R.url}/d-a`);
    const b = await listener(t, L.clientKey, `${R.url}/d-b`);
    expectError(await api(t.url, 'DELETE', `/api/webhook_escuchas.php?id=${a.id}`, { key: other.clientKey }), 404, 609);
    expectError(await renew(t, other.clientKey, a.id), 404, 609);
    const del = await api(t.url, 'DELETE', `/api/webhook_escuchas.php?id=${a.id}`, { key: L.clientKey });
    expectOk(del);
    expect(del.body).toMatchObject({ id: a.id, eliminado: true });
    const viaPost = await api(t.url, 'POST', '/api/webhook_escuchas_eliminar.php', { key: L.clientKey, json: { id: b.id } });
    expectOk(viaPost);
    expectError(await api(t.url, 'POST', '/api/webhook_escuchas_eliminar.php', { key: L.clientKey, json: { id: b.id } }), 404, 609);
    expect(await list(t, L.clientKey)).toEqual([]);
    const c = await listener(t, L.clientKey, `${R.url}/d-c`);
    const id = await testEvent(t, L.clientKey);
    await R.wait((h) => h.path === '/d-c' && h.headers['webhook-id'] === id);
    expectSigned(hitsAt(R, '/d-c')[0]!, c.secret);
    expect(hitsAt(R, '/d-a')).toEqual([]);
    expect(hitsAt(R, '/d-b')).toEqual([]);
  });

  it('at most 5 live listeners per client (409, api_codigo 610); a removed or expired one frees its place; another client has its own', async () => {
    const L = await linkedLine(t, { link: false });
    const other = await linkedLine(t, { link: false });
    const made: string[] = [];
    for (let i = 0; i < 5; i++) made.push((await listener(t, L.clientKey, `${R.url}/m${i}`)).id);
    expectError(await register(t, L.clientKey, { url: `${R.url}/m5` }), 409, 610);
    await listener(t, other.clientKey, `${R.url}/o0`);
    expectOk(await api(t.url, 'DELETE', `/api/webhook_escuchas.php?id=${made[0]}`, { key: L.clientKey }));
    await listener(t, L.clientKey, `${R.url}/m5`);
    expectError(await register(t, L.clientKey, { url: `${R.url}/m6` }), 409, 610);
    clock.advance(1001);
    await listener(t, L.clientKey, `${R.url}/m6`);
    expect((await list(t, L.clientKey)).map((e) => e.url)).toEqual([`${R.url}/m6`]);
  });
});

describe('who may register what', () => {
  let strict: TestServer;
  let L: Line;
  beforeAll(async () => {
    // The README's default: on 127.0.0.1, without --allow-private-urls.
    strict = await startTestServer({ queue: { gapMinMs: 0, gapMaxMs: 0 } });
    L = await linkedLine(strict, { link: false });
  });
  afterAll(async () => {
    await strict?.stop();
  });

  it('without --allow-private-urls a loopback listener is accepted from this machine and gets its copies; the real webhook keeps the private-address rule', async () => {
    expectError(await setWebhook(strict, L.clientKey, { url: `${R.url}/strict-real` }), 400, 100);
    const l = await listener(strict, L.clientKey, `${R.url}/strict`);
    const id = await testEvent(strict, L.clientKey);
    const h = await R.wait((x) => x.path === '/strict' && x.headers['webhook-id'] === id);
    expectEnvelope(h, 'webhook.test', L.clienteId);
    expectSigned(h, l.secret);
    // Through a proxy on this machine that names a local client: still this machine.
    expectOk(await register(strict, L.clientKey, { url: `${R.url}/p1` }, { 'x-forwarded-for': '127.0.0.1' }), 201);
    expectOk(await register(strict, L.clientKey, { url: `${R.url}/p2` }, { forwarded: 'for="[::1]:5555";proto=http' }), 201);
  });

  it('refused: a loopback URL for a request a proxy forwarded from elsewhere, http to anything but loopback, private https, localhost, other schemes', async () => {
    const refused = async (url: string, headers?: Record<string, string>) => {
      const r = await register(strict, L.clientKey, { url }, headers);
      expectError(r, 400, 100);
      return r.body.error as string;
    };
    expect(await refused(`${R.url}/x`, { 'x-forwarded-for': '203.0.113.9' })).toMatch(
      /loopback listener is accepted only from a request made on the server's own machine/,
    );
    expect(await refused(`${R.url}/x`, { 'x-forwarded-for': '127.0.0.1, 198.51.100.7' })).toMatch(/own machine/);
    expect(await refused(`${R.url}/x`, { forwarded: 'for=198.51.100.7' })).toMatch(/own machine/);
    expect(await refused(`${R.url}/x`, { forwarded: 'for=unknown' })).toMatch(/own machine/);
    expect(await refused('http://example.com/hooks')).toMatch(/http:\/\/ is accepted for a loopback listener only/);
    expect(await refused('https://10.1.2.3/hooks')).toMatch(/private/);
    expect(await refused('https://[fe80::1]/hooks')).toMatch(/private/);
    expect(await refused('http://localhost:9/')).toMatch(/not localhost/);
    expect(await refused('ftp://127.0.0.1/x')).toMatch(/http or https/);
    expect(await refused('')).toMatch(/url is required/);
    expectError(await register(strict, L.clientKey, { url: `${R.url}/x`, eventos: ['nope'] }), 400, 100);
    // The client key only: a celular key is 403, for every listener route.
    expectError(await register(strict, L.celularKey, { url: `${R.url}/x` }), 403, 201);
    expectError(await api(strict.url, 'GET', '/api/webhook_escuchas.php', { key: L.celularKey }), 403, 201);
    expectError(await renew(strict, L.celularKey, 'esc_x'), 403, 201);
    expectError(await api(strict.url, 'DELETE', '/api/webhook_escuchas.php?id=esc_x', { key: L.celularKey }), 403, 201);
    expectError(await renew(strict, L.clientKey, ''), 400, 100);
  });

  it('a server on every interface (--host 0.0.0.0) refuses a loopback listener even from a loopback peer, unless --allow-private-urls; with --trust-proxy the forwarded chain must be there', async () => {
    // A same-host proxy that adds no forwarding headers (plain proxy_pass, stunnel, ssh -L) makes every client's peer loopback.
    const local = (srv: TestServer): TestServer => ({ ...srv, url: srv.url.replace('0.0.0.0', '127.0.0.1') });
    const started: TestServer[] = [];
    try {
      for (const [over, loopbackOk] of [
        [{ host: '0.0.0.0' }, false],
        [{ host: '0.0.0.0', allowPrivateUrls: true }, true],
        [{ host: 'localhost' }, true],
      ] as const) {
        const srv = local(await startTestServer({ ...over, queue: { gapMinMs: 0, gapMaxMs: 0 } }));
        started.push(srv);
        const W = await linkedLine(srv, { link: false });
        const r = await register(srv, W.clientKey, { url: `${R.url}/wide` });
        if (loopbackOk) expectOk(r, 201);
        else {
          expectError(r, 400, 100);
          expect(r.body.error).toMatch(/to a server listening on loopback \(serve --host 127\.0\.0\.1\)/);
          // The https rule is unchanged.
          expectError(await register(srv, W.clientKey, { url: 'https://10.1.2.3/hooks' }), 400, 100);
        }
      }
      const proxied = await startTestServer({ trustProxy: 1, queue: { gapMinMs: 0, gapMaxMs: 0 } });
      started.push(proxied);
      const P = await linkedLine(proxied, { link: false });
      expectError(await register(proxied, P.clientKey, { url: `${R.url}/tp` }), 400, 100);
      expectOk(await register(proxied, P.clientKey, { url: `${R.url}/tp` }, { 'x-forwarded-for': '127.0.0.1' }), 201);
      expectError(await register(proxied, P.clientKey, { url: `${R.url}/tp` }, { 'x-forwarded-for': '198.51.100.7' }), 400, 100);
    } finally {
      for (const x of started) await x.stop();
    }
  });
});

describeWith(postgres, 'several nodes (PostgreSQL)', () => {
  const servers: TestServer[] = [];
  const drops: Array<() => Promise<void>> = [];
  afterAll(async () => {
    for (const x of servers) await x.stop().catch(() => undefined);
    for (const d of drops) await d();
  });

  it('a listener registered on one node gets the events another node produced, and the real webhook gets each once', async () => {
    const schema = await pgSchema();
    drops.push(schema.drop);
    const u = new URL(schemaUrl(schema.schema));
    // Real time: the nodes share the listener's lease, each on its own clock.
    const a = await startTestServer({ store: u.toString(), allowPrivateUrls: true, clock: systemClock, queue: { gapMinMs: 0, gapMaxMs: 0 } });
    servers.push(a);
    const b = await startTestServer({
      store: u.toString(),
      dataDir: tempDir(),
      allowPrivateUrls: true,
      clock: systemClock,
      queue: { gapMinMs: 0, gapMaxMs: 0 },
    });
    servers.push(b);
    const L = await linkedLine(b);
    expectOk(await setWebhook(b, L.clientKey, { url: `${R.url}/pg-real`, secret: SECRET }));
    const l = await listener(a, L.clientKey, `${R.url}/pg-esc`);
    expect((await list(b, L.clientKey)).map((e) => e.id)).toEqual([l.id]);
    for (let i = 0; i < 3; i++) expectOk(await admin(b, 'POST', '/admin/sim/receive', { celular_id: L.celularId, de: numeroNuevo(), texto: `nodo ${i}` }));
    const t = await testEvent(b, L.clientKey);
    await waitFor(() => hitsAt(R, '/pg-real').length === 4 && hitsAt(R, '/pg-esc').length === 4, 'four real deliveries and four copies', 20_000);
    expect(ids(hitsAt(R, '/pg-esc')).sort()).toEqual(ids(hitsAt(R, '/pg-real')).sort());
    expect(ids(hitsAt(R, '/pg-esc'))).toContain(t);
    for (const h of hitsAt(R, '/pg-esc')) expectSigned(h, l.secret);
    // Removed through the other node: no copy from either.
    expectOk(await api(b.url, 'DELETE', `/api/webhook_escuchas.php?id=${l.id}`, { key: L.clientKey }));
    expect(await list(a, L.clientKey)).toEqual([]);
  });
});
