import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, seedClient, startTestServer, type ApiResponse, type Seeded, type TestServer } from '../helpers/server.js';
import { expectError, expectOk, numeroNuevo } from '../helpers/expect.js';

/**
 * The webhook configuration over HTTP (docs/design.md §7): GET/POST/
 * DELETE /api/webhook.php, the legacy /api/webhook_configurar.php, restore,
 * validation, the private-address rule, who may do what, client isolation,
 * and the secret never coming back.
 */

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const SECRET = 'whk-config-secret-0123456789-ABCDEF';
const SECRET2 = 'otro_secreto_de_prueba_0987654321';
const HOOK = 'http://127.0.0.1:9/hook';

let s: TestServer;
let A: Seeded;
let B: Seeded;
/** Every response text of this file, to check that no secret ever comes back. */
const seen: string[] = [];

async function call(method: string, path: string, key: string, body?: { json?: unknown; form?: Record<string, string | string[]> }): Promise<ApiResponse> {
  const r = await api(s.url, method, path, { key, ...(body ?? {}) });
  seen.push(r.text);
  return r;
}
const get = (key: string) => call('GET', '/api/webhook.php', key);
const set = (key: string, json: Record<string, unknown>) => call('POST', '/api/webhook.php', key, { json });
const setForm = (key: string, form: Record<string, string | string[]>) => call('POST', '/api/webhook.php', key, { form });
const del = (key: string) => call('DELETE', '/api/webhook.php', key);
const legacy = (key: string, form: Record<string, string | string[]>) => call('POST', '/api/webhook_configurar.php', key, { form });
const restore = (key: string) => call('POST', '/api/webhook_restaurar.php', key);

function expectView(r: ApiResponse, want: { url: string; has_secret: boolean; eventos: string[]; activo: boolean }, clienteId: number): void {
  expectOk(r);
  expect(r.body).toMatchObject({ configurado: true, cliente_id: clienteId, ...want });
  expect(r.body.updated_at).toMatch(ISO);
  expect(r.body).not.toHaveProperty('secret');
}

function expectEmpty(r: ApiResponse, clienteId: number): void {
  expectOk(r);
  expect(r.body).toMatchObject({ configurado: false, cliente_id: clienteId, url: '', has_secret: false, eventos: [], activo: false });
  expect(r.body).not.toHaveProperty('secret');
}

beforeAll(async () => {
  s = await startTestServer({ allowPrivateUrls: true });
  A = await seedClient(s, { numero: numeroNuevo() });
  B = await seedClient(s, { numero: numeroNuevo() });
});
afterAll(async () => {
  await s?.stop();
});

