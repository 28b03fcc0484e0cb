import { FENCE_AT, planHolds, WATCHDOG_AT } from './engine-holds.js';
import type { Clock } from '../time/clock.js';
import { monotonicMs, type NodePresence } from '../nodes/node-presence.js';
import { engineLinesAtStart } from './engine-lines.js';
import type { AccountsStore } from '../ports/accounts.js';
import type { EngineAuthStore } from '../ports/engine-auth.js';
import type { EngineHold, EngineHoldsStore, HoldFence } from '../ports/engine-holds.js';
import type { LeasesStore, NodeRow } from '../ports/leases.js';

/** The engine as the keeper drives it (gateways/baileys/adapter.ts). */
export interface EngineSockets {
  hold(instancia: string, fence: HoldFence): Promise<void>;
  release(instancia: string): Promise<void>;
  held(): string[];
  /** Whether this one line's socket may run here (a map look-up: asked on every call for a line). */
  holding(instancia: string): boolean;
  linking(instancia: string): boolean;
}

/** A line that changed hands, as this node saw it take or give it. */
export interface HolderChange {
  instancia: string;
  celularId: number | null;
  /** The node that had it; null: free. */
  from: string | null;
  /** The node that has it now; null: given back. */
  to: string | null;
  /** `gone`: taken from a node that stopped beating; `free`: nobody held it; `balance`/`stop`: given away to spread the lines or before a stop. */
  reason: 'free' | 'gone' | 'balance' | 'stop';
}

/** The watchdog child (server/watchdog.ts), fed the instant past which this process must not live with sockets open. */
export interface Watchdog {
  arm(deadlineMonoMs: number | null): void;
}

export interface KeeperOptions {
  store: EngineHoldsStore & Pick<LeasesStore, 'nodes'> & Pick<AccountsStore, 'getCelularByInstancia'> & Pick<EngineAuthStore, 'authInstancias' | 'clearAuth'>;
  engine: EngineSockets;
  node: NodePresence;
  clock: Clock;
  /** Shared store (several nodes): sockets close when this node's beats fail, and a watchdog stands by. */
  shared: boolean;
  /** How often the holds are looked at (the node's beat). */
  passMs: number;
  /** A line moves to balance only after its holder has had it this long. */
  settleMs: number;
  watchdog?: Watchdog;
  onChange?: (c: HolderChange) => void;
  onError: (err: unknown) => void;
}

/**
 * Keeps this node's share of the engine's lines (core/engine/engine-holds.ts has
 * the rule and the timing): each pass reads every line's holder, closes
 * what is no longer this node's, takes free and orphaned lines up to its
 * share, and gives one away when it holds more than its share while
 * another node holds less. Between passes a short timer closes every socket
 * once this node's last good beat is too old, and feeds the watchdog.
 */
export class EngineKeeper {
  private timer: NodeJS.Timeout | undefined;
  private fenceTimer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private stopped = false;
  /** Lines given away, not taken back until this (monotonic) instant. */
  private readonly cooling = new Map<string, number>();
  private holds = new Map<string, EngineHold>();
  private readonly celulares = new Map<string, number>();
  private readonly instancias = new Map<number, string>();
  /** Takes, gives and forgets one at a time: a link's take never lands between a give's close and its release of the row. */
  private turn: Promise<unknown> = Promise.resolve();
  /** When (monotonic) each line was last taken here: a pass never undoes a take made after it read the rows. */
  private readonly takenAt = new Map<string, number>();

  constructor(private readonly o: KeeperOptions) {}

  get me(): string {
    return this.o.node.info.id;
  }

  async start(): Promise<void> {
    // The state of a line deleted while no node ran is removed, never reconnected (core/engine/engine-lines.ts).
    for (const i of (await engineLinesAtStart(this.o.store)).removed) await this.o.store.holdForget(i);
    await this.o.store.holdSeed();
    await this.pass();
    this.timer = setInterval(() => void this.passOnce(), this.o.passMs);
    this.timer.unref();
    if (this.o.shared) {
      this.fenceTimer = setInterval(() => this.guard(), Math.max(50, Math.min(500, this.o.node.info.marginMs / 20)));
      this.fenceTimer.unref();
    }
  }

