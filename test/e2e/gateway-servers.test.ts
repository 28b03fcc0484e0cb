import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEvolutionFake, type EvolutionFake } from '../fakes/evolution.js';
import { rmSync } from 'node:fs';
import { api, startTestServer, tempDir, type ApiResponse, type TestServer } from '../helpers/server.js';
import { expectError, expectOk } from '../helpers/expect.js';
import { numeroNuevo } from '../server/send-helpers.js';
import { setWebhook, startReceiver, type Receiver } from '../server/webhook-helpers.js';
import { until } from '../helpers/poll.js';

/**
 * Many gateway servers: pasarela runs whole with `--gateway evolution`, its
 * `--gateway-url` on fake Evolution server A (the `default` server) and a
 * second fake, B, added through the operator API. Lines spread by the
 * least-loaded rule, each line's calls and events stay on its server, a line
 * moves, and no answer ever carries a server's key.
 */
let a: EvolutionFake;
let b: EvolutionFake;
let s: TestServer;
let hooks: Receiver;
let clientKey: string;
let clienteId: number;

const admin = (method: string, path: string, json?: unknown) => api(s.url, method, path, { key: s.adminToken, json });
const servidores = async () => (await admin('GET', '/admin/gateways')).body.servidores as Array<{ nombre: string; lineas: number; estado: string }>;
const serverOf = async (celularId: number) => {
  const c = (await s.core.store.getCelular(celularId))!;
  return (await s.core.store.getGatewayServer(c.servidor_id!))!.nombre;
};
const instanceOf = (celularId: number) => `pasarela-${celularId}`;
/** Every response body of this file is checked for the servers' keys. */
const seen: ApiResponse[] = [];
const track = (r: ApiResponse) => (seen.push(r), r);

async function newLine(): Promise<number> {
  const r = track(await api(s.url, 'POST', '/api/celular_crear.php', { key: clientKey, json: { numero: numeroNuevo() } }));
  expect(r.status, r.text).toBe(201);
  return r.body.celular_id as number;
}

async function linkOn(fake: EvolutionFake, celularId: number): Promise<void> {
  let qr: ApiResponse;
  await until(
    async () => {
      qr = track(await api(s.url, 'POST', `/api/celular_qr.php?id=${celularId}`, { key: clientKey }));
      return qr.status === 200 && qr.body.qr !== '';
    },
    { what: 'a QR' },
  );
  await fake.scan(instanceOf(celularId));
  await fake.settle();
  await until(async () => (await s.core.store.getCelular(celularId))?.estado === 'activo', { what: `celular ${celularId} activo` });
}

const touched = (fake: EvolutionFake, instancia: string) => fake.requests.filter((r) => r.path.includes(`/${instancia}`));

beforeAll(async () => {
  a = await startEvolutionFake({ apiKey: 'key-of-server-a-0123456789' });
  b = await startEvolutionFake({ apiKey: 'key-of-server-b-9876543210' });
  s = await startTestServer({
    gateway: 'evolution',
    gatewayUrl: a.url,
    gatewayKey: a.apiKey,
    allowPrivateUrls: true,
    healthIntervalMs: 0,
    queue: { gapMinMs: 0, gapMaxMs: 0 },
  });
  hooks = await startReceiver(200);
  const c = await admin('POST', '/admin/clientes', { nombre: 'Muchos', email: 'muchos@example.com', saldo: 100 });
  clientKey = c.body.api_key;
  clienteId = c.body.cliente.id;
  expectOk(await setWebhook(s, clientKey, { url: hooks.url, eventos: ['all'] }));
});
afterAll(async () => {
  await s?.stop();
  await hooks?.close();
  await a?.close();
  await b?.close();
});

