import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { iso, type ManualClock } from '../../src/core/time/clock.js';
import type { SessionStatusEvent } from '../../src/core/events/events.js';
import type { Gateway, InstanceSpec } from '../../src/core/ports/gateway.js';
import type { SimGateway } from '../../src/gateways/sim.js';
import { api, startTestServer, type TestServer } from '../helpers/server.js';
import { expectOk } from '../helpers/expect.js';
import { LineHealth } from '../../src/core/accounts/line-health.js';
import { linkedLine, type Line } from './send-helpers.js';
import { setWebhook, startReceiver, type Receiver } from './webhook-helpers.js';
import { until } from '../helpers/poll.js';

/**
 * The line health check (LineHealth): a pass asks the gateway for every
 * line's session and records what it finds, so a session lost without an
 * event (a gateway restart, a lost webhook) does not leave the line `activo`;
 * /health reports the last pass. The periodic timer is off here
 * (healthIntervalMs 0): each test runs a pass with checkNow().
 */

interface SimSession {
  numero: string;
  status: string;
  seed: string;
  qrSince: number;
  connectedAt: number | null;
}

const sim = (s: TestServer) => s.core.gateway as SimGateway;

/** Changes the simulator's stored session behind the server's back: no event is emitted. */
async function setSessionSilently(s: TestServer, instancia: string, status: string): Promise<void> {
  const session = await s.core.store.kvGet<SimSession>('sim.sessions', instancia);
  if (!session) throw new Error(`no sim session for ${instancia}`);
  await s.core.store.kvSet('sim.sessions', instancia, { ...session, status });
}

const instanciaOf = async (s: TestServer, line: Line) => (await s.core.store.getCelular(line.celularId))!.gateway_instancia!;
const health = async (s: TestServer) => {
  const r = await api(s.url, 'GET', '/health');
  expectOk(r);
  return r.body;
};