  private passOnce(): Promise<void> {
    this.running ??= this.pass()
      .catch(this.o.onError)
      .finally(() => (this.running = undefined));
    return this.running;
  }

  /** Whether this node's last good beat is recent enough to keep sockets open (always, on a store one process serves). */
  private fresh(): boolean {
    return !this.o.shared || monotonicMs() - this.o.node.lastGoodBeatSent < FENCE_AT * this.o.node.info.marginMs;
  }

  /** Closes every socket once the beats fail; arms the watchdog for the lines still open. */
  private guard(): void {
    if (this.stopped) return;
    const open = this.o.engine.held();
    if (!this.fresh() && open.length > 0) {
      for (const i of open) void this.o.engine.release(i).catch(this.o.onError);
    }
    this.o.watchdog?.arm(open.length > 0 ? this.o.node.lastGoodBeatSent + WATCHDOG_AT * this.o.node.info.marginMs : null);
  }

  /** One look at every line's holder. */
  async pass(): Promise<void> {
    if (this.stopped) return;
    this.guard();
    if (!this.fresh()) return;
    const now = this.o.clock.now();
    const read = monotonicMs();
    const [holds, nodes] = await Promise.all([this.o.store.holdsAll(now), this.o.store.nodes(now)]);
    if (this.stopped) return;
    const me = this.me;
    const newer = (i: string) => (this.takenAt.get(i) ?? Number.NEGATIVE_INFINITY) >= read;
    // A line a link took here while the rows were read keeps its own row.
    const fresh = new Map(holds.map((h) => [h.instancia, h]));
    for (const [i, h] of this.holds) if (newer(i)) fresh.set(i, h);
    this.holds = fresh;
    await this.learnCelulares(holds);
    // Open here but no longer this node's (taken while it was silent, or the line removed): closed at once.
    for (const i of this.o.engine.held()) {
      if (this.holds.get(i)?.nodo !== me && !newer(i)) await this.o.engine.release(i);
    }
    const t = monotonicMs();
    for (const [i, until] of this.cooling) if (until <= t) this.cooling.delete(i);
    const all = [...this.holds.values()];
    const plan = planHolds({
      me,
      holds: all,
      nodes: engineNodes(nodes, me),
      cooling: new Set(this.cooling.keys()),
      pinned: new Set(all.filter((h) => this.o.engine.linking(h.instancia)).map((h) => h.instancia)),
      settleMs: this.o.settleMs,
    });
    // Rows that are this node's but not open here (a pass after a fence): taken again, which checks they still are.
    const open = new Set(this.o.engine.held());
    const mineClosed = holds.filter((h) => h.nodo === me && !open.has(h.instancia)).map((h) => h.instancia);
    await this.take([...plan.take, ...mineClosed], false);
    for (const i of plan.give) await this.give(i, 'balance');
  }

