import type { ClientPrincipal } from './auth.js';
import type { Signals } from '../ports/signals.js';
import { ChangeCount } from '../nodes/change-count.js';

/** The channel the write paths publish on (core/auth/credential-invalidate.ts). */
export const CREDENTIALS_CHANNEL = 'credentials';

/** What a change names: the client (every key and line of it) or one line. */
export type CredentialTarget = { cliente: number } | { celular: number };

export interface CredentialCacheOptions {
  /** Monotonic milliseconds (Clock.ticks in serve; a counter in tests). */
  ticks: () => number;
  ttlMs?: number;
  max?: number;
}

export const CREDENTIAL_TTL_MS = 1_000;
export const CREDENTIAL_CACHE_MAX = 10_000;

interface Entry {
  principal: ClientPrincipal;
  expires: number;
}

/**
 * Principals resolved from presented credentials, for about a second
 * (docs/decisions.md D-67). Keyed by the SHA-256 of the credential, never the
 * secret itself; only successes are kept, and the caller still checks the
 * secret against the cached row's hash. Entries go on expiry, on a signal
 * naming their client or line (any node's write), and all at once on a gap.
 */
export class CredentialCache {
  private readonly entries = new Map<string, Entry>();
  private readonly ttlMs: number;
  private readonly max: number;
  private gen = 0;
  private other: ChangeCount | undefined;

  constructor(private readonly opts: CredentialCacheOptions) {
    this.ttlMs = opts.ttlMs ?? CREDENTIAL_TTL_MS;
    this.max = opts.max ?? CREDENTIAL_CACHE_MAX;
  }

  /** Subscribes to the invalidations; returns the unsubscribe. */
  listen(signals: Signals): () => void {
    return listenCredentialDrops(signals, this);
  }

  /** Another thread writing the same store (LineReads.follow): a move of its count of changes drops every entry. */
  follow(count: () => number): void {
    this.other = new ChangeCount(count);
  }

  /** Bumped by every invalidation: a lookup that started before one must not store what it read. */
  generation(): number {
    return this.gen;
  }

  get(keyHash: string): ClientPrincipal | null {
    if (this.other?.moved()) this.clear();
    const e = this.entries.get(keyHash);
    if (!e) return null;
    if (this.opts.ticks() >= e.expires) {
      this.entries.delete(keyHash);
      return null;
    }
    return e.principal;
  }

  /** Stores a success read at generation `gen`; ignored if anything was invalidated since. */
  set(keyHash: string, principal: ClientPrincipal, gen: number): void {
    if (this.other?.moved()) this.clear();
    if (gen !== this.gen) return;
    this.entries.delete(keyHash);
    // Oldest first out: Map keeps insertion order, and a re-set moves the key to the end.
    while (this.entries.size >= this.max) {
      const oldest = this.entries.keys().next();
      if (oldest.done) break;
      this.entries.delete(oldest.value);
    }
    this.entries.set(keyHash, { principal, expires: this.opts.ticks() + this.ttlMs });
  }

  invalidate(target: CredentialTarget): void {
    this.gen++;
    for (const [k, e] of this.entries) {
      const p = e.principal;
      const hit = 'cliente' in target ? p.cliente.id === target.cliente : p.kind === 'celular' && p.celular.id === target.celular;
      if (hit) this.entries.delete(k);
    }
  }

  clear(): void {
    this.gen++;
    this.entries.clear();
  }

  get size(): number {
    return this.entries.size;
  }
}

export function targetPayload(target: CredentialTarget): string {
  return 'cliente' in target ? `cliente:${target.cliente}` : `celular:${target.celular}`;
}

function parseTarget(payload: string): CredentialTarget | null {
  const m = /^(cliente|celular):(\d+)$/.exec(payload);
  if (!m) return null;
  const id = Number(m[2]);
  return m[1] === 'cliente' ? { cliente: id } : { celular: id };
}

/** What a change of a credential's rows drops: one target, or everything (an unreadable notice, a gap in the signals). */
export interface CredentialDrops {
  invalidate(target: CredentialTarget): void;
  clear(): void;
}

/** Subscribes `drops` to every node's invalidations (core/auth/credential-invalidate.ts); returns the unsubscribe. */
export function listenCredentialDrops(signals: Signals, drops: CredentialDrops): () => void {
  return signals.subscribe(CREDENTIALS_CHANNEL, {
    message: (payload) => {
      const target = parseTarget(payload);
      if (target) drops.invalidate(target);
      else drops.clear();
    },
    gap: () => drops.clear(),
  });
}
