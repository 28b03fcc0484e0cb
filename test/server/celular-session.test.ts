import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { SessionStatusEvent } from '../../src/core/events/events.js';
import { SIM_PUSH_NAME, type SimGateway } from '../../src/gateways/sim.js';
import { pgSchema } from '../contract/adapters.js';
import { expectError, expectOk } from '../helpers/expect.js';
import { until } from '../helpers/poll.js';
import { api, startTestServer, type TestServer } from '../helpers/server.js';
import { describeWith, postgres, schemaUrl } from '../helpers/services.js';
import { admin, linkedLine, type Line } from './send-helpers.js';

/**
 * A line's session logged out and restarted (core/accounts/session-actions.ts) on the
 * simulator, through the API: the client key, the line's key and the
 * operator; the refusals (no session, suspended, out of scope, the gateway
 * down); the audit records; and the linked phone's profile on the line's
 * reads. The same on SQLite and on PostgreSQL.
 */

function sessionSuite(label: string, start: () => Promise<{ s: TestServer; drop?: () => Promise<void> }>) {
  describe(`session logout and restart (${label})`, () => {
    let s: TestServer;
    let drop: (() => Promise<void>) | undefined;
    let events: SessionStatusEvent[] = [];
    let off: () => void = () => {};
    const sim = () => s.core.gateway as SimGateway;
    const post = (path: string, key: string) => api(s.url, 'POST', path, { key });
    const status = async (L: Line) => (await api(s.url, 'GET', `/api/celular_status.php?id=${L.celularId}`, { key: L.clientKey })).body;
    const audits = async (L: Line) =>
      ((await api(s.url, 'GET', `/admin/auditoria?cliente_id=${L.clienteId}`, { key: s.adminToken })).body.registros as Array<Record<string, any>>).filter(
        (r) => r.objeto_id === L.celularId,
      );

    beforeAll(async () => {
      ({ s, drop } = await start());
      off = s.core.bus.subscribe('session.status', (e) => events.push(e));
    });
    afterAll(async () => {
      off();
      await s?.stop();
      await drop?.();
    });
    afterEach(() => {
      sim().setOutage(false);
      events = [];
    });

    it('the client key logs a linked line out: logged_out, desconectado, unlinked, one event, audited with before and after', async () => {
      const L = await linkedLine(s);
      const r = await post(`/api/celular_logout.php?id=${L.celularId}`, L.clientKey);
      expectOk(r);
      expect(r.body).toMatchObject({ celular_id: L.celularId, status: 'logged_out', estado: 'desconectado', vinculado: false });
      expect(r.body.celular).toMatchObject({ id: L.celularId, last_status: 'logged_out', estado: 'desconectado' });
      expect((await s.core.store.getCelular(L.celularId))!.vinculado).toBe(0);
      expect(await status(L)).toMatchObject({ status: 'logged_out', estado: 'desconectado', perfil: null });
      await until(() => events.some((e) => e.celular_id === L.celularId && e.status === 'logged_out'), { what: 'the session.status event' });
      expect(events.filter((e) => e.celular_id === L.celularId && e.status === 'logged_out')).toHaveLength(1);
      const [a] = (await audits(L)).filter((x) => x.accion === 'celular.logout');
      expect(a).toMatchObject({
        actor: `cliente:${L.clienteId}`,
        objeto_tipo: 'celular',
        detalle: { antes: { status: 'connected', estado: 'activo' }, despues: { status: 'logged_out', estado: 'desconectado' } },
      });
      // Nothing left to log out or restart: 409 with its own code, and no second audit record.
      expectError(await post(`/api/celular_logout.php?id=${L.celularId}`, L.clientKey), 409, 625);
      expectError(await post(`/api/celular_reiniciar.php?id=${L.celularId}`, L.clientKey), 409, 625);
      expect((await audits(L)).filter((x) => x.accion === 'celular.logout')).toHaveLength(1);
      // A send from it is refused as the spec says for a line that is not linked.
      const send = await api(s.url, 'POST', '/api/mensaje_enviar_texto.php', { key: L.celularKey, json: { destinatario: '5215500000001', mensaje: 'x' } });
      expectError(send, 403, 301);
    });

    it("the line's own key restarts its session: connecting now, connected again by the simulator's events; still linked", async () => {
      const L = await linkedLine(s);
      const r = await post(`/api/celular_reiniciar.php?id=${L.celularId}`, L.celularKey);
      expectOk(r);
      expect(r.body).toMatchObject({ celular_id: L.celularId, status: 'connecting', estado: 'activo', vinculado: true });
      await until(async () => (await status(L)).status === 'connected', { what: 'the line connected again' });
      // The link's own events (need_scan, connected) come first; then the restart's, once each.
      await until(
        () =>
          /,connecting,connected$/.test(
            events
              .filter((e) => e.celular_id === L.celularId)
              .map((e) => e.status)
              .join(),
          ),
        {
          what: () => `connecting then connected, saw ${events.map((e) => e.status).join()}`,
        },
      );
      expect(events.filter((e) => e.celular_id === L.celularId && e.status === 'connecting')).toHaveLength(1);
      const [a] = (await audits(L)).filter((x) => x.accion === 'celular.reiniciar');
      expect(a).toMatchObject({ actor: `celular:${L.celularId}(key)`, detalle: { antes: { status: 'connected' }, despues: { status: 'connecting' } } });
      // The key works on the legacy token too, and on the body's id.
      const again = await api(s.url, 'POST', '/api/celular_reiniciar.php', { json: { key: L.gatewayToken, id: L.celularId } });
      expectOk(again);
    });

    it('the operator logs out and restarts any line; audited as the operator', async () => {
      const L = await linkedLine(s);
      const re = await admin(s, 'POST', `/admin/celulares/${L.celularId}/reiniciar`);
      expectOk(re);
      expect(re.body.status).toBe('connecting');
      await until(async () => (await status(L)).status === 'connected', { what: 'connected again' });
      const out = await admin(s, 'POST', `/admin/celulares/${L.celularId}/logout`);
      expectOk(out);
      expect(out.body).toMatchObject({ status: 'logged_out', estado: 'desconectado', vinculado: false });
      const mine = await audits(L);
      expect(mine.filter((x) => x.accion === 'celular.logout' || x.accion === 'celular.reiniciar').map((x) => [x.accion, x.actor])).toEqual([
        ['celular.logout', 'operator'],
        ['celular.reiniciar', 'operator'],
      ]);
      expectError(await admin(s, 'POST', '/admin/celulares/99999999/logout'), 404, 600);
      expectError(await api(s.url, 'POST', `/admin/celulares/${L.celularId}/logout`, { key: L.clientKey }), 401, 200);
      expectError(await api(s.url, 'POST', `/admin/celulares/abc/reiniciar`, { key: s.adminToken }), 400, 100);
    });

    it('a line never linked has no session: 409 NO_SESSION, nothing asked of the gateway', async () => {
      const L = await linkedLine(s, { link: false });
      for (const path of ['/api/celular_logout.php', '/api/celular_reiniciar.php']) {
        const r = await post(`${path}?id=${L.celularId}`, L.clientKey);
        expectError(r, 409, 625);
        expect(r.body.error).toMatch(/never linked/);
      }
      expectError(await admin(s, 'POST', `/admin/celulares/${L.celularId}/logout`), 409, 625);
      expect(await audits(L)).not.toContainEqual(expect.objectContaining({ accion: 'celular.logout' }));
    });

    it('out of scope: another client 404, a sibling line key 403, no key 401, no id 400', async () => {
      const L = await linkedLine(s);
      const M = await linkedLine(s);
      expectError(await post(`/api/celular_logout.php?id=${L.celularId}`, M.clientKey), 404, 600);
      expectError(await post(`/api/celular_reiniciar.php?id=${L.celularId}`, M.celularKey), 404, 600);
      const sib = await api(s.url, 'POST', '/api/celular_crear.php', { key: L.clientKey, json: { numero: `52155${String(Date.now()).slice(-8)}` } });
      expect(sib.status, sib.text).toBe(201);
      expectError(await post(`/api/celular_logout.php?id=${L.celularId}`, sib.body.api_key), 403, 201);
      expectError(await api(s.url, 'POST', `/api/celular_logout.php?id=${L.celularId}`), 401, 200);
      expectError(await post('/api/celular_logout.php', L.clientKey), 400, 100);
      expectError(await post('/api/celular_logout.php?id=0', L.clientKey), 400, 100);
      expect((await status(L)).status).toBe('connected');
    });

    it('a suspended line, or a suspended client, is refused with the existing codes; the session is left alone', async () => {
      const L = await linkedLine(s);
      expectOk(await api(s.url, 'POST', `/api/celular_editar.php?id=${L.celularId}`, { key: L.clientKey, json: { estado: 'suspendido' } }));
      expectError(await post(`/api/celular_logout.php?id=${L.celularId}`, L.clientKey), 403, 301);
      expectError(await admin(s, 'POST', `/admin/celulares/${L.celularId}/reiniciar`), 403, 301);
      const M = await linkedLine(s);
      expectOk(await admin(s, 'PATCH', `/admin/clientes/${M.clienteId}`, { estado: 'suspendido' }));
      expectError(await post(`/api/celular_logout.php?id=${M.celularId}`, M.clientKey), 403, 302);
      expectError(await admin(s, 'POST', `/admin/celulares/${M.celularId}/logout`), 403, 302);
      expect((await status(L)).status).toBe('connected');
      expect((await status(M)).status).toBe('connected');
    });

    it('a gateway that cannot be reached: 502 GATEWAY_ERROR, the line unchanged and nothing audited', async () => {
      const L = await linkedLine(s);
      sim().setOutage(true);
      for (const path of ['/api/celular_logout.php', '/api/celular_reiniciar.php']) expectError(await post(`${path}?id=${L.celularId}`, L.clientKey), 502, 700);
      sim().setOutage(false);
      expect((await s.core.store.getCelular(L.celularId))!).toMatchObject({ last_status: 'connected', vinculado: 1, estado: 'activo' });
      expect((await audits(L)).map((x) => x.accion)).not.toContain('celular.logout');
    });

    it("the line's reads name the linked phone (perfil), null once logged out; a gateway down leaves it null, the read answers", async () => {
      const L = await linkedLine(s);
      const show = await api(s.url, 'GET', `/api/celular.php?id=${L.celularId}`, { key: L.celularKey });
      expectOk(show);
      expect(show.body.perfil).toEqual({ nombre: SIM_PUSH_NAME, numero: L.numero });
      expect((await status(L)).perfil).toEqual({ nombre: SIM_PUSH_NAME, numero: L.numero });
      expectOk(await post(`/api/celular_logout.php?id=${L.celularId}`, L.clientKey));
      expect((await api(s.url, 'GET', `/api/celular.php?id=${L.celularId}`, { key: L.clientKey })).body.perfil).toBeNull();
      const N = await linkedLine(s);
      sim().setOutage(true);
      const down = await api(s.url, 'GET', `/api/celular.php?id=${N.celularId}`, { key: N.clientKey });
      expectOk(down);
      expect(down.body.perfil).toBeNull();
    });
  });
}

sessionSuite('SQLite', async () => ({ s: await startTestServer({}, { inject: true }) }));

describeWith(postgres, 'on PostgreSQL', () => {
  sessionSuite('PostgreSQL', async () => {
    const schema = await pgSchema();
    return { s: await startTestServer({ store: schemaUrl(schema.schema) }, { inject: true }), drop: schema.drop };
  });
});
