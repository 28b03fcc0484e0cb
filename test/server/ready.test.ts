import type Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import type { SimGateway } from '../../src/gateways/sim.js';
import { writeFailed } from '../../src/store/faults.js';
import { api, startTestServer, type TestServer } from '../helpers/server.js';

/**
 * Readiness (GET /ready), apart from liveness (GET /health): 503 listing
 * `motivos` while the store takes no writes or the node is draining; a
 * gateway that does not answer is `degradado` and leaves the node ready.
 */
const servers: TestServer[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await s.stop();
});

const dbOf = (s: TestServer) => (s.core.store as unknown as { db: Database.Database }).db;
const sim = (s: TestServer) => s.core.gateway as unknown as SimGateway;

describe('GET /ready', () => {
  it('is 200 on a normal server, without credentials and without secrets', async () => {
    const s = await startTestServer({ healthIntervalMs: 0 });
    servers.push(s);
    const r = await api(s.url, 'GET', '/ready');
    expect(r.status, r.text).toBe(200);
    expect(r.body).toEqual({ ok: true, listo: true, draining: false, store: 'sqlite', gateway: 'sim', gateway_alcanzable: null, motivos: [], degradado: [] });
    expect(r.text).not.toContain(s.adminToken);
  });

  it('a gateway that does not answer is degradado, still ready', async () => {
    const s = await startTestServer({ healthIntervalMs: 0 });
    servers.push(s);
    sim(s).setOutage(true);
    await s.health.checkNow();
    const r = await api(s.url, 'GET', '/ready');
    expect(r.status, r.text).toBe(200);
    expect(r.body).toMatchObject({ ok: true, listo: true, gateway_alcanzable: false, motivos: [] });
    expect(r.body.degradado).toEqual([expect.objectContaining({ codigo: 'gateway_unreachable' })]);
    sim(s).setOutage(false);
  });

  it('is 503 with store_unavailable while the store takes no writes, while /health is 503 too; 200 again once it has room', async () => {
    const s = await startTestServer({ healthIntervalMs: 0 });
    servers.push(s);
    const db = dbOf(s);
    // No page to spare, and a write recorded as failed: the probe cannot clear the fault.
    db.pragma(`max_page_count = ${db.pragma('page_count', { simple: true }) as number}`);
    writeFailed(db, Object.assign(new Error('database or disk is full'), { code: 'SQLITE_FULL' }));
    const r = await api(s.url, 'GET', '/ready');
    expect(r.status, r.text).toBe(503);
    expect(r.body).toMatchObject({ ok: false, listo: false, draining: false, store: 'sqlite' });
    expect(r.body.motivos).toEqual([{ codigo: 'store_unavailable', detalle: expect.stringContaining('SQLITE_FULL') }]);
    expect((await api(s.url, 'GET', '/health')).status).toBe(503);
    db.pragma('max_page_count = 1073741823');
    expect((await api(s.url, 'GET', '/ready')).status).toBe(200);
  });

  it('turns 503 (draining) at the first step of a graceful stop, while everything else still serves', async () => {
    const s = await startTestServer({ healthIntervalMs: 0 });
    servers.push(s);
    s.drain('test stop');
    const r = await api(s.url, 'GET', '/ready');
    expect(r.status, r.text).toBe(503);
    expect(r.body).toMatchObject({ ok: false, listo: false, draining: true, motivos: [{ codigo: 'draining', detalle: 'test stop' }] });
    const h = await api(s.url, 'GET', '/health');
    expect(h.status, h.text).toBe(200);
    expect(h.body.status).toBe('ok');
  });
});
