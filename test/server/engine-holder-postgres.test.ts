import { afterAll, expect, it } from 'vitest';
import { systemClock } from '../../src/core/time/clock.js';
import { engineHolderOf, engineHolders } from '../../src/core/engine/engine-holders.js';
import type { Store } from '../../src/core/ports/store.js';
import { openPg, pgAdmin, pgSchema } from '../contract/adapters.js';
import { api, seedClient, startTestServer, type TestServer } from '../helpers/server.js';
import { describeWith, postgres, schemaUrl } from '../helpers/services.js';

/**
 * A line's engine holder on PostgreSQL (D-137), from rows written straight
 * into `nodos` and `motor_sesiones` as other nodes would: a node that beats,
 * one silent past its margin, one that left (no row), and a free line; then
 * the API's shape on a `serve --gateway baileys` of that store, whose line
 * another (live) node holds. The network's address is a closed local port:
 * no line is opened here.
 */
const NOW = '(EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::bigint';
const LIVE = { id: 'n-live', label: 'pasarela serve pid 11 on host-a' };
const drops: Array<() => Promise<void>> = [];
let store: Store | undefined;
let s: TestServer | undefined;
afterAll(async () => {
  await s?.stop();
  await store?.close();
  for (const d of drops) await d();
});

async function schema(): Promise<string> {
  const sc = await pgSchema();
  drops.push(sc.drop);
  return sc.schema;
}

/** Another node of the store, beating now with a margin of ten minutes (never taken over during the test), or silent for an hour. */
const nodeRow = (id: string, label: string, silentMs: number, url: string | null) =>
  `INSERT INTO nodos (id, etiqueta, heartbeat_at, stale_ms, started_at, margen_ms, motor_url)
   VALUES ('${id}', '${label}', ${NOW} - ${silentMs}, 600000, ${NOW} - ${silentMs}, 600000, ${url === null ? 'NULL' : `'${url}'`});`;

describeWith(postgres, 'the engine holder of a line (PostgreSQL)', () => {
  it('is the live node with its label, a silent one as not present, a node that left by its id; a free line has none', async () => {
    const sc = await schema();
    store = await openPg(sc);
    await pgAdmin(`SET search_path TO ${sc};
      ${nodeRow(LIVE.id, LIVE.label, 0, 'http://127.0.0.1:9')}
      ${nodeRow('n-silent', 'pasarela serve pid 12 on host-b', 3_600_000, 'http://127.0.0.1:9')}
      INSERT INTO motor_sesiones (instancia, nodo, token, desde) VALUES
        ('i-live', 'n-live', 1, ${NOW}), ('i-live-2', 'n-live', 3, ${NOW}), ('i-silent', 'n-silent', 2, ${NOW}),
        ('i-left', 'n-left', 1, ${NOW}), ('i-free', NULL, 4, 0);`);
    const core = { gateway: { name: 'baileys' } as never, store, clock: systemClock };
    expect(await engineHolderOf(core, 'i-live')).toEqual({ id: LIVE.id, etiqueta: LIVE.label, presente: true });
    expect(await engineHolderOf(core, 'i-silent')).toEqual({ id: 'n-silent', etiqueta: 'pasarela serve pid 12 on host-b', presente: false });
    expect(await engineHolderOf(core, 'i-left')).toEqual({ id: 'n-left', etiqueta: null, presente: false });
    expect(await engineHolderOf(core, 'i-free')).toBeNull();
    expect(await engineHolderOf(core, 'i-none')).toBeNull();
    const all = (await engineHolders(core))!;
    expect(all.of('i-silent')).toEqual({ id: 'n-silent', etiqueta: 'pasarela serve pid 12 on host-b', presente: false });
    expect(all.summary()).toEqual({
      nodos: [
        { id: LIVE.id, etiqueta: LIVE.label, presente: true, lineas: 2 },
        { id: 'n-left', etiqueta: null, presente: false, lineas: 1 },
        { id: 'n-silent', etiqueta: 'pasarela serve pid 12 on host-b', presente: false, lineas: 1 },
      ],
      libres: 1,
    });
    expect(await engineHolders({ ...core, gateway: { name: 'evolution' } as never })).toBeUndefined();
  });

  it("celular_status.php and the operator's client page name the node holding the line; the status read there fails and the stored one is answered", async () => {
    const sc = await schema();
    s = await startTestServer({ store: schemaUrl(sc), gateway: 'baileys', baileysWsUrl: 'ws://127.0.0.1:9/ws' });
    const A = await seedClient(s);
    const instancia = `pasarela-${A.celularId}`;
    await s.core.store.updateCelular(A.celularId, { gateway_instancia: instancia }, s.core.clock.now());
    await pgAdmin(`SET search_path TO ${sc};
      ${nodeRow(LIVE.id, LIVE.label, 0, 'http://127.0.0.1:9')}
      INSERT INTO motor_sesiones (instancia, nodo, token, desde) VALUES ('${instancia}', '${LIVE.id}', 1, ${NOW});`);
    const holder = { id: LIVE.id, etiqueta: LIVE.label, presente: true };

    const st = await api(s.url, 'GET', `/api/celular_status.php?id=${A.celularId}`, { key: A.clientKey });
    expect(st.status, st.text).toBe(200);
    // The holder's address is a closed port: the status could not be read there.
    expect(st.body).toMatchObject({
      ok: true,
      celular_id: A.celularId,
      gateway_instancia: instancia,
      status_actualizado_desde_gateway: false,
      motor_nodo: holder,
    });

    const op = await api(s.url, 'GET', `/admin/clientes/${A.clienteId}`, { key: s.adminToken });
    expect(op.status, op.text).toBe(200);
    expect(op.body.celulares).toEqual([expect.objectContaining({ id: A.celularId, servidor: null, motor_nodo: holder })]);

    // A line never linked has no instance, so no holder.
    const c = await api(s.url, 'POST', '/api/celular_crear.php', { key: A.clientKey, json: { numero: '5215550009999' } });
    expect(c.status, c.text).toBe(201);
    const none = await api(s.url, 'GET', `/api/celular_status.php?id=${c.body.celular_id}`, { key: A.clientKey });
    expect(none.body.motor_nodo).toBeNull();
    const both = (await api(s.url, 'GET', `/admin/clientes/${A.clienteId}`, { key: s.adminToken })).body.celulares;
    expect(both.find((l: { id: number }) => l.id === c.body.celular_id).motor_nodo).toBeNull();
  });
});