describe('health pass on a sim server', () => {
  let s: TestServer;
  let receiver: Receiver;
  let events: SessionStatusEvent[] = [];
  let unsub: () => void = () => {};
  const clock = () => s.clock as ManualClock;
  const mine = (line: Line) => events.filter((e) => e.celular_id === line.celularId);

  beforeAll(async () => {
    s = await startTestServer({ healthIntervalMs: 0, allowPrivateUrls: true, webhookRetryMs: 50 });
    receiver = await startReceiver(200);
    unsub = s.core.bus.subscribe('session.status', (e) => events.push(e));
  });
  afterAll(async () => {
    unsub();
    await s?.stop();
    await receiver?.close();
  });
  afterEach(() => {
    sim(s).setOutage(false);
    events = [];
  });

  it('before any pass /health says nothing of the gateway', async () => {
    expect(await health(s)).toMatchObject({
      status: 'ok',
      gateway: 'sim',
      simulado: true,
      gateway_alcanzable: null,
      gateway_verificado: null,
      lineas_verificadas: 0,
      lineas_fallidas: 0,
    });
    // A pass over no line asks the gateway for an instance that cannot exist: any answer means it is up.
    await s.health.checkNow();
    expect(await health(s)).toMatchObject({ gateway_alcanzable: true, lineas_verificadas: 0 });
    sim(s).setOutage(true);
    await s.health.checkNow();
    expect(await health(s)).toMatchObject({ gateway_alcanzable: false, lineas_verificadas: 0 });
  });

  it('a session lost without an event: logged_out, desconectado, checked now, one session.status (bus and webhook); a second pass fires nothing', async () => {
    const L = await linkedLine(s);
    expectOk(await setWebhook(s, L.clientKey, { url: `${receiver.url}/hook`, eventos: ['session.status'] }));
    const instancia = await instanciaOf(s, L);
    clock().advance(60_000);
    events = [];
    await setSessionSilently(s, instancia, 'logged_out');
    // Nothing noticed yet.
    expect(await s.core.store.getCelular(L.celularId)).toMatchObject({ estado: 'activo', last_status: 'connected' });

    await s.health.checkNow();
    const checkedAt = clock().now();
    expect(await s.core.store.getCelular(L.celularId)).toMatchObject({ estado: 'desconectado', last_status: 'logged_out', last_status_check: checkedAt });
    expect(mine(L).map((e) => [e.status_anterior, e.status, e.estado])).toEqual([['connected', 'logged_out', 'desconectado']]);
    expect(mine(L)[0]).toMatchObject({ cliente_id: L.clienteId, gateway_instancia: instancia, fecha: iso(checkedAt) });
    // (Deliveries of the link itself may arrive too: the webhook was set right after it.)
    const lost = (x: { json?: any }) => x.json?.evento === 'session.status' && x.json?.celular_id === L.celularId && x.json?.data?.status === 'logged_out';
    const hit = await receiver.wait(lost, 5000, 'session.status webhook');
    expect(hit.json.data).toMatchObject({ status: 'logged_out', status_anterior: 'connected', estado: 'desconectado', gateway_instancia: instancia });

    const h = await health(s);
    expect(h).toMatchObject({ gateway_alcanzable: true, gateway_verificado: iso(checkedAt), lineas_fallidas: 0 });
    expect(h.lineas_verificadas).toBeGreaterThanOrEqual(1);

    // Nothing changed: the check time moves, nothing is published or delivered.
    clock().advance(60_000);
    await s.health.checkNow();
    expect(await s.core.store.getCelular(L.celularId)).toMatchObject({ estado: 'desconectado', last_status: 'logged_out', last_status_check: clock().now() });
    expect(mine(L)).toHaveLength(1);
    expect((await health(s)).gateway_verificado).toBe(iso(clock().now()));
    // A status call (one more round trip) would have let a duplicate delivery arrive; there is none.
    await api(s.url, 'GET', `/api/celular_status.php?id=${L.celularId}`, { key: L.celularKey });
    expect(receiver.hits.filter(lost)).toHaveLength(1);
  });

  it('lines found as recorded are written in one call a page, no compare-and-set a line; one changed meanwhile keeps the newer status', async () => {
    const A = await linkedLine(s);
    const B = await linkedLine(s);
    clock().advance(60_000);
    events = [];
    const store = s.core.store;
    const record = store.recordStatusChecks.bind(store);
    const perLine = vi.spyOn(store, 'updateCelularIf');
    // Between the pass's read and its write, B's session is reported lost, observed after the pass asked the gateway.
    const batch = vi.spyOn(store, 'recordStatusChecks').mockImplementation(async (checks, now) => {
      const b = (await store.getCelular(B.celularId))!;
      await store.updateCelularIf(b.id, b, { last_status: 'logged_out', last_status_check: clock().now() + 1, estado: 'desconectado' }, now);
      perLine.mockClear();
      return record(checks, now);
    });
    try {
      await s.health.checkNow();
      expect(batch).toHaveBeenCalledTimes(1);
      expect(batch.mock.calls[0]![0].map((c) => c.id)).toEqual(expect.arrayContaining([A.celularId, B.celularId]));
      expect(await store.getCelular(A.celularId)).toMatchObject({ last_status: 'connected', last_status_check: clock().now() });
      // B's newer status stands: the pass's older observation, applied the per-line way, changes nothing.
      expect(await store.getCelular(B.celularId)).toMatchObject({ last_status: 'logged_out', estado: 'desconectado', last_status_check: clock().now() + 1 });
      expect(perLine).not.toHaveBeenCalled();
      expect(mine(A)).toEqual([]);
    } finally {
      batch.mockRestore();
      perLine.mockRestore();
    }
  });

  it('after the adopting pass, a page of lines is asked of the gateway in one call where it answers so (the simulator does)', async () => {
    await linkedLine(s);
    await linkedLine(s);
    await s.health.checkNow();
    const one = vi.spyOn(sim(s), 'status');
    const many = vi.spyOn(sim(s), 'statuses');
    try {
      await s.health.checkNow();
      expect(many).toHaveBeenCalledTimes(1);
      expect(many.mock.calls[0]![0].length).toBeGreaterThanOrEqual(2);
      expect(one).not.toHaveBeenCalled();
      expect(await health(s)).toMatchObject({ gateway_alcanzable: true, lineas_fallidas: 0 });
    } finally {
      one.mockRestore();
      many.mockRestore();
    }
  });

  it('a session back without an event: the line is activo again after a pass', async () => {
    const L = await linkedLine(s);
    const instancia = await instanciaOf(s, L);
    events = [];
    await setSessionSilently(s, instancia, 'logged_out');
    await s.health.checkNow();
    expect(await s.core.store.getCelular(L.celularId)).toMatchObject({ estado: 'desconectado', last_status: 'logged_out' });
    await setSessionSilently(s, instancia, 'connected');
    await s.health.checkNow();
    expect(await s.core.store.getCelular(L.celularId)).toMatchObject({ estado: 'activo', last_status: 'connected' });
    expect(mine(L).map((e) => e.status)).toEqual(['logged_out', 'connected']);
  });

  it('in an outage every line fails: gateway_alcanzable false, lineas_fallidas = lineas_verificadas, stored status unchanged; celular_status is not refreshed', async () => {
    const L1 = await linkedLine(s);
    const L2 = await linkedLine(s, { link: false });
    await s.health.checkNow();
    const before1 = (await s.core.store.getCelular(L1.celularId))!;
    const before2 = (await s.core.store.getCelular(L2.celularId))!;
    expect(before1).toMatchObject({ estado: 'activo', last_status: 'connected' });
    events = [];

    sim(s).setOutage(true);
    clock().advance(60_000);
    await s.health.checkNow();
    const h = await health(s);
    expect(h.gateway_alcanzable).toBe(false);
    expect(h.lineas_verificadas).toBeGreaterThanOrEqual(2);
    expect(h.lineas_fallidas).toBe(h.lineas_verificadas);
    expect(h.gateway_verificado).toBe(iso(clock().now()));
    for (const [line, before] of [
      [L1, before1],
      [L2, before2],
    ] as const) {
      const after = (await s.core.store.getCelular(line.celularId))!;
      expect(after).toMatchObject({ estado: before.estado, last_status: before.last_status, last_status_check: before.last_status_check });
    }
    expect(events).toEqual([]);
    await until(() => s.logs.some((l) => l.includes('line health check failed') && l.includes('simulated outage')), { what: 'the logged health failure' });

    const st = await api(s.url, 'GET', `/api/celular_status.php?id=${L1.celularId}`, { key: L1.celularKey });
    expectOk(st);
    expect(st.body).toMatchObject({
      status: 'connected',
      estado: 'activo',
      status_actualizado_desde_gateway: false,
      ultimo_check: iso(before1.last_status_check!),
    });

    sim(s).setOutage(false);
    await s.health.checkNow();
    expect(await health(s)).toMatchObject({ gateway_alcanzable: true, lineas_fallidas: 0 });
    const st2 = await api(s.url, 'GET', `/api/celular_status.php?id=${L1.celularId}`, { key: L1.celularKey });
    expect(st2.body).toMatchObject({ status: 'connected', status_actualizado_desde_gateway: true });
  });

  it('two checkNow calls at once share one pass', async () => {
    const a = s.health.checkNow();
    const b = s.health.checkNow();
    expect(a).toBe(b);
    await a;
    const c = s.health.checkNow();
    expect(c).not.toBe(a);
    await c;
  });
});

