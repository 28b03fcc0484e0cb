import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createCliente, editCliente, rotateClienteKey } from '../../src/core/accounts/accounts.js';
import { authenticateClient, requireActiveClient } from '../../src/core/auth/auth.js';
import { applySessionStatus, rotateCelularKey } from '../../src/core/accounts/celulares.js';
import { systemClock } from '../../src/core/time/clock.js';
import type { Core, CoreConfig } from '../../src/core/context.js';
import { MemoryCounters } from '../../src/core/nodes/counters-memory.js';
import { ERRORS } from '../../src/core/api/errors.js';
import { EventBus } from '../../src/core/events/events.js';
import { celularKey, hashSecret, newSecret } from '../../src/core/auth/keys.js';
import type { Gateway } from '../../src/core/ports/gateway.js';
import type { Signals } from '../../src/core/ports/signals.js';
import type { Store } from '../../src/core/ports/store.js';
import { makeCore } from '../../src/server/make-core.js';
import { PgSignals } from '../../src/store/postgres/signals.js';
import type { PgStore } from '../../src/store/postgres/store.js';
import { rejectionOf } from '../helpers/expect.js';
import { until } from '../helpers/poll.js';
import { postgres, describeWith } from '../helpers/services.js';
import { ADAPTERS, celular, openPg, PG_URL, pgAdmin, pgSchema, storeEachTest } from './adapters.js';

/**
 * The credential cache in the accept path (core/auth/auth.ts over
 * core/auth/credential-cache.ts, D-67): on every store, one node; on PostgreSQL,
 * two nodes on one schema, told of each other's writes by LISTEN/NOTIFY.
 */
const MAX_FAILURES = 3;
const config = { authMaxFailures: MAX_FAILURES, authWindowMs: 60_000, tz: 'UTC' } as CoreConfig;
const IP = '203.0.113.9';

function coreOn(store: Store, signals?: Signals): Core {
  return makeCore(config, {
    store,
    counters: new MemoryCounters(systemClock),
    gateway: {} as Gateway,
    clock: systemClock,
    bus: new EventBus(),
    ...(signals ? { signals } : {}),
  });
}

/** Counts the store's reads of clientes, to tell a cache hit from a lookup. */
function countReads(store: Store): { n: number } {
  const count = { n: 0 };
  const get = store.getCliente.bind(store);
  store.getCliente = (id) => {
    count.n++;
    return get(id);
  };
  return count;
}

async function lineWithKey(store: Store, clienteId: number): Promise<{ id: number; key: string }> {
  const res = await store.insertCelular(celular(clienteId, `52155${String(Math.floor(Math.random() * 1e8)).padStart(8, '0')}`), systemClock.now());
  if (!res.ok) throw new Error(res.reason);
  const secret = newSecret();
  await store.updateCelular(res.celular.id, { key_hash: hashSecret(secret) }, systemClock.now());
  return { id: res.celular.id, key: celularKey(res.celular.id, secret) };
}

for (const adapter of ADAPTERS) {
  describe(`credential cache, one node (${adapter.name})`, () => {
    const ctx = storeEachTest(adapter);

    it('a second request is answered from the cache; a rotation on this node refuses the old key at once', async () => {
      const core = coreOn(ctx.store);
      const reads = countReads(ctx.store);
      const { cliente, api_key } = await createCliente(core, { nombre: 'a', email: 'a@example.com' });
      reads.n = 0;
      await authenticateClient(core, [api_key], IP);
      await authenticateClient(core, [api_key], IP);
      expect(reads.n).toBe(1);
      const rotated = await rotateClienteKey(core, cliente.id);
      expect((await rejectionOf(authenticateClient(core, [api_key], IP))).row).toBe(ERRORS.UNAUTHORIZED);
      expect((await authenticateClient(core, [rotated.api_key], IP)).cliente.id).toBe(cliente.id);
    });

    it('a wrong secret for a cached client is refused and counted by the throttle as before', async () => {
      const core = coreOn(ctx.store);
      const { cliente, api_key } = await createCliente(core, { nombre: 'b', email: 'b@example.com' });
      await authenticateClient(core, [api_key], IP);
      const wrong = `WAC_${cliente.id}_${newSecret()}`;
      expect(api_key.startsWith(`WAC_${cliente.id}_`)).toBe(true);
      for (let i = 0; i < MAX_FAILURES; i++) expect((await rejectionOf(authenticateClient(core, [wrong], IP))).row).toBe(ERRORS.UNAUTHORIZED);
      expect((await rejectionOf(authenticateClient(core, [wrong], IP))).row).toBe(ERRORS.AUTH_THROTTLED);
      expect(core.credentials.size).toBe(1);
      expect((await authenticateClient(core, [api_key], IP)).cliente.id).toBe(cliente.id);
    });

    it("a line's session connecting is seen by the next request with its key (estado and vinculado)", async () => {
      const core = coreOn(ctx.store);
      const { cliente } = await createCliente(core, { nombre: 'd', email: 'd@example.com' });
      const line = await lineWithKey(ctx.store, cliente.id);
      const before = await authenticateClient(core, [line.key], IP);
      expect(before.kind === 'celular' && before.celular.estado).toBe('desconectado');
      await applySessionStatus(core, line.id, 'connected');
      const after = await authenticateClient(core, [line.key], IP);
      expect(after.kind === 'celular' && [after.celular.estado, after.celular.vinculado]).toEqual(['activo', 1]);
    });

    it('a suspension is seen by the next request', async () => {
      const core = coreOn(ctx.store);
      const { cliente, api_key } = await createCliente(core, { nombre: 'c', email: 'c@example.com' });
      requireActiveClient(await authenticateClient(core, [api_key], IP));
      await editCliente(core, cliente.id, { estado: 'suspendido' });
      const p = await authenticateClient(core, [api_key], IP);
      expect(() => requireActiveClient(p)).toThrow(/suspendido/);
    });
  });
}

