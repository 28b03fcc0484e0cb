import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/core/time/clock.js';
import { EventBus, type MessageStatusBusEvent } from '../../src/core/events/events.js';
import type { Store } from '../../src/core/ports/store.js';
import { countBusEvents } from '../../src/server/metrics/bus.js';
import { Metrics } from '../../src/server/metrics/metrics.js';
import { StoreGauges } from '../../src/server/metrics/store-gauges.js';
import { openSqliteStore } from '../../src/store/sqlite/store.js';

/** One sample's value in a text exposition, or undefined when the series is absent. */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

describe('metrics: what the bus events count', () => {
  const base: MessageStatusBusEvent = {
    msg_id: 'm1',
    celular_id: 1,
    cliente_id: 1,
    destinatario: '5215512345678',
    tipo: 'texto',
    modo: 'cola',
    estado: 'enviado',
    estado_anterior: 'pendiente',
    gateway_msg_id: 'G1',
    error: null,
    error_clase: null,
    fecha: '',
  };

  it('an error receipt that beat the send record counts the send as enviado and the receipt as error; a send that failed counts as error', async () => {
    const store = openSqliteStore(':memory:');
    const clock = new ManualClock(0);
    const metrics = new Metrics({ store, clock, storeCacheMs: 0, info: { store: 'sqlite', gateway: 'sim' }, onError: () => {} });
    const bus = new EventBus();
    const off = countBusEvents(bus, metrics);
    // The send was recorded with the gateway's id and the parked error receipt applied with it.
    bus.publish('message.status', { ...base, estado: 'error', error: 'the network refused it' });
    // A send the gateway never took: no gateway id.
    bus.publish('message.status', { ...base, msg_id: 'm2', estado: 'error', gateway_msg_id: null, error: 'refused for good: not on the network' });
    // A delivered receipt that beat the send record.
    bus.publish('message.status', { ...base, msg_id: 'm3', estado: 'entregado' });
    off();
    const text = await metrics.scrape();
    expect(sample(text, 'pasarela_sends_finished_total{tipo="texto",modo="cola",estado="enviado"}')).toBe(2);
    expect(sample(text, 'pasarela_sends_finished_total{tipo="texto",modo="cola",estado="error"}')).toBe(1);
    expect(sample(text, 'pasarela_message_receipts_total{tipo="texto",modo="cola",estado="error"}')).toBe(1);
    expect(sample(text, 'pasarela_message_receipts_total{tipo="texto",modo="cola",estado="entregado"}')).toBe(1);
    await store.close();
  });
});

describe('metrics: store gauges', () => {
  it('a store read that never settles does not hold the scrape: the last values, up 0, and no second read while it runs', async () => {
    let reads = 0;
    const hanging = () => {
      reads++;
      return new Promise<never>(() => {});
    };
    const store = { queueDepth: hanging, outboxDepth: hanging, lineCounts: hanging, brakedLines: hanging } as unknown as Store;
    const gauges = new StoreGauges(store, new ManualClock(0), 0, () => {});
    gauges.up = true;
    await gauges.refresh(20);
    expect(gauges.up).toBe(false);
    expect(reads).toBe(4); // one read: its four statements
    await gauges.refresh(20);
    expect(reads).toBe(4);
    expect(gauges.queue).toEqual({ pending: 0, oldestAgeSeconds: 0 });
  });

  it('a read that answers in time is used', async () => {
    const store = {
      queueDepth: async () => ({ pending: 4, oldest_at: 1000 }),
      outboxDepth: async () => ({ pending: 2, due: 1 }),
      lineCounts: async () => [{ estado: 'activo', last_status: 'connected', n: 3 }],
      brakedLines: async () => 1,
    } as unknown as Store;
    const gauges = new StoreGauges(store, new ManualClock(61_000), 0, () => {});
    await gauges.refresh(60_000);
    expect(gauges.up).toBe(true);
    expect(gauges.queue).toEqual({ pending: 4, oldestAgeSeconds: 60 });
    expect(gauges.lines.get('activo')?.get('connected')).toBe(3);
    expect(gauges.braked).toBe(1);
  });
});
