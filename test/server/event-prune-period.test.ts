import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ManualClock } from '../../src/core/time/clock.js';
import { EVENT_RETENTION_MS } from '../../src/core/events/event-log.js';
import type { Store } from '../../src/core/ports/store.js';
import { completeConfig, type ServeConfig } from '../../src/server/config.js';
import { retentionPart } from '../../src/server/parts/upkeep.js';
import { openSqliteStore } from '../../src/store/sqlite/store.js';
import { newCliente } from '../contract/adapters.js';
import { until } from '../helpers/poll.js';
import { tempDir } from '../helpers/server.js';

/**
 * serve's retention part (server/parts/upkeep.ts): the event log's prune
 * runs at start and every `eventPruneIntervalMs`, whatever the inbox's
 * period; 0 leaves it to callers. setInterval is faked, so a period passes
 * without being waited for; a pass itself runs on the real store.
 */
describe("the event log's prune period (eventPruneIntervalMs)", () => {
  let dir: string;
  let store: Store;
  let clock: ManualClock;
  let clienteId: number;
  const errors: unknown[] = [];
  const log = { error: (err: unknown) => void errors.push(err), warn: () => {}, info: () => {} };

  beforeEach(async () => {
    dir = tempDir('pasarela-prune-');
    store = openSqliteStore(join(dir, 'test.db'));
    clock = new ManualClock();
    clienteId = (await newCliente(store)).id;
    errors.length = 0;
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
  });
  afterEach(async () => {
    vi.useRealTimers();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const start = async (settings: Partial<ServeConfig>) => retentionPart(completeConfig({ dataDir: dir, ...settings }), { store, clock }, log).start();
  /** An event with nothing to deliver, older than the log keeps: the next pass removes it. */
  const logOld = () =>
    store.logTestEvent({ evento: 'webhook.test', cliente_id: clienteId, celular_id: null, data: {}, fecha: clock.now() - EVENT_RETENTION_MS - 1 }, false);
  const kept = async () => (await store.eventsAfter(clienteId, null, 100)).length;

  it("prunes at start, then once each period of its own, not the inbox's", async () => {
    await logOld();
    const part = await start({ eventPruneIntervalMs: 5000, inboxPurgeIntervalMs: 600_000 });
    await until(async () => (await kept()) === 0, { what: 'the pass at start' });
    await logOld();
    // No period has passed: no pass has run since the one at start.
    await vi.advanceTimersByTimeAsync(4999);
    expect(await kept()).toBe(1);
    await vi.advanceTimersByTimeAsync(1);
    // The stop waits for the pass in flight.
    await part.stop!();
    expect(await kept()).toBe(0);
    expect(errors).toEqual([]);
  });

  it("0: no pass at start nor after any period, however short the inbox's; a call still prunes", async () => {
    await logOld();
    const part = await start({ eventPruneIntervalMs: 0, inboxPurgeIntervalMs: 1000 });
    // Past the inbox's period and the prune's default: the inbox purges, the log is left alone.
    await vi.advanceTimersByTimeAsync(61_000);
    await part.stop!();
    expect(await kept()).toBe(1);
    expect(await part.value.events.run()).toBe(1);
    expect(await kept()).toBe(0);
    expect(errors).toEqual([]);
  });
});