describe('many gateway servers', () => {
  it('--gateway-url is the server named default; a second one is added with its key kept secret', async () => {
    const before = track(await admin('GET', '/admin/gateways'));
    expectOk(before);
    expect(before.body).toMatchObject({
      tipo: 'evolution',
      total: 1,
      servidores: [{ nombre: 'default', tipo: 'evolution', url: a.url, estado: 'activo', lineas: 0, tiene_key: true, max_lineas: null }],
    });
    const add = track(await admin('POST', '/admin/gateways', { nombre: 'b', url: `${b.url}/`, key: b.apiKey }));
    expect(add.status, add.text).toBe(201);
    expect(add.body).toMatchObject({ nombre: 'b', tipo: 'evolution', url: b.url, estado: 'activo', lineas: 0, tiene_key: true });
    expect(add.body).not.toHaveProperty('key');
    expect((await servidores()).map((x) => x.nombre)).toEqual(['default', 'b']);
  });

  it('new lines go to the least-loaded server (ties to the oldest), each instance made on its own server', async () => {
    const ids = [await newLine(), await newLine(), await newLine(), await newLine()];
    expect(await Promise.all(ids.map(serverOf))).toEqual(['default', 'b', 'default', 'b']);
    expect([...a.instances.keys()].sort()).toEqual([instanceOf(ids[0]!), instanceOf(ids[2]!)].sort());
    expect([...b.instances.keys()].sort()).toEqual([instanceOf(ids[1]!), instanceOf(ids[3]!)].sort());
    expect((await servidores()).map((x) => x.lineas)).toEqual([2, 2]);
  });

  it('a drained server keeps its lines and gets no new one; undrained, it takes them again', async () => {
    const d = track(await admin('POST', '/admin/gateways/b/drain'));
    expectOk(d);
    expect(d.body).toMatchObject({ nombre: 'b', estado: 'drenando', lineas: 2 });
    const ids = [await newLine(), await newLine()];
    expect(await Promise.all(ids.map(serverOf))).toEqual(['default', 'default']);
    expect((await servidores()).map((x) => [x.nombre, x.estado, x.lineas])).toEqual([
      ['default', 'activo', 4],
      ['b', 'drenando', 2],
    ]);
    const u = track(await admin('POST', '/admin/gateways/b/undrain'));
    expect(u.body).toMatchObject({ nombre: 'b', estado: 'activo' });
    expect(await serverOf(await newLine())).toBe('b');
  });

  it("a line's QR, sends and incoming messages stay on its own server", async () => {
    const onA = await newLine();
    const onB = await newLine();
    // Default holds 4, b 3: the first goes to b; move nothing, just read where each is.
    const lines = [onA, onB];
    const fakeOf = async (id: number) => ((await serverOf(id)) === 'default' ? a : b);
    for (const id of lines) {
      const mine = await fakeOf(id);
      const other = mine === a ? b : a;
      await linkOn(mine, id);
      expect(touched(mine, instanceOf(id)).some((r) => r.path.startsWith('/instance/connect/'))).toBe(true);
      expect(touched(other, instanceOf(id))).toEqual([]);

      const celularKey = (await api(s.url, 'POST', `/admin/celulares/${id}/rotar-key`, { key: s.adminToken })).body.api_key;
      const text = `hola ${id} ${Math.random()}`;
      const r = track(
        await api(s.url, 'POST', '/api/mensaje_enviar_texto.php', { key: celularKey, json: { destinatario: '5215587654321', mensaje: text, directo: 1 } }),
      );
      expectOk(r);
      expect(mine.messages.filter((m) => m.instance === instanceOf(id)).map((m) => m.request.text)).toEqual([text]);
      expect(other.messages.filter((m) => m.instance === instanceOf(id))).toEqual([]);

      const from = `549115555${String(id).padStart(4, '0')}`;
      await mine.receive(instanceOf(id), from, `entrante ${id}`);
      await mine.settle();
      const ev = await hooks.wait((h) => h.json?.evento === 'messages.received' && h.json.data.de === from, 5000, `messages.received of ${id}`);
      expect(ev.json.data).toMatchObject({ celular_id: id, texto: `entrante ${id}` });
    }
    expect(new Set(await Promise.all(lines.map(serverOf))).size).toBe(2);
  });

  it('moving a line logs it out and removes its instance on the old server; it links again on the new one', async () => {
    const id = await newLine();
    const from = await serverOf(id);
    const [old, next] = from === 'default' ? [a, b] : [b, a];
    const to = from === 'default' ? 'b' : 'default';
    await linkOn(old, id);
    const m = track(await admin('POST', `/admin/celulares/${id}/servidor`, { servidor: to }));
    expectOk(m);
    expect(m.body).toMatchObject({
      celular_id: id,
      servidor: to,
      servidor_anterior: from,
      estado: 'desconectado',
      status: 'logged_out',
      instancia_anterior_eliminada: true,
      vincular: expect.stringContaining('linked again'),
    });
    expect(old.instances.has(instanceOf(id))).toBe(false);
    expect(touched(old, instanceOf(id)).map((r) => `${r.method} ${r.path.split('/').slice(0, 3).join('/')}`)).toEqual(
      expect.arrayContaining(['DELETE /instance/logout', 'DELETE /instance/delete']),
    );
    expect(await serverOf(id)).toBe(to);
    await hooks.wait(
      (h) => h.json?.evento === 'session.status' && h.json.data.celular_id === id && h.json.data.status === 'logged_out',
      5000,
      'session.status logged_out',
    );
    const oldCalls = touched(old, instanceOf(id)).length;
    await linkOn(next, id);
    expect(touched(old, instanceOf(id)).length).toBe(oldCalls);
    const audit = track(await admin('GET', `/admin/auditoria?cliente_id=${clienteId}&limit=5`));
    expect(audit.body.registros[0]).toMatchObject({ accion: 'celular.mover_gateway', detalle: { desde: from, hacia: to } });
  });

  it('moving off a server that is down still moves the line, and says the old instance was not removed', async () => {
    const id = await newLine();
    const from = await serverOf(id);
    const old = from === 'default' ? a : b;
    const to = from === 'default' ? 'b' : 'default';
    await old.down();
    try {
      const m = track(await admin('POST', `/admin/celulares/${id}/servidor`, { servidor: to }));
      expectOk(m);
      expect(m.body).toMatchObject({ servidor: to, instancia_anterior_eliminada: false, aviso: expect.stringContaining(from) });
    } finally {
      await old.up();
    }
    expect(await serverOf(id)).toBe(to);
  });

  it('deleting a line removes its instance on its own server', async () => {
    const id = await newLine();
    const fake = (await serverOf(id)) === 'default' ? a : b;
    expect(fake.instances.has(instanceOf(id))).toBe(true);
    const r = track(await api(s.url, 'POST', `/api/celular_eliminar.php?id=${id}`, { key: clientKey }));
    expectOk(r);
    await until(() => !fake.instances.has(instanceOf(id)), { what: 'instance deleted' });
  });

  it('with every server draining a line is still made, without a server; its QR says why, and it gets one once a server takes lines', async () => {
    expectOk(await admin('POST', '/admin/gateways/default/drain'));
    expectOk(await admin('POST', '/admin/gateways/b/drain'));
    let id: number;
    try {
      id = await newLine();
      expect((await s.core.store.getCelular(id))!.servidor_id).toBeNull();
      const qr = track(await api(s.url, 'POST', `/api/celular_qr.php?id=${id}`, { key: clientKey }));
      expectError(qr, 502, 700);
      expect(qr.body.error).toMatch(/draining or full/);
    } finally {
      expectOk(await admin('POST', '/admin/gateways/b/undrain'));
    }
    const qr = track(await api(s.url, 'POST', `/api/celular_qr.php?id=${id}`, { key: clientKey }));
    expectOk(qr);
    expect(await serverOf(id)).toBe('b');
    expect(b.instances.has(instanceOf(id))).toBe(true);
    expectOk(await admin('POST', '/admin/gateways/default/undrain'));
  });

  it('refuses bad input with clear errors', async () => {
    const bad = async (method: string, path: string, json: unknown, status: number, codigo: number, text: RegExp) => {
      const r = track(await admin(method, path, json));
      expectError(r, status, codigo);
      expect(r.body.error).toMatch(text);
    };
    await bad('POST', '/admin/gateways/nope/drain', undefined, 404, 606, /nope/);
    await bad('POST', '/admin/gateways/nope/undrain', undefined, 404, 606, /nope/);
    await bad('POST', '/admin/gateways', { nombre: 'c', url: 'notaurl', key: 'k' }, 400, 100, /not a URL/);
    await bad('POST', '/admin/gateways', { nombre: 'c', url: 'ftp://x.example', key: 'k' }, 400, 100, /http or https/);
    await bad('POST', '/admin/gateways', { nombre: 'c', url: 'http://u:p@x.example', key: 'k' }, 400, 100, /credentials/);
    await bad('POST', '/admin/gateways', { nombre: 'b', url: b.url, key: 'k' }, 409, 604, /already exists/);
    await bad('POST', '/admin/gateways', { nombre: 'w', url: 'http://127.0.0.1:1', key: 'k', tipo: 'waha' }, 400, 100, /evolution servers only/);
    await bad('POST', '/admin/gateways', { nombre: 'no spaces', url: 'http://127.0.0.1:1', key: 'k' }, 400, 100, /nombre/);
    await bad('POST', '/admin/gateways', { nombre: 'c', url: 'http://127.0.0.1:1' }, 400, 100, /key/);
    await bad('POST', '/admin/gateways', { nombre: 'c', url: 'http://127.0.0.1:1', key: 'k', max_lineas: 0 }, 400, 100, /max_lineas/);
    const id = await newLine();
    const here = await serverOf(id);
    await bad('POST', `/admin/celulares/${id}/servidor`, { servidor: 'nope' }, 404, 606, /nope/);
    await bad('POST', `/admin/celulares/${id}/servidor`, { servidor: here }, 409, 604, /already on/);
    await bad('POST', '/admin/celulares/999999/servidor', { servidor: 'b' }, 404, 600, /999999/);
    const other = here === 'default' ? 'b' : 'default';
    expectOk(await admin('POST', `/admin/gateways/${other}/drain`));
    await bad('POST', `/admin/celulares/${id}/servidor`, { servidor: other }, 409, 604, /draining/);
    expectOk(await admin('POST', `/admin/gateways/${other}/undrain`));
    const noAuth = await api(s.url, 'GET', '/admin/gateways', { key: clientKey });
    expect(noAuth.status).toBe(401);
    expect((await servidores()).map((x) => x.nombre)).toEqual(['default', 'b']);
  });

  it('no answer of this file ever carried a server key', () => {
    expect(seen.length).toBeGreaterThan(20);
    for (const r of seen) {
      expect(r.text).not.toContain(a.apiKey);
      expect(r.text).not.toContain(b.apiKey);
    }
  });
});