describe('instance adoption by the first pass', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer({ healthIntervalMs: 0 });
  });
  afterAll(async () => {
    vi.restoreAllMocks();
    await s?.stop();
  });

  it('ensureInstance for every line once every line answered; retried by the next pass after a failed one', async () => {
    const L1 = await linkedLine(s);
    const L2 = await linkedLine(s, { link: false });
    const calls: Array<[string, InstanceSpec]> = [];
    const orig = sim(s).ensureInstance.bind(sim(s));
    vi.spyOn(sim(s) as Gateway, 'ensureInstance').mockImplementation(async (instancia: string, spec: InstanceSpec) => {
      calls.push([instancia, spec]);
      return orig();
    });

    sim(s).setOutage(true);
    await s.health.checkNow();
    expect((await health(s)).gateway_alcanzable).toBe(false);
    sim(s).setOutage(false);
    calls.length = 0;

    await s.health.checkNow();
    expect(calls.map(([i, spec]) => [i, spec.numero, spec.token]).sort()).toEqual(
      [
        [`pasarela-${L1.celularId}`, L1.numero, undefined],
        [`pasarela-${L2.celularId}`, L2.numero, undefined],
      ].sort(),
    );
    calls.length = 0;
    await s.health.checkNow();
    expect(calls).toEqual([]);
    expect(await health(s)).toMatchObject({ gateway_alcanzable: true, lineas_verificadas: 2, lineas_fallidas: 0 });
  });
});

