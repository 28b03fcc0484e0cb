import type { LookupAddress } from 'node:dns';
import type { Agent } from 'undici';
import { pinnedAgent } from '../core/media/media-url.js';

/** How long a vetted receiver is trusted, and how long an unused one is kept (server/config-knobs.ts). */
export interface AgentTiming {
  /** DNS is checked again after this long, so a host that moves to a private address is refused within it. */
  revetMs: number;
  /** An agent unused this long is closed (its idle sockets are closed by undici after a few seconds anyway). */
  idleMs: number;
}
/** Clients' receivers kept at once; the least recently used beyond it is closed. */
export const MAX_AGENTS = 256;

interface Entry {
  /** Null until vetted, and after a failed request (the next delivery vets and connects afresh). */
  agent: Agent | null;
  /** The vetted addresses the agent is pinned to, as one string (a change means a new agent). */
  pinned: string;
  /** The configuration's updated_at when vetted: a changed configuration is vetted again at once. */
  stamp: number;
  vettedAt: number;
  usedAt: number;
  /** A check in progress, shared by the deliveries that wait for it. */
  vetting?: Promise<Agent>;
}

const close = (agent: Agent | null): void => {
  // Closed, not destroyed: requests still on it finish first.
  void agent?.close().catch(() => {});
};

/**
 * Keep-alive connections to webhook receivers: one undici Agent per client
 * and origin, pinned to the addresses vetted for it, so deliveries reuse
 * connections instead of paying a DNS check and a TCP (and TLS) handshake
 * each. The host is vetted again every `revetMs` or when the configuration
 * changes; other addresses mean a new agent, and the old one is closed once
 * its requests end.
 */
export class ReceiverAgents {
  private readonly entries = new Map<string, Entry>();
  private sweptAt = 0;

  constructor(
    /** Resolves a receiver's host and checks its addresses (throws when refused): what the agent is pinned to. */
    private readonly vetHost: (url: URL) => Promise<LookupAddress[]>,
    /** Monotonic milliseconds (the clock's ticks): when to vet again and sweep. */
    private readonly now: () => number,
    private readonly timing: AgentTiming,
  ) {}

  /**
   * The agent at once when it needs no vetting now (the common case), else null (ask `get`): an attempt
   * then waits on no promise and races no deadline for it.
   */
  ready(clienteId: number, url: URL, stamp: number): Agent | null {
    const key = `${clienteId} ${url.origin}`;
    const e = this.entries.get(key);
    const t = this.now();
    if (!e?.agent || e.vetting || e.stamp !== stamp || t - e.vettedAt >= this.timing.revetMs) return null;
    this.entries.delete(key);
    this.entries.set(key, e);
    e.usedAt = t;
    return e.agent;
  }

  /** The agent for a client's receiver URL; throws when the host does not resolve or is refused. */
  async get(clienteId: number, url: URL, stamp: number): Promise<Agent> {
    const key = `${clienteId} ${url.origin}`;
    const t = this.now();
    let e = this.entries.get(key);
    if (e) {
      // Most recently used last, so the first entries are the ones to evict.
      this.entries.delete(key);
      this.entries.set(key, e);
      e.usedAt = t;
      if (e.vetting) return e.vetting;
      if (e.agent && e.stamp === stamp && t - e.vettedAt < this.timing.revetMs) return e.agent;
    } else {
      e = { agent: null, pinned: '', stamp, vettedAt: 0, usedAt: t };
      this.entries.set(key, e);
      this.evict();
    }
    const entry = e;
    entry.vetting = this.vet(key, entry, url, stamp).finally(() => {
      entry.vetting = undefined;
    });
    return entry.vetting;
  }

  /** After a failed request on `agent`: the next delivery checks DNS and connects afresh. */
  drop(clienteId: number, url: URL, agent: Agent): void {
    const e = this.entries.get(`${clienteId} ${url.origin}`);
    if (e?.agent !== agent) return;
    e.agent = null;
    close(agent);
  }

  /** Closes agents unused for a while; cheap to call often. */
  sweep(): void {
    const t = this.now();
    if (t - this.sweptAt < this.timing.revetMs) return;
    this.sweptAt = t;
    for (const [key, e] of this.entries) {
      if (e.vetting || t - e.usedAt < this.timing.idleMs) continue;
      this.entries.delete(key);
      close(e.agent);
    }
  }

  async close(): Promise<void> {
    const all = [...this.entries.values()];
    this.entries.clear();
    await Promise.allSettled(all.map(async (e) => e.agent?.close()));
  }

  private evict(): void {
    for (const [key, e] of this.entries) {
      if (this.entries.size <= MAX_AGENTS) return;
      if (e.vetting) continue;
      this.entries.delete(key);
      close(e.agent);
    }
  }

  private async vet(key: string, e: Entry, url: URL, stamp: number): Promise<Agent> {
    let addresses;
    try {
      addresses = await this.vetHost(url);
    } catch (err) {
      // Refused or unresolvable now: nothing more goes through the old connections.
      if (this.entries.get(key) === e) this.entries.delete(key);
      close(e.agent);
      e.agent = null;
      throw err;
    }
    const pinned = addresses
      .map((a) => a.address)
      .sort()
      .join(' ');
    if (!e.agent || e.pinned !== pinned) {
      close(e.agent);
      e.agent = pinnedAgent(url.hostname, addresses);
      e.pinned = pinned;
    }
    e.stamp = stamp;
    e.vettedAt = this.now();
    return e.agent;
  }
}