  private exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.turn.then(fn, fn);
    this.turn = run.catch(() => undefined);
    return run;
  }

  /**
   * Takes `instancias` for this node and opens them; answers those taken.
   * `create`: a line without a row gets one (a link); a pass takes only rows it read, so a line forgotten meanwhile stays gone.
   */
  take(instancias: string[], create = true): Promise<string[]> {
    return this.exclusive(() => this.takeNow(instancias, create));
  }

  private async takeNow(instancias: string[], create: boolean): Promise<string[]> {
    if (instancias.length === 0 || this.stopped || !this.fresh()) return [];
    const taken = await this.o.store.holdTake(this.me, instancias, this.o.clock.now(), { create });
    for (const t of taken) {
      this.takenAt.set(t.instancia, monotonicMs());
      const before = this.holds.get(t.instancia);
      this.holds.set(t.instancia, {
        instancia: t.instancia,
        nodo: this.me,
        token: t.token,
        presente: true,
        held_ms: before?.nodo === this.me ? before.held_ms : 0,
        url: this.o.node.info.engineUrl,
      });
      await this.o.engine.hold(t.instancia, { nodo: this.me, token: t.token });
      if (t.from !== this.me) this.changed(t.instancia, t.from, this.me, t.from === null ? 'free' : 'gone');
    }
    // Sockets open now: the watchdog guards them from this instant, not from its next tick.
    if (taken.length > 0) this.guard();
    return taken.map((t) => t.instancia);
  }

  private give(instancia: string, reason: HolderChange['reason']): Promise<void> {
    return this.exclusive(() => this.giveNow(instancia, reason));
  }

  private async giveNow(instancia: string, reason: HolderChange['reason']): Promise<void> {
    if (!this.o.engine.holding(instancia)) return;
    await this.o.engine.release(instancia);
    await this.o.store.holdGive(this.me, [instancia]);
    this.cooling.set(instancia, monotonicMs() + 3 * this.o.passMs);
    const h = this.holds.get(instancia);
    if (h) this.holds.set(instancia, { ...h, nodo: null, presente: false });
    this.changed(instancia, this.me, null, reason);
  }

  private changed(instancia: string, from: string | null, to: string | null, reason: HolderChange['reason']): void {
    this.o.onChange?.({ instancia, celularId: this.celulares.get(instancia) ?? null, from, to, reason });
  }

  /** The line's row as the last pass (or this node's own take) saw it. */
  holdOf(instancia: string): EngineHold | undefined {
    return this.holds.get(instancia);
  }

  /** Whether this node runs the line's socket now. */
  holdsHere(instancia: string): boolean {
    return this.o.engine.holding(instancia);
  }

  /**
   * Whether this node's queue should send the line's messages: not when
   * another live node holds its session (that node's queue sends them). A
   * line with no session anywhere is anyone's: its send fails as
   * disconnected and waits, as on one node.
   */
  sendsHere(celularId: number): boolean {
    const i = this.instancias.get(celularId);
    const h = i === undefined ? undefined : this.holds.get(i);
    return !h || h.nodo === null || h.nodo === this.me || !h.presente;
  }

  /** The line's state is gone (logout, deleted): its row goes too. */
  forget(instancia: string): Promise<void> {
    return this.exclusive(async () => {
      await this.o.engine.release(instancia);
      await this.o.store.holdForget(instancia);
      this.holds.delete(instancia);
      this.takenAt.delete(instancia);
      const id = this.celulares.get(instancia);
      this.celulares.delete(instancia);
      if (id !== undefined) this.instancias.delete(id);
    });
  }

  /** Before a stop: every socket closed, every line given back for the other nodes to take at their next pass. */
  async handOver(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    clearInterval(this.fenceTimer);
    await this.running?.catch(() => undefined);
    await this.exclusive(async () => {
      const mine = this.o.engine.held();
      await Promise.all(mine.map((i) => this.o.engine.release(i)));
      this.o.watchdog?.arm(null);
      await this.o.store.holdGive(this.me, mine);
      for (const i of mine) this.changed(i, this.me, null, 'stop');
    });
  }

  private async learnCelulares(holds: EngineHold[]): Promise<void> {
    for (const h of holds) {
      if (this.celulares.has(h.instancia)) continue;
      const c = await this.o.store.getCelularByInstancia(h.instancia);
      // Not cached while unknown: a row made by a link may be read before its line's instance name is.
      if (!c) continue;
      this.celulares.set(h.instancia, c.id);
      this.instancias.set(c.id, h.instancia);
    }
  }
}

/** The nodes that run an engine and count as present by their own margin. */
export function engineNodes(nodes: NodeRow[], me: string): string[] {
  const ids = nodes.filter((n) => n.engine_url !== null && n.silent_ms < n.margin_ms).map((n) => n.id);
  return ids.includes(me) ? ids : [...ids, me];
}