describeWith(postgres, 'credential cache across two PostgreSQL nodes (LISTEN/NOTIFY)', () => {
  let drop: () => Promise<void>;
  let stores: PgStore[];
  let signals: PgSignals[];
  let a: Core;
  let b: Core;
  let sigB: PgSignals;

  beforeEach(async () => {
    const s = await pgSchema();
    drop = s.drop;
    stores = [await openPg(s.schema), await openPg(s.schema)];
    signals = stores.map((st) => new PgSignals(PG_URL, { schema: s.schema, pool: st.db.pool, retryMs: 20 }));
    for (const sg of signals) await sg.start();
    sigB = signals[1]!;
    a = coreOn(stores[0]!, signals[0]);
    b = coreOn(stores[1]!, sigB);
  });
  afterEach(async () => {
    for (const sg of signals) await sg.close();
    for (const st of stores) await st.close();
    await drop();
  });

  /** Polls until node B refuses `key`; returns how long it took after the write on node A returned. */
  async function refusedOnB(key: string): Promise<number> {
    const t0 = performance.now();
    await until(
      async () =>
        await authenticateClient(b, [key], IP).then(
          () => false,
          () => true,
        ),
      { timeoutMs: 900, stepMs: 2, what: 'node B to refuse the key' },
    );
    return performance.now() - t0;
  }

  it('a client key rotated on node A is refused on node B well before the TTL', async () => {
    const { cliente, api_key } = await createCliente(a, { nombre: 'n', email: 'n@example.com' });
    await authenticateClient(b, [api_key], IP);
    expect(b.credentials.size).toBe(1);
    const rotated = await rotateClienteKey(a, cliente.id);
    const ms = await refusedOnB(api_key);
    expect(ms).toBeLessThan(500);
    expect((await authenticateClient(b, [rotated.api_key], IP)).cliente.id).toBe(cliente.id);
    console.log(`client key rotation seen on node B after ${ms.toFixed(1)} ms`);
  });

  it('a celular key rotated on node A is refused on node B; a suspension on A is seen on B', async () => {
    const { cliente, api_key } = await createCliente(a, { nombre: 'm', email: 'm@example.com' });
    const line = await lineWithKey(stores[0]!, cliente.id);
    await authenticateClient(b, [line.key], IP);
    requireActiveClient(await authenticateClient(b, [api_key], IP));
    await rotateCelularKey(a, line.id);
    expect(await refusedOnB(line.key)).toBeLessThan(500);
    await editCliente(a, cliente.id, { estado: 'suspendido' });
    const t0 = performance.now();
    await until(async () => (await authenticateClient(b, [api_key], IP)).cliente.estado === 'suspendido', { timeoutMs: 900, stepMs: 2 });
    expect(performance.now() - t0).toBeLessThan(500);
    expect((await rejectionOf(Promise.resolve().then(async () => requireActiveClient(await authenticateClient(b, [api_key], IP))))).row).toBe(
      ERRORS.CLIENT_NOT_ACTIVE,
    );
  });

  it('the listening connection killed: node B drops its cache, listens again and hears the next rotation', async () => {
    const { cliente, api_key } = await createCliente(a, { nombre: 'g', email: 'g@example.com' });
    await authenticateClient(b, [api_key], IP);
    expect(b.credentials.size).toBe(1);
    const pid = sigB.pid!;
    expect(pid).toBeGreaterThan(0);
    await pgAdmin(`SELECT pg_terminate_backend(${pid})`);
    await until(() => b.credentials.size === 0, { timeoutMs: 2_000, what: 'the gap to drop the cache' });
    await until(() => sigB.listening && sigB.pid !== pid, { timeoutMs: 5_000, what: 'the listener to reconnect' });
    await authenticateClient(b, [api_key], IP);
    expect(b.credentials.size).toBe(1);
    await rotateClienteKey(a, cliente.id);
    expect(await refusedOnB(api_key)).toBeLessThan(500);
  });
});
