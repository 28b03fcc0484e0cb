import { describe, expect, it } from 'vitest';
import { LocalSignals } from '../../src/core/nodes/signals-local.js';
import type { WebhookConfig } from '../../src/core/ports/model.js';
import { announceWebhookConfig, WebhookConfigCache } from '../../src/webhooks/config-cache.js';

/** The dispatcher's copy of each client's configuration: a second at most, dropped by a change on any node, all of it on a gap. */
describe('webhook configuration cache', () => {
  const cfg = (url: string): WebhookConfig => ({ cliente_id: 1, url, secret: null, eventos: ['all'], activo: true, updated_at: 0 });

  function world() {
    const stored = new Map<number, WebhookConfig | null>([[1, cfg('http://a/')]]);
    let reads = 0;
    let t = 0;
    const cache = new WebhookConfigCache(
      async (id) => {
        reads += 1;
        return stored.get(id) ?? null;
      },
      () => t,
    );
    return { stored, cache, reads: () => reads, advance: (ms: number) => (t += ms) };
  }

  it('reads the store once per client per second', async () => {
    const w = world();
    expect((await w.cache.get(1))?.url).toBe('http://a/');
    expect((await w.cache.get(1))?.url).toBe('http://a/');
    expect(await w.cache.get(2)).toBeNull();
    expect(await w.cache.get(2)).toBeNull();
    expect(w.reads()).toBe(2);
    w.stored.set(1, cfg('http://b/'));
    w.advance(999);
    expect((await w.cache.get(1))?.url).toBe('http://a/');
    w.advance(1);
    expect((await w.cache.get(1))?.url).toBe('http://b/');
    expect(w.reads()).toBe(3);
  });

  it('a change announced on the signals is seen at once; a gap drops every client', async () => {
    const w = world();
    const signals = new LocalSignals();
    const stop = w.cache.listen(signals);
    await w.cache.get(1);
    w.stored.set(1, cfg('http://b/'));
    await announceWebhookConfig(signals, 1);
    expect((await w.cache.get(1))?.url).toBe('http://b/');
    w.stored.set(1, null);
    signals.gap();
    expect(await w.cache.get(1)).toBeNull();
    stop();
    w.stored.set(1, cfg('http://c/'));
    await announceWebhookConfig(signals, 1);
    expect(await w.cache.get(1)).toBeNull();
  });

  it('a read in flight when its client is dropped is not kept: the next get reads again', async () => {
    const stored = new Map<number, WebhookConfig | null>([[1, cfg('http://a/')]]);
    let release: () => void = () => {};
    const gate = new Promise<void>((r) => (release = r));
    let reads = 0;
    const cache = new WebhookConfigCache(
      async (id) => {
        reads += 1;
        const answer = stored.get(id) ?? null;
        if (reads === 1) await gate;
        return answer;
      },
      () => 0,
    );
    const first = cache.get(1);
    stored.set(1, cfg('http://b/'));
    cache.drop(1);
    release();
    expect((await first)?.url).toBe('http://a/');
    expect((await cache.get(1))?.url).toBe('http://b/');
    expect(reads).toBe(2);
  });
});
