import { describe, expect, it, vi } from 'vitest';
import { ManualClock } from '../../src/core/time/clock.js';
import { GatewayFailure, type Gateway } from '../../src/core/ports/gateway.js';
import { SimGateway } from '../../src/gateways/sim.js';
import { countGatewayCalls } from '../../src/server/metrics/gateway.js';
import { Metrics } from '../../src/server/metrics/metrics.js';
import { openSqliteStore } from '../../src/store/sqlite/store.js';

/**
 * The gateway port counted by a proxy (src/server/metrics/gateway.ts): each
 * call by operation and outcome, timed; the adapter's own surface (the
 * simulator's controls, instanceof, a spy) untouched; the adapters of single
 * gateway servers counted too.
 */

function setup() {
  const store = openSqliteStore(':memory:');
  const clock = new ManualClock();
  const metrics = new Metrics({ store, clock, storeCacheMs: 0, info: { store: 'sqlite', gateway: 'sim' }, onError: () => {} });
  const sim = new SimGateway(store, clock, { qrRotateMs: 20_000, deliveryMs: 1000, readMs: 3000 });
  return { store, metrics, sim, gw: countGatewayCalls(sim, metrics) };
}

const calls = async (m: Metrics, operation: string, outcome: string) =>
  (await m.gatewayCalls.get()).values.find((v) => v.labels.operation === operation && v.labels.outcome === outcome)?.value ?? 0;
const timed = async (m: Metrics, operation: string) =>
  (await m.gatewayDuration.get()).values.find((v) => v.metricName === 'pasarela_gateway_call_duration_seconds_count' && v.labels.operation === operation)
    ?.value ?? 0;

describe('countGatewayCalls', () => {
  it('counts each call by operation and outcome (a failure by its kind, anything else as error), and times it', async () => {
    const { store, metrics, sim, gw } = setup();
    expect(gw).toBeInstanceOf(SimGateway);
    expect(gw.name).toBe('sim');
    expect(await gw.status('nadie')).toBeDefined();
    sim.setOutage(true);
    await expect(gw.send('nadie', { msgId: 'm1', tipo: 'texto', destinatario: '5215512345678', texto: 'x' })).rejects.toThrow(GatewayFailure);
    sim.setOutage(false);
    const spy = vi.spyOn(gw, 'logout').mockRejectedValue(new Error('boom'));
    await expect(gw.logout('x')).rejects.toThrow('boom');
    expect(spy).toHaveBeenCalledOnce();
    expect(await calls(metrics, 'status', 'ok')).toBe(1);
    expect(await calls(metrics, 'send', 'transient')).toBe(1);
    expect(await calls(metrics, 'logout', 'error')).toBe(1);
    expect(await timed(metrics, 'send')).toBe(1);
    // Not a call to the gateway: nothing counted.
    gw.onEvent(() => {});
    expect((await metrics.gatewayCalls.get()).values.reduce((a, v) => a + v.value, 0)).toBe(3);
    await store.close();
  });

  it('the adapter of one gateway server (onServer) is counted the same way, one proxy per adapter', async () => {
    const { store, metrics, sim } = setup();
    const server = { ...sim, name: 'one', status: async () => 'connected' as const } as unknown as Gateway;
    const routed = countGatewayCalls(Object.assign(Object.create(sim) as Gateway, { onServer: async () => server }), metrics);
    const a = await routed.onServer!(1);
    expect(a).toBe(await routed.onServer!(1));
    expect(await a.status('x')).toBe('connected');
    expect(await calls(metrics, 'status', 'ok')).toBe(1);
    await store.close();
  });
});
