import { afterAll, describe, expect, it } from 'vitest';
import type { ManualClock } from '../../src/core/time/clock.js';
import { claimFormToken, newFormToken, PANEL_FORM, settleFormToken } from '../../src/core/auth/panel-forms.js';
import { KV_EXPIRE_BATCH } from '../../src/core/history/retention.js';
import { SHOWN_ONCE, stashShownOnce } from '../../src/core/auth/shown-once.js';
import { pgSchema } from '../contract/adapters.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { describeWith, postgres, schemaUrl } from '../helpers/services.js';

/**
 * The upkeep's pass over the kv store's expired rows (panel form tokens,
 * shown-once pages), on SQLite and PostgreSQL, with the server's clock
 * moved by hand: each row goes once its own expiry has passed, the others
 * stay, and one pass takes more than a statement's batch.
 */

function suite(start: () => Promise<TestServer>) {
  it('removes form tokens and shown-once pages once expired, keeps the rest, and more than a batch in one pass', async () => {
    const s = await start();
    try {
      const clock = s.clock as ManualClock;
      const t0 = clock.now();
      const names = async (ns: string) => (await s.core.store.kvList(ns)).length;
      const token = newFormToken();
      expect(await claimFormToken(s.core, 'sesion-a', token)).toBeNull();
      await settleFormToken(s.core, 'sesion-a', token, '/panel/c/1/cola');
      await stashShownOnce(s.core, 'sesion-a', { api_key: 'secreto' });
      await s.core.store.kvSet('kv-expiry-test', 'forever', 1);
      const formsBefore = await names(PANEL_FORM.namespace);
      expect(await names(SHOWN_ONCE.namespace)).toBeGreaterThanOrEqual(1);

      // Nothing has expired yet.
      expect(await s.kv.run()).toBe(0);
      // Past the shown-once page's ten minutes: it goes; the form token (kept a session's life) stays.
      clock.set(t0 + SHOWN_ONCE.ttlMs + 1);
      expect(await s.kv.run()).toBeGreaterThanOrEqual(1);
      expect(await names(SHOWN_ONCE.namespace)).toBe(0);
      expect(await names(PANEL_FORM.namespace)).toBe(formsBefore);
      // Past the token's keeping: it goes too; a row without an expiry stays.
      clock.set(t0 + PANEL_FORM.keepMs + 1);
      expect(await s.kv.run()).toBeGreaterThanOrEqual(1);
      expect(await names(PANEL_FORM.namespace)).toBe(0);
      expect(await s.core.store.kvGet('kv-expiry-test', 'forever')).toBe(1);

      // More expired rows than one statement removes: one pass takes them all.
      const many = KV_EXPIRE_BATCH * 2 + 7;
      const now = clock.now();
      await s.core.store.kvSetMany(Array.from({ length: many }, (_, i) => ({ ns: 'kv-expiry-test', key: `old-${i}`, value: i, expiraAt: now - 1 })));
      await s.core.store.kvSet('kv-expiry-test', 'young', 2, now + 60_000);
      expect(await s.kv.run()).toBe(many);
      expect((await s.core.store.kvList('kv-expiry-test')).map((e) => e.key)).toEqual(['forever', 'young']);
    } finally {
      await s.stop();
    }
  });
}

describe('expired kv rows on SQLite', () => {
  suite(() => startTestServer({ eventPruneIntervalMs: 0, healthIntervalMs: 0 }, { inject: true }));
});

const drops: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const d of drops) await d();
});
describeWith(postgres, 'expired kv rows on PostgreSQL', () => {
  suite(async () => {
    const schema = await pgSchema();
    drops.push(schema.drop);
    return startTestServer({ store: schemaUrl(schema.schema), eventPruneIntervalMs: 0, healthIntervalMs: 0 }, { inject: true });
  });
});