describe('GET, POST and DELETE /api/webhook.php', () => {
  it('GET before any configuration: configurado false, url "", eventos [], activo false', async () => {
    const r = await get(A.clientKey);
    expectEmpty(r, A.clienteId);
    expect(r.body.updated_at).toBeNull();
  });

  it('POST JSON with url, secret, eventos, activo: stored and read back; the secret only as has_secret', async () => {
    const r = await set(A.clientKey, { url: HOOK, secret: SECRET, eventos: ['message.status', 'session.status'], activo: true });
    expectView(r, { url: HOOK, has_secret: true, eventos: ['message.status', 'session.status'], activo: true }, A.clienteId);
    expect(r.text).not.toContain(SECRET);
    const g = await get(A.clientKey);
    expectView(g, { url: HOOK, has_secret: true, eventos: ['message.status', 'session.status'], activo: true }, A.clienteId);

    // Without secret: none; without eventos: all; activo false kept.
    const r2 = await set(A.clientKey, { url: 'https://127.0.0.1:8443/otra?x=1', activo: false });
    expectView(r2, { url: 'https://127.0.0.1:8443/otra?x=1', has_secret: false, eventos: ['all'], activo: false }, A.clienteId);
    // `all` swallows the others; duplicates collapse.
    const r3 = await set(A.clientKey, { url: HOOK, eventos: ['message.status', 'all', 'session.status'] });
    expect(r3.body.eventos).toEqual(['all']);
    expect(r3.body.activo).toBe(true);
    const r4 = await set(A.clientKey, { url: HOOK, eventos: ['messages.received', 'messages.received'] });
    expect(r4.body.eventos).toEqual(['messages.received']);
  });

  it('eventos as a JSON comma string, repeated form fields, or a form comma list; activo from a form', async () => {
    const j = await set(A.clientKey, { url: HOOK, eventos: 'message.status, messages.received' });
    expectView(j, { url: HOOK, has_secret: false, eventos: ['message.status', 'messages.received'], activo: true }, A.clienteId);

    const rep = await setForm(A.clientKey, { url: HOOK, secret: SECRET, eventos: ['session.status', 'message.status'], activo: '1' });
    expectView(rep, { url: HOOK, has_secret: true, eventos: ['session.status', 'message.status'], activo: true }, A.clienteId);

    const comma = await setForm(A.clientKey, { url: HOOK, eventos: 'messages.received,session.status', activo: 'false' });
    expectView(comma, { url: HOOK, has_secret: false, eventos: ['messages.received', 'session.status'], activo: false }, A.clienteId);

    const one = await setForm(A.clientKey, { url: HOOK, eventos: 'all' });
    expectView(one, { url: HOOK, has_secret: false, eventos: ['all'], activo: true }, A.clienteId);

    expectView(await get(A.clientKey), { url: HOOK, has_secret: false, eventos: ['all'], activo: true }, A.clienteId);
  });

  it('400 for a bad url, an unknown evento, a secret with spaces or outside ASCII, a bad activo; the stored configuration stays', async () => {
    expectOk(await set(A.clientKey, { url: HOOK, secret: SECRET, eventos: ['message.status'] }));
    const bad: Array<[string, Record<string, unknown>]> = [
      ['ftp url', { url: 'ftp://127.0.0.1/hook' }],
      ['file url', { url: 'file:///etc/passwd' }],
      ['not a url', { url: 'no es una url' }],
      ['missing url', { secret: SECRET }],
      ['empty url', { url: '' }],
      ['unknown evento', { url: HOOK, eventos: ['message.status', 'mensaje.nuevo'] }],
      ['unknown evento in a comma list', { url: HOOK, eventos: 'session.status,bogus' }],
      ['secret with a space', { url: HOOK, secret: 'secreto con espacios 123' }],
      ['secret with a tab', { url: HOOK, secret: 'secreto\tcon-tab-123456' }],
      ['non-ASCII secret', { url: HOOK, secret: 'contraseña-muy-secreta-123' }],
      ['emoji secret', { url: HOOK, secret: 'secreto-🔑-1234567890' }],
      ['activo neither true nor false', { url: HOOK, activo: 'quizas' }],
    ];
    for (const [what, body] of bad) {
      const r = await set(A.clientKey, body);
      expect(r.status, `${what}: ${r.text}`).toBe(400);
      expectError(r, 400);
    }
    // Form-encoded too.
    expectError(await setForm(A.clientKey, { url: 'ftp://127.0.0.1/x' }), 400);
    expectError(await setForm(A.clientKey, { url: HOOK, eventos: ['message.status', 'nada'] }), 400);
    expectError(await setForm(A.clientKey, { url: HOOK, secret: 'con espacio 12345' }), 400);

    expectView(await get(A.clientKey), { url: HOOK, has_secret: true, eventos: ['message.status'], activo: true }, A.clienteId);
  });

  it('a secret of 24 to 256 printable ASCII characters is accepted; a shorter one (x) is the 400 INVALID_PARAMS naming secret (D-89)', async () => {
    for (const secret of ['!"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}~', 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', 'A'.repeat(24), 'A'.repeat(256)]) {
      const r = await set(A.clientKey, { url: HOOK, secret });
      expect(r.status, `${secret}: ${r.text}`).toBe(200);
      expect(r.body.has_secret).toBe(true);
      expect(r.text).not.toContain(secret);
    }
    expectOk(await set(A.clientKey, { url: HOOK, secret: SECRET, eventos: ['message.status'] }));
    for (const secret of ['x', 'abc', 'A'.repeat(23)]) {
      const r = await set(A.clientKey, { url: HOOK, secret });
      expectError(r, 400, 100);
      expect(r.body.error).toMatch(/^secret: \d+ characters? is too short: 24 to 256 printable ASCII characters, no spaces$/);
    }
    expectError(await setForm(A.clientKey, { url: HOOK, secret: 'x' }), 400, 100);
    expectError(await legacy(A.clientKey, { op: 'set', url: HOOK, secret: 'x' }), 400, 100);
    expectError(await set(A.clientKey, { url: HOOK, secret: 'A'.repeat(257) }), 400);
    // Nothing of a refused set was saved.
    expectView(await get(A.clientKey), { url: HOOK, has_secret: true, eventos: ['message.status'], activo: true }, A.clienteId);
  });

  it('DELETE removes the configuration (eliminado true), then there is nothing to remove (eliminado false)', async () => {
    expectOk(await set(A.clientKey, { url: HOOK, secret: SECRET }));
    const d = await del(A.clientKey);
    expectEmpty(d, A.clienteId);
    expect(d.body.eliminado).toBe(true);
    expectEmpty(await get(A.clientKey), A.clienteId);
    const again = await del(A.clientKey);
    expectEmpty(again, A.clienteId);
    expect(again.body.eliminado).toBe(false);
  });
});

describe('legacy POST /api/webhook_configurar.php', () => {
  it('op=set, op=get and op=delete, form-encoded', async () => {
    const C = await seedClient(s, { numero: numeroNuevo() });
    expectEmpty(await legacy(C.clientKey, { op: 'get' }), C.clienteId);
    const st = await legacy(C.clientKey, { op: 'set', url: HOOK, secret: SECRET, eventos: ['messages.received', 'session.status'], activo: '1' });
    expectView(st, { url: HOOK, has_secret: true, eventos: ['messages.received', 'session.status'], activo: true }, C.clienteId);
    expectView(
      await legacy(C.clientKey, { op: 'get' }),
      { url: HOOK, has_secret: true, eventos: ['messages.received', 'session.status'], activo: true },
      C.clienteId,
    );
    // The modern endpoint sees the same configuration.
    expectView(await get(C.clientKey), { url: HOOK, has_secret: true, eventos: ['messages.received', 'session.status'], activo: true }, C.clienteId);
    const d = await legacy(C.clientKey, { op: 'delete' });
    expectEmpty(d, C.clienteId);
    expect(d.body.eliminado).toBe(true);
    expectEmpty(await legacy(C.clientKey, { op: 'get' }), C.clienteId);
  });

  it('op=set with JSON; the same validation (400); a missing or unknown op is 400', async () => {
    const C = await seedClient(s, { numero: numeroNuevo() });
    const st = await call('POST', '/api/webhook_configurar.php', C.clientKey, { json: { op: 'set', url: HOOK, eventos: 'message.status', activo: false } });
    expectView(st, { url: HOOK, has_secret: false, eventos: ['message.status'], activo: false }, C.clienteId);
    expectError(await legacy(C.clientKey, { op: 'set', url: 'ftp://127.0.0.1/x' }), 400);
    expectError(await legacy(C.clientKey, { op: 'set', url: HOOK, eventos: 'nope' }), 400);
    expectError(await legacy(C.clientKey, { op: 'set', url: HOOK, secret: 'ñandú-secreto-12345' }), 400);
    expectError(await legacy(C.clientKey, { op: 'set' }), 400);
    expectError(await legacy(C.clientKey, { url: HOOK }), 400);
    expectError(await legacy(C.clientKey, { op: 'borrar' }), 400);
    expectView(await legacy(C.clientKey, { op: 'get' }), { url: HOOK, has_secret: false, eventos: ['message.status'], activo: false }, C.clienteId);
  });
});

describe('POST /api/webhook_restaurar.php', () => {
  it('409 when there was never a configuration', async () => {
    const C = await seedClient(s, { numero: numeroNuevo() });
    expectError(await restore(C.clientKey), 409, 604);
  });

  it('after sets, brings back the replaced configurations newest first, secret included, down to "none", then 409', async () => {
    const C = await seedClient(s, { numero: numeroNuevo() });
    expectOk(await set(C.clientKey, { url: HOOK, secret: SECRET, eventos: ['session.status'] }));
    expectOk(await set(C.clientKey, { url: 'http://127.0.0.1:9/dos', eventos: ['message.status'], activo: false }));
    expectOk(await set(C.clientKey, { url: 'http://127.0.0.1:9/tres', secret: SECRET2 }));
    expectView(await restore(C.clientKey), { url: 'http://127.0.0.1:9/dos', has_secret: false, eventos: ['message.status'], activo: false }, C.clienteId);
    const r = await restore(C.clientKey);
    expectView(r, { url: HOOK, has_secret: true, eventos: ['session.status'], activo: true }, C.clienteId);
    expectView(await get(C.clientKey), { url: HOOK, has_secret: true, eventos: ['session.status'], activo: true }, C.clienteId);
    expectEmpty(await restore(C.clientKey), C.clienteId);
    expectError(await restore(C.clientKey), 409, 604);
  });

  it('keeps the last 10 replaced configurations', async () => {
    const C = await seedClient(s, { numero: numeroNuevo() });
    for (let i = 1; i <= 12; i++) expectOk(await set(C.clientKey, { url: `http://127.0.0.1:9/v${i}` }));
    for (let i = 11; i >= 2; i--) expect((await restore(C.clientKey)).body.url).toBe(`http://127.0.0.1:9/v${i}`);
    expectError(await restore(C.clientKey), 409, 604);
    expect((await get(C.clientKey)).body.url).toBe('http://127.0.0.1:9/v2');
  });

  it('the secret comes back with the configuration it belonged to (has_secret)', async () => {
    const C = await seedClient(s, { numero: numeroNuevo() });
    expectOk(await set(C.clientKey, { url: HOOK, secret: SECRET }));
    expectOk(await set(C.clientKey, { url: HOOK }));
    expect((await get(C.clientKey)).body.has_secret).toBe(false);
    expect((await restore(C.clientKey)).body.has_secret).toBe(true);
  });

  it('after a DELETE (modern or legacy), brings the removed configuration back', async () => {
    const C = await seedClient(s, { numero: numeroNuevo() });
    expectOk(await set(C.clientKey, { url: HOOK, secret: SECRET2, eventos: ['messages.received'], activo: false }));
    expectOk(await del(C.clientKey));
    expectView(await restore(C.clientKey), { url: HOOK, has_secret: true, eventos: ['messages.received'], activo: false }, C.clienteId);
    expectOk(await legacy(C.clientKey, { op: 'delete' }));
    expectEmpty(await get(C.clientKey), C.clienteId);
    expectView(await restore(C.clientKey), { url: HOOK, has_secret: true, eventos: ['messages.received'], activo: false }, C.clienteId);
    // What `webhook listen` does: set over a removed configuration; restoring goes back to "removed", then to the original.
    expectOk(await del(C.clientKey));
    expectOk(await set(C.clientKey, { url: 'http://127.0.0.1:9/listen', secret: SECRET }));
    expectEmpty(await restore(C.clientKey), C.clienteId);
    expectView(await restore(C.clientKey), { url: HOOK, has_secret: true, eventos: ['messages.received'], activo: false }, C.clienteId);
  });

  it('after the first set ever, restoring means "no configuration"', async () => {
    const C = await seedClient(s, { numero: numeroNuevo() });
    expectOk(await set(C.clientKey, { url: HOOK }));
    expectEmpty(await restore(C.clientKey), C.clienteId);
    expectEmpty(await get(C.clientKey), C.clienteId);
    expectError(await restore(C.clientKey), 409, 604);
  });
});

describe('who may do what', () => {
  it('a line credential gets 403 on everything, reads included (GET, op=get, deliveries): the URL may carry a token', async () => {
    const C = await seedClient(s, { numero: numeroNuevo() });
    expectOk(await set(C.clientKey, { url: HOOK, secret: SECRET, eventos: ['message.status'] }));
    const want = { url: HOOK, has_secret: true, eventos: ['message.status'], activo: true };
    for (const k of [C.celularKey, C.gatewayToken]) {
      const r = await get(k);
      expectError(r, 403, 201);
      expect(r.text).not.toContain(HOOK);
      expectError(await legacy(k, { op: 'get' }), 403, 201);
      expectError(await call('GET', '/api/webhook_entregas.php', k), 403, 201);
    }

    expectError(await set(C.celularKey, { url: 'http://127.0.0.1:9/otro' }), 403, 201);
    expectError(await setForm(C.gatewayToken, { url: 'http://127.0.0.1:9/otro' }), 403, 201);
    expectError(await del(C.celularKey), 403, 201);
    expectError(await legacy(C.celularKey, { op: 'set', url: 'http://127.0.0.1:9/otro' }), 403, 201);
    expectError(await legacy(C.celularKey, { op: 'delete' }), 403, 201);
    expectError(await restore(C.celularKey), 403, 201);
    expectError(await call('POST', '/api/webhook_test.php', C.celularKey), 403, 201);
    expectError(await call('POST', '/api/webhook_reenviar.php?id=evt_0000', C.celularKey), 403, 201);
    // Nothing changed.
    expectView(await get(C.clientKey), want, C.clienteId);
  });

  it('no credential or an unknown one: 401', async () => {
    const r = await api(s.url, 'GET', '/api/webhook.php');
    expectError(r, 401);
    expectError(await api(s.url, 'POST', '/api/webhook.php', { key: 'WAC_999_nope', json: { url: HOOK } }), 401);
  });

  it("client isolation: B never sees, replaces, removes or restores A's configuration", async () => {
    expectOk(await set(A.clientKey, { url: 'http://127.0.0.1:9/de-a', secret: SECRET, eventos: ['session.status'] }));
    expectEmpty(await get(B.clientKey), B.clienteId);
    expectEmpty(await legacy(B.clientKey, { op: 'get' }), B.clienteId);
    const d = await del(B.clientKey);
    expect(d.body.eliminado).toBe(false);
    expectError(await restore(B.clientKey), 409, 604);
    expectOk(await set(B.clientKey, { url: 'http://127.0.0.1:9/de-b' }));
    expectView(await get(A.clientKey), { url: 'http://127.0.0.1:9/de-a', has_secret: true, eventos: ['session.status'], activo: true }, A.clienteId);
    expectView(await get(B.clientKey), { url: 'http://127.0.0.1:9/de-b', has_secret: false, eventos: ['all'], activo: true }, B.clienteId);
    expectOk(await del(B.clientKey));
    expect((await get(A.clientKey)).body.configurado).toBe(true);
  });
});

describe('private and loopback URLs on a server without --allow-private-urls', () => {
  let p: TestServer;
  let C: Seeded;
  beforeAll(async () => {
    p = await startTestServer({ allowPrivateUrls: false });
    C = await seedClient(p, { numero: numeroNuevo() });
  });
  afterAll(async () => {
    await p?.stop();
  });

  it('400 for loopback, private, link-local and "localhost" targets; a public address is accepted', async () => {
    for (const url of [
      'http://127.0.0.1:8080/hook',
      'http://localhost:8080/hook',
      'http://10.1.2.3/hook',
      'http://192.168.1.10/hook',
      'http://172.16.0.5/hook',
      'http://169.254.169.254/latest/meta-data',
      'http://[::1]:8080/hook',
      'http://[::ffff:127.0.0.1]/hook',
      'http://0.0.0.0/hook',
    ]) {
      const r = await api(p.url, 'POST', '/api/webhook.php', { key: C.clientKey, json: { url } });
      expect(r.status, `${url}: ${r.text}`).toBe(400);
      expectError(r, 400, 100);
      const l = await api(p.url, 'POST', '/api/webhook_configurar.php', { key: C.clientKey, form: { op: 'set', url } });
      expect(l.status, `legacy ${url}: ${l.text}`).toBe(400);
    }
    const g = await api(p.url, 'GET', '/api/webhook.php', { key: C.clientKey });
    expectEmpty(g, C.clienteId);
    // A public IP literal needs no DNS and is accepted.
    const ok = await api(p.url, 'POST', '/api/webhook.php', { key: C.clientKey, json: { url: 'http://93.184.216.34/hook', activo: false } });
    expectView(ok, { url: 'http://93.184.216.34/hook', has_secret: false, eventos: ['all'], activo: false }, C.clienteId);
    expect(ok.body.aviso).toBeUndefined();
  });

  it('a host name that does not resolve now is saved with an aviso (deliveries resolve and vet it again); the other sets carry none', async () => {
    // .invalid never resolves (RFC 6761), with or without a network.
    const url = 'https://hooks.pasarela-test.invalid/in';
    const r = await api(p.url, 'POST', '/api/webhook.php', { key: C.clientKey, json: { url, activo: false } });
    expectView(r, { url, has_secret: false, eventos: ['all'], activo: false }, C.clienteId);
    expect(r.body.aviso).toMatch(/hooks\.pasarela-test\.invalid does not resolve now/);
    const l = await api(p.url, 'POST', '/api/webhook_configurar.php', { key: C.clientKey, form: { op: 'set', url, activo: 'false' } });
    expectOk(l);
    expect(l.body.aviso).toMatch(/does not resolve now/);
    const g = await api(p.url, 'GET', '/api/webhook.php', { key: C.clientKey });
    expect(g.body).toMatchObject({ url, configurado: true });
    expect(g.body.aviso).toBeUndefined();
  });
});

describe('secrets', () => {
  it('no response of this file, and no log line, ever carried a secret', () => {
    expect(seen.length).toBeGreaterThan(50);
    for (const t of seen) {
      expect(t).not.toContain(SECRET);
      expect(t).not.toContain(SECRET2);
    }
    for (const line of s.logs) {
      expect(line).not.toContain(SECRET);
      expect(line).not.toContain(SECRET2);
    }
  });
});