describe('the periodic pass', () => {
  it('runs at start and then every healthIntervalMs, without checkNow', async () => {
    const s = await startTestServer({ healthIntervalMs: 50 });
    try {
      const L = await linkedLine(s);
      await setSessionSilently(s, await instanciaOf(s, L), 'logged_out');
      // Each pass rests a checked line for 0.9 of the interval on the server's (manual) clock: time is moved
      // on, or a line checked before the session was lost would never be due again (a pass that checked it
      // while still connected, as a loaded machine's timing sometimes has it).
      const clock = s.clock as ManualClock;
      await until(
        async () => {
          clock.advance(50);
          return (await s.core.store.getCelular(L.celularId))!.estado === 'desconectado';
        },
        { what: 'the periodic pass to see the lost session' },
      );
      expect((await health(s)).gateway_alcanzable).toBe(true);
    } finally {
      await s.stop();
    }
  });
});

type Node = ConstructorParameters<typeof LineHealth>[1];
/** A node whose page reads `read` answers: no line in any. */
const nodeReading = (read: (after: number, limit: number) => Promise<unknown>) => ({ takeLines: read, giveAll: async () => {} }) as unknown as Node;
/** A store and gateway for passes that never reach a line. */
const bareCore = (shared = false) =>
  ({
    clock: { now: () => 0 },
    store: { caps: { shared }, checkLineHealth: async () => undefined, pruneLineFailures: async () => 0 },
    gateway: { status: async () => 'connected' },
  }) as unknown as ConstructorParameters<typeof LineHealth>[0];
const EMPTY = { taken: [], last: null, more: false };

describe('a pass that cannot read the lines', () => {
  it('is reported through onError, not left as an unhandled rejection; the next pass still runs; stop() resolves', async () => {
    let reads = 0;
    const errors: unknown[] = [];
    const node = nodeReading(async () => {
      reads += 1;
      throw new Error('database is locked');
    });
    const h = new LineHealth(bareCore(), node, { intervalMs: 20, concurrency: 1, onError: (err) => errors.push(err) });
    h.start();
    try {
      await until(() => reads >= 2, { what: 'a second pass after a failed one' });
      expect(errors.length).toBeGreaterThanOrEqual(1);
      expect(String(errors[0])).toContain('database is locked');
    } finally {
      await h.stop();
    }
  });
});

describe('a very long interval', () => {
  it('beyond what setTimeout takes (about 24.8 days) it waits, instead of running every millisecond', async () => {
    let reads = 0;
    const node = nodeReading(async () => ((reads += 1), EMPTY));
    const h = new LineHealth(bareCore(), node, { intervalMs: 30 * 24 * 3_600_000, concurrency: 1, onError: () => {} });
    const warnings: string[] = [];
    const onWarning = (w: Error) => warnings.push(w.name);
    process.on('warning', onWarning);
    // Fake timers (which clamp an overflowing delay to 1 ms, as Node does): 150 ms pass without a real wait.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    h.start();
    try {
      for (let ms = 0; ms < 10 && reads < 1; ms++) await vi.advanceTimersByTimeAsync(1);
      expect(reads, 'the first pass').toBe(1);
      await vi.advanceTimersByTimeAsync(150);
      expect(reads).toBe(1);
      expect(warnings).not.toContain('TimeoutOverflowWarning');
    } finally {
      process.off('warning', onWarning);
      vi.useRealTimers();
      await h.stop();
    }
  });
});

describe("a pass's page of lines", () => {
  it('is 1,000 lines on a shared store (four or five round trips a page, whatever its size) and 200 on SQLite (one group commit a page)', async () => {
    for (const shared of [true, false]) {
      const limits: number[] = [];
      const node = nodeReading(async (_after, limit) => (limits.push(limit), EMPTY));
      const h = new LineHealth(bareCore(shared), node, { intervalMs: 0, concurrency: 1, onError: () => {} });
      await h.checkNow();
      expect(limits).toEqual([shared ? 1000 : 200]);
    }
  });

  it('the last page says so: no read follows it, not even after a page exactly full', async () => {
    for (const [total, afters] of [
      [1500, [0, 1000]],
      [1000, [0]],
      [999, [0]],
      [2000, [0, 1000]],
    ] as const) {
      const read: number[] = [];
      // Another node holds every line: the pass pages through them and checks none.
      const node = nodeReading(async (after, limit) => {
        read.push(after);
        const n = Math.max(0, Math.min(limit, total - after));
        return { taken: [], last: n > 0 ? after + n : null, more: after + n < total };
      });
      const h = new LineHealth(bareCore(true), node, { intervalMs: 0, concurrency: 1, onError: () => {} });
      await h.checkNow();
      expect(read, `${total} lines`).toEqual(afters);
    }
  });
});