describe('at start', () => {
  it('lines without a server go to the --gateway-url server; a server of another kind stops the start', async () => {
    const dataDir = tempDir();
    const first = await startTestServer({
      dataDir,
      gateway: 'evolution',
      gatewayUrl: a.url,
      gatewayKey: a.apiKey,
      allowPrivateUrls: true,
      healthIntervalMs: 0,
    });
    let lineId: number;
    try {
      expectOk(await api(first.url, 'POST', '/admin/gateways/default/drain', { key: first.adminToken }), 200);
      const c = await api(first.url, 'POST', '/admin/clientes', { key: first.adminToken, json: { nombre: 'Arranque', email: 'arranque@example.com' } });
      const cel = await api(first.url, 'POST', '/api/celular_crear.php', { key: c.body.api_key, json: { numero: numeroNuevo() } });
      lineId = cel.body.celular_id;
      expect((await first.core.store.getCelular(lineId))!.servidor_id).toBeNull();
      expect((await api(first.url, 'POST', '/admin/gateways', { key: first.adminToken, json: { nombre: 'otro', url: b.url, key: b.apiKey } })).status).toBe(
        201,
      );
    } finally {
      await first.stop();
    }
    const second = await startTestServer({
      dataDir,
      gateway: 'evolution',
      gatewayUrl: b.url,
      gatewayKey: b.apiKey,
      allowPrivateUrls: true,
      healthIntervalMs: 0,
    });
    try {
      const d = (await second.core.store.getGatewayServerByNombre('default'))!;
      // The shorthand moved to b's URL and key; its drain is kept, and the line without a server is on it.
      expect(d).toMatchObject({ url: b.url, key: b.apiKey, estado: 'drenando' });
      expect((await second.core.store.getCelular(lineId))!.servidor_id).toBe(d.id);
      expect(second.logs.some((l) => l.includes('lines without a gateway server'))).toBe(true);
    } finally {
      await second.stop();
    }
    await expect(startTestServer({ dataDir, gateway: 'waha', gatewayUrl: b.url, gatewayKey: b.apiKey, healthIntervalMs: 0 })).rejects.toThrow(
      /"otro" is evolution .*one kind per deployment/,
    );
    rmSync(dataDir, { recursive: true, force: true });
  });
});

describe('with the simulator', () => {
  it('lists no servers and refuses to add one', async () => {
    const sim = await startTestServer();
    try {
      const l = await api(sim.url, 'GET', '/admin/gateways', { key: sim.adminToken });
      expect(l.body).toMatchObject({ tipo: 'sim', total: 0, servidores: [] });
      const r = await api(sim.url, 'POST', '/admin/gateways', { key: sim.adminToken, json: { nombre: 'x', url: 'http://127.0.0.1:1', key: 'k' } });
      expectError(r, 400, 100);
      expect(r.body.error).toContain('--gateway sim');
    } finally {
      await sim.stop();
    }
  });
});
