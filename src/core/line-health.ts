import { applySessionStatus } from './celulares.js';
import type { Core } from './context.js';

/** setTimeout's ceiling (about 24.8 days): a longer --health-interval would otherwise fire every millisecond. */
const MAX_TIMEOUT_MS = 2 ** 31 - 1;

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
 */
export class LineHealth {
  readonly state: GatewayHealth = { ok: null, checkedAt: null, lineas: 0, fallidas: 0, error: null };
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private adopted = false;
  private stopped = false;
  private reachable: boolean | null = null;
  /** Linked sessions found stopped and started again (for the logs and tests). */
  restarted = 0;

  constructor(
    private readonly core: Core,
    private readonly opts: { intervalMs: number; concurrency: number; onError: (err: unknown, instancia?: string) => void },
  ) {}

  start(): void {
    if (this.opts.intervalMs <= 0) return;
    this.schedule(0);
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      // A pass that fails as a whole (the store cannot list the lines) is reported, never left unhandled: that would end the process.
      void this.checkNow()
        .catch((err: unknown) => this.opts.onError(err))
        .finally(() => this.schedule(this.opts.intervalMs));
    }, Math.min(ms, MAX_TIMEOUT_MS));
    this.timer.unref();
  }

  /** One pass over every line now (a pass already running is joined, not doubled). */
  checkNow(): Promise<void> {
    return (this.running ??= this.pass().finally(() => (this.running = undefined)));
  }

  private async pass(): Promise<void> {
    const { core } = this;
    let lineas = 0;
    let fallidas = 0;
    let lastError: string | null = null;
    let firstFailure: { err: unknown; instancia: string } | null = null;
    const adopt = !this.adopted;
    let after = 0;
    for (;;) {
      const page = await core.store.listLineas(after, 200);
      if (page.length === 0) break;
      after = page[page.length - 1]!.id;
      let next = 0;
      const worker = async () => {
        while (next < page.length && !this.stopped) {
          const l = page[next++]!;
          lineas += 1;
          try {
            if (adopt) await core.gateway.ensureInstance(l.gateway_instancia, { numero: l.numero });
            let status = await core.gateway.status(l.gateway_instancia);
            // A linked session that stopped or failed (the gateway restarted without it, its engine crashed)
            // is started again: with its credentials it comes back without a scan.
            if (status === 'disconnected' && l.vinculado) {
              status = (await core.gateway.connect(l.gateway_instancia, l.numero)).status;
              this.restarted += 1;
            }
            await applySessionStatus(core, l.id, status);
          } catch (err) {
            fallidas += 1;
            lastError = err instanceof Error ? err.message : String(err);
            firstFailure ??= { err, instancia: l.gateway_instancia };
          }
        }
      };
      await Promise.all(Array.from({ length: Math.max(1, this.opts.concurrency) }, worker));
    }
    // Without lines, ask for one that cannot exist (ids start at 1): any answer says the gateway is up.
    if (lineas === 0) {
      try {
        await core.gateway.status('pasarela-0');
        this.reachable = true;
      } catch (err) {
        this.reachable = false;
        lastError = err instanceof Error ? err.message : String(err);
      }
    }
    // One report per pass, not one per line: a gateway that is down must not flood the log.
    if (firstFailure) {
      const { err, instancia } = firstFailure as { err: unknown; instancia: string };
      const msg = err instanceof Error ? err.message : String(err);
      this.opts.onError(new Error(`${fallidas} of ${lineas} lines could not be checked; first: ${instancia}: ${msg}`, { cause: err }), instancia);
    }
    // Adoption is done once every line answered; until then each pass tries again.
    if (fallidas === 0) this.adopted = true;
    Object.assign(this.state, { ok: lineas === 0 ? this.reachable : fallidas < lineas, checkedAt: core.clock.now(), lineas, fallidas, error: lastError });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running?.catch(() => undefined);
  }
}
