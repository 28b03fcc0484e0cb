import { applySessionStatus, applyStatusChecks, onlyChecked } from './celulares.js';
import { checkLineHealth, healthWindow } from './line-brake.js';
import { failoverPass } from './grupos.js';
import type { Core } from '../context.js';
import { stream } from '../nodes/leases.js';
import type { NodePresence } from '../nodes/node-presence.js';
import type { Linea, StatusCheck } from '../ports/accounts.js';
import type { SessionStatus } from '../ports/model.js';

/** setTimeout's ceiling (about 24.8 days): a longer --health-interval would otherwise fire every millisecond. */
const MAX_TIMEOUT_MS = 2 ** 31 - 1;

/**
 * Lines per page of a pass. On PostgreSQL a page is four or five round trips whatever its size (statements over
 * arrays), and an idle node's CPU is mostly round trips (D-191); on SQLite a page's writes are one turn of the
 * request thread's group commit, which a bigger page would hold longer.
 */
export const HEALTH_PAGE = { shared: 1000, alone: 200 };

/** Failure buckets removed per health pass at most: a pass never holds the writer for long. */
const FAILURE_PRUNE_BATCH = 5000;

/** What the last health pass found, for /health and the logs. */
export interface GatewayHealth {
  /** null until the first pass has run. */
  ok: boolean | null;
  checkedAt: number | null;
  lineas: number;
  fallidas: number;
  error: string | null;
}

/**
 * The periodic line health check (`serve --health-interval`): asks the
 * gateway for every line's session and records it (`last_status`,
 * `last_status_check`, the celular estado, `session.status` on a change).
 * Gateways push their own status events, but those get lost (a gateway
 * restart, a webhook that failed): this pass is what keeps a dead line from
 * showing `activo` for long. The first pass also adopts every line's
 * instance, so the gateway's events point at this server even when its
 * callback URL changed since the instance was made.
 *
 * Several nodes: each line's check is a stream lease (core/nodes/leases.ts) that
 * rests nine tenths of the interval once checked, so the nodes share the lines
 * and each line is checked about once per interval whichever node does it.
 */
export class LineHealth {
  readonly state: GatewayHealth = { ok: null, checkedAt: null, lineas: 0, fallidas: 0, error: null };
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private adopted = false;
  private stopped = false;
  /** Linked sessions found stopped and started again (for the logs and tests). */
  restarted = 0;
  /** Queued messages moved to another line of their pool (D-175). */
  moved = 0;

  constructor(
    private readonly core: Pick<Core, 'store' | 'gateway' | 'clock' | 'bus' | 'signals' | 'config'>,
    private readonly node: NodePresence,
    private readonly opts: { intervalMs: number; concurrency: number; onError: (err: unknown, instancia?: string) => void },
  ) {}

  start(): void {
    if (this.opts.intervalMs <= 0) return;
    this.schedule(0);
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(
      () => {
        // A pass that fails as a whole (the store cannot list the lines) is reported, never left unhandled: that would end the process.
        void this.checkNow()
          .catch((err: unknown) => this.opts.onError(err))
          .finally(() => this.schedule(this.opts.intervalMs));
      },
      Math.min(ms, MAX_TIMEOUT_MS),
    );
    this.timer.unref();
  }

  /** One pass over every line now (a pass already running is joined, not doubled). */
  checkNow(): Promise<void> {
    return (this.running ??= this.pass().finally(() => (this.running = undefined)));
  }

  /**
   * One line: adopt its instance (first pass), read its session, start it
   * again if it was linked and stopped; a status that changes nothing but when
   * it was checked joins `checks` (recorded a page at a time), any other is
   * applied now.
   */
  private async checkLine(l: Linea, adopt: boolean, checks: StatusCheck[], known?: { status: SessionStatus; at: number }): Promise<void> {
    const { gateway } = this.core;
    if (adopt) await gateway.ensureInstance(l.gateway_instancia, { numero: l.numero });
    // Observed when asked: an event another node applies meanwhile is newer (core/accounts/celulares.ts applySessionStatus).
    const at = known?.at ?? this.core.clock.now();
    let status = known?.status ?? (await gateway.status(l.gateway_instancia));
    // A linked session that stopped or failed (the gateway restarted without it, its engine crashed)
    // is started again: with its credentials it comes back without a scan.
    if (status === 'disconnected' && l.vinculado) {
      status = (await gateway.connect(l.gateway_instancia, l.numero, { repair: true })).status;
      this.restarted += 1;
    }
    const read = { estado: l.estado, vinculado: l.vinculado ? 1 : 0, last_status: l.last_status };
    if (onlyChecked(read, status)) checks.push({ id: l.id, status, estado: l.estado, vinculado: read.vinculado, at });
    else await applySessionStatus(this.core, l.id, status, at);
  }

