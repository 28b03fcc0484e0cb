import type { Core } from '../core/context.js';
import type { EscuchaRow } from '../core/ports/model.js';
import type { ListenerCopy } from '../core/ports/webhooks.js';
import type { ReceiverAgents } from './agents.js';
import { AttemptDeadline } from './deadline.js';
import { post, type PostAnswer } from './post.js';
import { sign } from './sign.js';

export interface ListenerCopiesOptions {
  /** Copies in flight at once, all listeners together (apart from the real deliveries' slots). */
  concurrency: number;
  /** A copy's attempt without an answer within this fails. */
  timeoutMs: number;
  /** The first quick retry of a copy; the second comes 4 times as long after its attempt. */
  retryMs: number;
  /** How stale this node's view of a listener may grow before the store is asked again (removed on another node?). */
  recheckMs: number;
  userAgent: string;
  onError: (err: unknown) => void;
}

/** Attempts per copy: the first and two quick retries. */
export const COPY_ATTEMPTS = 3;
/** Copies waiting per listener; beyond, the oldest are dropped. */
export const COPY_BACKLOG = 100;

interface Pending extends ListenerCopy {
  intentos: number;
}

/** One listener's copies, posted one at a time in event order. */
interface Lane {
  escucha: EscuchaRow;
  /** Not started yet; a copy being retried is back at the head. */
  queue: Pending[];
  busy: boolean;
  /** Clock ticks before which the head (a retry) waits. */
  dueAt: number;
  /** Clock ticks when the lease was last read. */
  readAt: number;
}

/**
 * Best-effort copies of a client's events to its live listeners, in memory
 * on the node that took them from the log (a listener's cursor). Nothing is written:
 * a copy is tried a few times within about a second and then dropped, and a
 * listener whose lease ended loses what was waiting for it, so a dead
 * listener never grows a backlog. Copies have slots and connections of their
 * own, apart from the real deliveries', so they never delay a real
 * delivery. Those slots (`concurrency`, 16 by default) are shared by every
 * listener of every client: one copy in flight per listener and listeners
 * served in turn, so a slow or dead listener holds at most one slot, for up
 * to the copy timeout per attempt; but enough slow listeners at once fill
 * the slots, and the others' copies wait (and may be late) until one frees.
 */
export class ListenerCopies {
  private readonly lanes = new Map<string, Lane>();
  private readonly running = new Set<Promise<void>>();
  private inFlight = 0;
  private stopping = false;
  /** Copies' attempts in flight: a stop cuts them (a copy is not durable: nothing to give back). */
  private readonly deadlines = new Set<AttemptDeadline>();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly core: Pick<Core, 'store' | 'clock'>,
    private readonly agents: ReceiverAgents,
    private readonly opts: ListenerCopiesOptions,
  ) {}

  add(copies: ListenerCopy[]): void {
    if (this.stopping || copies.length === 0) return;
    for (const c of copies) {
      let lane = this.lanes.get(c.escucha.id);
      // The move read the lease just now: the newest renewal known.
      if (!lane) this.lanes.set(c.escucha.id, (lane = { escucha: c.escucha, queue: [], busy: false, dueAt: 0, readAt: this.core.clock.ticks() }));
      else if (c.escucha.expira_at > lane.escucha.expira_at) {
        lane.escucha = c.escucha;
        lane.readAt = this.core.clock.ticks();
      }
      lane.queue.push({ ...c, intentos: 0 });
      if (lane.queue.length > COPY_BACKLOG) lane.queue.splice(0, lane.queue.length - COPY_BACKLOG);
    }
    this.pump();
  }

  /** A listener removed here: what waits for it is dropped at once. */
  forget(id: string): void {
    const lane = this.lanes.get(id);
    if (!lane) return;
    lane.queue.length = 0;
    if (!lane.busy) this.lanes.delete(id);
  }

  async stop(): Promise<void> {
    this.stopping = true;
    clearTimeout(this.timer);
    this.lanes.clear();
    for (const d of this.deadlines) d.abort('stop');
    await Promise.allSettled([...this.running]);
    await this.agents.close();
  }

  private pump(): void {
    if (this.stopping) return;
    clearTimeout(this.timer);
    this.timer = undefined;
    const t = this.core.clock.ticks();
    let next = Infinity;
    for (const [id, lane] of [...this.lanes]) {
      if (lane.busy) continue;
      if (lane.queue.length === 0) {
        this.lanes.delete(id);
        continue;
      }
      if (lane.dueAt > t) {
        next = Math.min(next, lane.dueAt);
        continue;
      }
      if (this.inFlight >= this.opts.concurrency) break;
      // Listeners take turns: this one goes to the back.
      this.lanes.delete(id);
      this.lanes.set(id, lane);
      this.start(lane);
    }
    if (next < Infinity) this.timer = setTimeout(() => this.pump(), Math.max(1, next - t)).unref();
  }

  private start(lane: Lane): void {
    const c = lane.queue.shift()!;
    lane.busy = true;
    this.inFlight += 1;
    const run = this.attempt(lane, c)
      .catch((err: unknown) => this.opts.onError(err))
      .finally(() => {
        lane.busy = false;
        this.inFlight -= 1;
        this.running.delete(run);
        this.pump();
      });
    this.running.add(run);
  }

  private async attempt(lane: Lane, c: Pending): Promise<void> {
    const now = this.core.clock.now();
    // Past the lease as last known, before a retry, or a second after the last look: the store says whether it was renewed or removed.
    if (c.intentos > 0 || now >= lane.escucha.expira_at || this.core.clock.ticks() - lane.readAt >= this.opts.recheckMs) {
      lane.readAt = this.core.clock.ticks();
      const live = (await this.core.store.liveEscuchas(lane.escucha.cliente_id, now)).find((e) => e.id === lane.escucha.id);
      if (!live) {
        lane.queue.length = 0;
        return;
      }
      lane.escucha = live;
    }
    if (await this.post(lane.escucha, c)) return;
    // Otherwise dropped: a listener is a developer's window, not a durable path.
    if (c.intentos + 1 < COPY_ATTEMPTS && !this.stopping) {
      lane.queue.unshift({ ...c, intentos: c.intentos + 1 });
      lane.dueAt = this.core.clock.ticks() + this.opts.retryMs * 4 ** c.intentos;
    }
  }

  /** One signed POST, as a real delivery is made; true on a 2xx. */
  private async post(e: EscuchaRow, c: Pending): Promise<boolean> {
    // One deadline for the whole attempt, as a delivery's (deadline.ts).
    const deadline = new AttemptDeadline(this.opts.timeoutMs);
    this.deadlines.add(deadline);
    try {
      const url = new URL(e.url);
      const agent = this.agents.ready(e.cliente_id, url, e.created_at) ?? (await deadline.race(this.agents.get(e.cliente_id, url, e.created_at)));
      const ts = Math.floor(this.core.clock.now() / 1000);
      const headers: Record<string, string> = {
        'content-type': 'application/json',
        'user-agent': this.opts.userAgent,
        'x-service-event': c.evento,
        'webhook-id': c.id,
        'webhook-timestamp': String(ts),
        ...sign(e.secret, c.id, ts, c.body),
      };
      const answer: PostAnswer = { status: null, retryAfter: undefined };
      try {
        await post(agent, url, headers, c.body, deadline, 128 * 1024, answer);
      } catch (err) {
        if (answer.status === null) this.agents.drop(e.cliente_id, url, agent);
        throw err;
      }
      return answer.status !== null && answer.status >= 200 && answer.status < 300;
    } catch {
      return false;
    } finally {
      deadline.done();
      this.deadlines.delete(deadline);
    }
  }
}
