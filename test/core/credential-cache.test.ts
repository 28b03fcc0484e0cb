import { describe, expect, it } from 'vitest';
import type { ClientPrincipal } from '../../src/core/auth/auth.js';
import { CREDENTIALS_CHANNEL, CredentialCache } from '../../src/core/auth/credential-cache.js';
import type { CelularRow, ClienteRow } from '../../src/core/ports/model.js';
import { LocalSignals } from '../../src/core/nodes/signals-local.js';

/** The credential cache (core/auth/credential-cache.ts) on a driven tick counter. */
function setup(opts: { ttlMs?: number; max?: number } = {}) {
  let t = 0;
  const cache = new CredentialCache({ ticks: () => t, ...opts });
  return { cache, advance: (ms: number) => (t += ms) };
}
const cliente = (id: number) => ({ id, estado: 'activo', plan: 'medido', key_hash: `h${id}` }) as ClienteRow;
const client = (id: number): ClientPrincipal => ({ kind: 'client', cliente: cliente(id) });
const line = (clienteId: number, id: number): ClientPrincipal => ({
  kind: 'celular',
  cliente: cliente(clienteId),
  celular: { id, cliente_id: clienteId } as CelularRow,
  via: 'key',
});

describe('CredentialCache', () => {
  it('keeps a principal for its TTL and no longer', () => {
    const { cache, advance } = setup({ ttlMs: 1_000 });
    cache.set('k', client(1), cache.generation());
    advance(999);
    expect(cache.get('k')?.cliente.id).toBe(1);
    advance(1);
    expect(cache.get('k')).toBeNull();
    expect(cache.size).toBe(0);
  });

  it('a client invalidation drops its client key and every line of it; a line invalidation only that line', () => {
    const { cache } = setup();
    const g = cache.generation();
    cache.set('c1', client(1), g);
    cache.set('l10', line(1, 10), g);
    cache.set('l11', line(1, 11), g);
    cache.set('c2', client(2), g);
    cache.invalidate({ celular: 10 });
    expect([cache.get('c1'), cache.get('l10'), cache.get('l11'), cache.get('c2')].map((p) => p !== null)).toEqual([true, false, true, true]);
    cache.invalidate({ cliente: 1 });
    expect([cache.get('c1'), cache.get('l11'), cache.get('c2')].map((p) => p !== null)).toEqual([false, false, true]);
  });

  it('a lookup that began before an invalidation does not store what it read', () => {
    const { cache } = setup();
    const before = cache.generation();
    cache.invalidate({ cliente: 1 });
    cache.set('c1', client(1), before);
    expect(cache.get('c1')).toBeNull();
    cache.set('c1', client(1), cache.generation());
    expect(cache.get('c1')).not.toBeNull();
  });

  it('is bounded: the oldest entry goes first', () => {
    const { cache } = setup({ max: 3 });
    for (let i = 1; i <= 5; i++) cache.set(`k${i}`, client(i), cache.generation());
    expect(cache.size).toBe(3);
    expect(cache.get('k1')).toBeNull();
    expect(cache.get('k2')).toBeNull();
    expect(cache.get('k5')?.cliente.id).toBe(5);
  });

  it('follows signals: a named target, an unknown payload (everything) and a gap (everything)', () => {
    const { cache } = setup();
    const signals = new LocalSignals();
    const off = cache.listen(signals);
    const fill = () => {
      cache.set('c1', client(1), cache.generation());
      cache.set('c2', client(2), cache.generation());
    };
    fill();
    void signals.publish(CREDENTIALS_CHANNEL, 'cliente:1');
    expect([cache.get('c1'), cache.get('c2')].map((p) => p !== null)).toEqual([false, true]);
    fill();
    void signals.publish(CREDENTIALS_CHANNEL, 'something new');
    expect(cache.size).toBe(0);
    fill();
    signals.gap();
    expect(cache.size).toBe(0);
    off();
    fill();
    void signals.publish(CREDENTIALS_CHANNEL, 'cliente:1');
    expect(cache.size).toBe(2);
  });
});