  /** The lines' statuses in one call where the gateway answers so (null: asked one by one, also after that call failed). */
  private async statusesOf(lines: Linea[]): Promise<Array<{ status: SessionStatus; at: number }> | null> {
    const { gateway, clock } = this.core;
    if (!gateway.statuses || lines.length === 0) return null;
    const at = clock.now();
    const all = await gateway.statuses(lines.map((l) => l.gateway_instancia)).catch(() => null);
    return all && all.length === lines.length ? all.map((status) => ({ status, at })) : null;
  }

  private async pass(): Promise<void> {
    const { core } = this;
    let lineas = 0;
    const failures: Array<{ err: unknown; instancia: string }> = [];
    const adopt = !this.adopted;
    let after = 0;
    const size = core.store.caps.shared ? HEALTH_PAGE.shared : HEALTH_PAGE.alone;
    // Lines checked within the interval, by this node or another, rest; a little short of the interval, so this node's next
    // pass, an interval after this one ends, finds them due.
    const rest = Math.floor(this.opts.intervalMs * 0.9);
    const atOnce = !adopt && core.gateway.statuses !== undefined;
    while (!this.stopped) {
      // A page and its leases in one call (D-196). A page the gateway answers in one call (after the adopting pass) is over
      // in moments: its leases are taken already resting, held by nobody, and need no give (on PostgreSQL one in-place
      // update a line). Checked one by one, a page lasts as long as the gateway makes it: its leases are held, so no other
      // node checks a line this one is still on, and given back after, those a stop left unreached free at once (D-196).
      const page = await this.node.takeLines(after, size, atOnce ? rest : null);
      if (page.last === null) break;
      after = page.last;
      const mine = page.taken;
      const checks: StatusCheck[] = [];
      const known = atOnce ? await this.statusesOf(mine) : null;
      let next = 0;
      const worker = async () => {
        while (next < mine.length && !this.stopped) {
          const i = next++;
          const l = mine[i]!;
          lineas += 1;
          await this.checkLine(l, adopt, checks, known?.[i]).catch((err: unknown) => failures.push({ err, instancia: l.gateway_instancia }));
        }
      };
      await Promise.all(Array.from({ length: Math.max(1, this.opts.concurrency) }, worker));
      // The page's unchanged lines in one write, then (held leases) their give in one statement.
      await applyStatusChecks(core, checks).catch((err: unknown) => {
        for (const c of checks) failures.push({ err, instancia: mine.find((l) => l.id === c.id)?.gateway_instancia ?? '' });
      });
      if (!atOnce) await this.node.giveAll(mine.map((l, i) => ({ stream: stream.salud(l.id), restMs: i < next ? rest : 0 }))).catch(this.opts.onError);
      // The last page says so: no read of an empty one (a line made meanwhile is the next pass's).
      if (!page.more) break;
    }
    // The lines' states are fresh now: pools move the queues of lines down longer than their wait (D-175).
    if (!this.stopped) this.moved += await failoverPass(core).catch((err: unknown) => (this.opts.onError(err), 0));
    let ok = failures.length < lineas;
    if (lineas === 0) {
      // Without lines, ask for one that cannot exist (ids start at 1): any answer says the gateway is up.
      ok = await core.gateway.status('pasarela-0').then(
        () => true,
        (err: unknown) => (failures.push({ err, instancia: 'pasarela-0' }), false),
      );
    }
    const message = (err: unknown) => (err instanceof Error ? err.message : String(err));
    // One report per pass, not one per line: a gateway that is down must not flood the log.
    const first = failures[0];
    if (first && lineas > 0) {
      this.opts.onError(
        new Error(`${failures.length} of ${lineas} lines could not be checked; first: ${first.instancia}: ${message(first.err)}`, { cause: first.err }),
        first.instancia,
      );
    }
    // Adoption is done once every line answered; until then each pass tries again.
    if (failures.length === 0) this.adopted = true;
    const last = failures[failures.length - 1];
    Object.assign(this.state, {
      ok,
      checkedAt: core.clock.now(),
      lineas,
      fallidas: lineas === 0 ? 0 : failures.length,
      error: last ? message(last.err) : null,
    });
    // The lines' brake (core/accounts/line-brake.ts): messages never delivered are news no outcome brings, so each pass weighs every line.
    await this.brakePass().catch((err: unknown) => this.opts.onError(err));
  }

  /** Every line with messages in the health window weighed against its thresholds; failure buckets past the window pruned. */
  private async brakePass(): Promise<void> {
    const { core } = this;
    await checkLineHealth(core, null);
    await core.store.pruneLineFailures(healthWindow(core.clock.now()).fallosDesde, FAILURE_PRUNE_BATCH);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running?.catch(() => undefined);
  }
}
