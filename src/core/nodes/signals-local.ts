import type { SignalHandler, Signals } from '../ports/signals.js';

/**
 * The signals of one process: every subscriber hears a publish at once and
 * nothing is ever missed. SQLite's (one node) and tests'; PostgreSQL's
 * (store/postgres/signals.ts) delivers through it on the publishing node.
 */
export class LocalSignals implements Signals {
  private readonly subs = new Map<string, Set<SignalHandler>>();

  publish(channel: string, payload: string): Promise<void> {
    this.deliver(channel, payload);
    return Promise.resolve();
  }

  /** Hands a payload to this process's subscribers of `channel`; a throwing handler never stops the others. */
  deliver(channel: string, payload: string): void {
    for (const h of [...(this.subs.get(channel) ?? [])]) {
      try {
        h.message(payload);
      } catch {
        // A subscriber's fault is its own; the publisher's change is already made.
      }
    }
  }

  /** Tells every subscriber that deliveries may have been lost. */
  gap(): void {
    for (const set of this.subs.values()) {
      for (const h of [...set]) {
        try {
          h.gap();
        } catch {
          // as above
        }
      }
    }
  }

  channels(): string[] {
    return [...this.subs.keys()];
  }

  subscribe(channel: string, handler: SignalHandler): () => void {
    let set = this.subs.get(channel);
    if (!set) this.subs.set(channel, (set = new Set()));
    set.add(handler);
    return () => {
      set.delete(handler);
      if (set.size === 0 && this.subs.get(channel) === set) this.subs.delete(channel);
    };
  }

  close(): Promise<void> {
    this.subs.clear();
    return Promise.resolve();
  }
}
