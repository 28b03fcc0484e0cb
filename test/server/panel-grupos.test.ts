import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, seedClient, startTestServer, type Seeded, type TestServer } from '../helpers/server.js';
import { describeWith, postgres, schemaUrl } from '../helpers/services.js';
import { pgSchema } from '../contract/adapters.js';

/**
 * A client's pools pages in process (the browser flow is in
 * test/e2e/panel-grupos.test.ts): their HTTP shapes (a redirect after each
 * change, the API's refusals beside their fields with its status and
 * api_codigo), a form sent twice acting once, another client's pool not
 * found, a line's session sent to its line, and the operator acting for
 * the client; on SQLite and PostgreSQL.
 */

interface Session {
  cookie: string;
  csrf: string;
}

function suite(name: string, start: () => Promise<TestServer>) {
  describe(name, () => {
    let s: TestServer;
    let a: Seeded;
    let client: Session;
    let base: string;
    beforeAll(async () => {
      s = await start();
      a = await seedClient(s);
      client = await signIn(a.clientKey);
      base = `/panel/c/${a.clienteId}/grupos`;
    });
    afterAll(async () => {
      await s?.stop();
    });

    async function signIn(credencial: string): Promise<Session> {
      const r = await api(s.url, 'POST', '/panel/login', { form: { credencial } });
      expect(r.status, r.text).toBe(303);
      const cookie = r.headers.get('set-cookie')!.split(';')[0]!;
      let to = r.headers.get('location')!;
      for (let hops = 0; hops < 3; hops++) {
        const page = await api(s.url, 'GET', to, { headers: { cookie } });
        const csrf = /name="_csrf" value="([^"]+)"/.exec(page.text)?.[1];
        if (csrf) return { cookie, csrf };
        to = page.headers.get('location') ?? to;
      }
      throw new Error(`no CSRF token on the pages after signing in (last: ${to})`);
    }
    const get = (who: Session, path: string) => api(s.url, 'GET', path, { headers: { cookie: who.cookie } });
    const post = (who: Session, path: string, form: Record<string, string | string[]>, csrf = true) =>
      api(s.url, 'POST', path, { headers: { cookie: who.cookie }, form: csrf ? { _csrf: who.csrf, ...form } : form });
    const pools = async () =>
      (await api(s.url, 'GET', '/api/grupos.php', { key: a.clientKey })).body.grupos as Array<{ id: number; nombre: string } & Record<string, unknown>>;

    it('lists the pools with their lines and wait, in the menu beside the lines', async () => {
      const empty = await get(client, base);
      expect(empty.status, empty.text).toBe(200);
      expect(empty.text).toContain('No pools yet');
      expect(empty.text).toMatch(
        /<a href="\/panel\/c\/\d+\/celulares"[^>]*>Lines<\/a><\/li>\s*<li><a href="\/panel\/c\/\d+\/grupos" aria-current="page">Pools<\/a>/,
      );
      expect(empty.text).toContain(`name="celulares" value="${a.celularId}"`);

      const r = await post(client, base, { nombre: 'otp', celulares: String(a.celularId), conmutacion_s: '120' });
      expect(r.status, r.text).toBe(303);
      expect(r.headers.get('location')).toBe(base);
      expect(r.headers.get('set-cookie')).toContain('Pool%20otp%20created.');
      const list = await get(client, base);
      const [g] = await pools();
      expect(g).toMatchObject({ nombre: 'otp', celulares: [a.celularId], conmutacion_s: 120 });
      expect(list.text).toContain(`<a href="${base}/${g!.id}">otp</a>`);
      expect(list.text).toContain(`<a href="/panel/c/${a.clienteId}/celulares/${a.celularId}">${a.numero}</a>`);
      expect(list.text).toMatch(/data-label="conmutacion_s"[^>]*>120 s</);
    });

    it("shows the API's refusals beside their fields, with what was typed, and saves nothing", async () => {
      const b = await seedClient(s);
      const taken = await post(client, base, { nombre: 'otp', celulares: String(a.celularId) });
      expect(taken.status).toBe(409);
      expect(taken.text).toMatch(/id="f-nombre-error"[^>]*>a pool named &quot;otp&quot; already exists <span class="code">api_codigo 644/);
      const other = await post(client, base, { nombre: 'ajeno', celulares: String(b.celularId) });
      expect(other.status).toBe(404);
      expect(other.text).toMatch(/id="f-celulares-error"[^>]*>celular \d+ not found <span class="code">api_codigo 600/);
      expect(other.text).toContain('value="ajeno"');
      const none = await post(client, base, { nombre: 'vacio' });
      expect(none.status).toBe(400);
      expect(none.text).toMatch(/id="f-celulares-error"[^>]*>celulares: a pool needs at least one line/);
      const wait = await post(client, base, { nombre: 'lento', celulares: String(a.celularId), conmutacion_s: '5' });
      expect(wait.status).toBe(400);
      expect(wait.text).toMatch(/id="f-conmutacion_s-error"[^>]*>conmutacion_s must be null \(never\) or whole seconds from 10 to 86400/);
      expect(wait.text).toMatch(new RegExp(`name="celulares" value="${a.celularId}"\\s+checked`));
      const blank = await post(client, base, { nombre: '  ', celulares: String(a.celularId) });
      expect(blank.status).toBe(400);
      expect(blank.text).toMatch(/id="f-nombre-error"[^>]*>nombre: a pool name may not be empty/);
      expect((await pools()).map((g) => g.nombre)).toEqual(['otp']);
      // A forged form changes nothing.
      const forged = await post(client, base, { nombre: 'falso', celulares: String(a.celularId) }, false);
      expect(forged.status).toBe(403);
      expect((await pools()).map((g) => g.nombre)).toEqual(['otp']);
    });

    it('edits name, lines and wait; a taken name is refused beside nombre; an emptied wait is never', async () => {
      const second = await api(s.url, 'POST', '/api/celular_crear.php', { key: a.clientKey, json: { numero: `52155${String(Date.now()).slice(-8)}` } });
      expect(second.status, second.text).toBe(201);
      const two = second.body.celular_id as number;
      expect((await post(client, base, { nombre: 'ventas', celulares: String(a.celularId) })).status).toBe(303);
      const g = (await pools()).find((x) => x.nombre === 'ventas')!;
      const page = `${base}/${g.id}`;
      const shown = await get(client, page);
      expect(shown.status).toBe(200);
      expect(shown.text).toContain('<title>Pool ventas · pasarela</title>');
      expect(shown.text).toContain('value="ventas"');

      const taken = await post(client, page, { nombre: 'otp', celulares: [String(a.celularId), String(two)], conmutacion_s: '' });
      expect(taken.status).toBe(409);
      expect(taken.text).toMatch(/id="f-nombre-error"[^>]*>a pool named &quot;otp&quot; already exists/);
      // What was ticked is shown back ticked.
      expect(taken.text).toMatch(new RegExp(`name="celulares" value="${two}"\\s+checked`));

      const saved = await post(client, page, { nombre: 'ventas-mx', celulares: [String(a.celularId), String(two)], conmutacion_s: '300' });
      expect(saved.status, saved.text).toBe(303);
      expect(saved.headers.get('location')).toBe(page);
      expect((await pools()).find((x) => x.id === g.id)).toMatchObject({
        nombre: 'ventas-mx',
        celulares: [a.celularId, two].sort((x, y) => x - y),
        conmutacion_s: 300,
      });
      expect((await post(client, page, { nombre: 'ventas-mx', celulares: String(two), conmutacion_s: '' })).status).toBe(303);
      expect((await pools()).find((x) => x.id === g.id)).toMatchObject({ celulares: [two], conmutacion_s: null });
    });

    it('deletes after the typed name only; the same form sent twice acts once', async () => {
      expect((await post(client, base, { nombre: 'borrar', celulares: String(a.celularId) })).status).toBe(303);
      const g = (await pools()).find((x) => x.nombre === 'borrar')!;
      const page = `${base}/${g.id}`;
      const wrong = await post(client, `${page}/eliminar`, { confirmacion: 'otro' });
      expect(wrong.status).toBe(400);
      expect(wrong.text).toMatch(/id="f-confirmacion-error"[^>]*>confirmacion: type the pool&#39;s name, borrar, to delete it/);
      expect((await pools()).some((x) => x.id === g.id)).toBe(true);

      const once = randomBytes(18).toString('base64url');
      const first = await post(client, `${page}/eliminar`, { confirmacion: 'borrar', _once: once });
      expect(first.status, first.text).toBe(303);
      expect(first.headers.get('location')).toBe(base);
      const again = await post(client, `${page}/eliminar`, { confirmacion: 'borrar', _once: once });
      expect(again.status).toBe(303);
      expect(again.headers.get('location')).toBe(base);
      expect(again.headers.get('set-cookie')).toContain('acted%20once');
      expect((await pools()).some((x) => x.id === g.id)).toBe(false);
      // The deleted pool's page is not found; the line stays.
      expect((await get(client, page)).status).toBe(404);
      expect((await api(s.url, 'GET', `/api/celular.php?id=${a.celularId}`, { key: a.clientKey })).status).toBe(200);
    });

    it("finds no other client's pool, sends a line's session to its line, and lets the operator act for the client", async () => {
      const b = await seedClient(s);
      const other = await api(s.url, 'POST', '/api/grupo_crear.php', { key: b.clientKey, json: { nombre: 'suyo', celulares: [b.celularId] } });
      expect(other.status, other.text).toBe(201);
      const theirs = other.body.grupo.id as number;
      expect((await get(client, `${base}/${theirs}`)).status).toBe(404);
      expect((await get(client, `/panel/c/${b.clienteId}/grupos`)).status).toBe(404);
      expect((await post(client, `${base}/${theirs}`, { nombre: 'mio', celulares: String(a.celularId) })).status).toBe(404);
      expect((await post(client, `${base}/${theirs}/eliminar`, { confirmacion: 'suyo' })).status).toBe(404);
      for (const path of [`/panel/c/x/grupos`, `${base}/0`, `${base}/1e3`]) expect((await get(client, path)).status, path).toBe(404);

      const line = await signIn(a.celularKey);
      const r = await get(line, base);
      expect(r.status).toBe(303);
      expect(r.headers.get('location')).toBe(`/panel/c/${a.clienteId}/celulares/${a.celularId}`);
      expect((await post(line, base, { nombre: 'linea', celulares: String(a.celularId) })).status).toBe(403);

      const operator = await signIn(s.adminToken);
      const made = await post(operator, `/panel/c/${b.clienteId}/grupos`, { nombre: 'del-operador', celulares: String(b.celularId), conmutacion_s: '60' });
      expect(made.status, made.text).toBe(303);
      const list = await api(s.url, 'GET', '/api/grupos.php', { key: b.clientKey });
      expect(list.body.grupos.map((g: { nombre: string }) => g.nombre).sort()).toEqual(['del-operador', 'suyo']);
    });
  });
}

suite('the pools pages on SQLite', () => startTestServer({}, { inject: true }));

const drops: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const d of drops) await d();
});

describeWith(postgres, 'the pools pages on PostgreSQL', () => {
  suite('one node', async () => {
    const sc = await pgSchema();
    drops.push(sc.drop);
    return startTestServer({ store: schemaUrl(sc.schema) }, { inject: true });
  });
});
