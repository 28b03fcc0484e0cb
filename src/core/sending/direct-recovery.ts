import type { Core } from '../context.js';
import { publishMessageStatus } from '../events/message-events.js';
import { countLineFailure, endedFallido } from '../accounts/line-brake.js';
import type { AcceptedMedia } from '../ports/media.js';
import type { ErrorClase, MensajePayload, MensajeRow } from '../ports/model.js';

/**
 * Direct sends a crash (or a failed write after the gateway answered) left
 * `pendiente` with their charge taken. Nothing else moves them: the queue
 * worker only claims queued messages, and the client's request that would have
 * recorded the outcome is gone. Each one is resolved here:
 *
 * - the gateway can say whether our message went (the simulator, by msg_id):
 *   record the truth; a sent one takes its gateway id, and the receipts parked
 *   for that id meanwhile are applied with it;
 * - the gateway cannot tell (Evolution and WAHA know nothing of our ids): end
 *   it in `error` with a reason that says the outcome is unknown, and refund it
 *   like every error, since the client never got an answer that it was sent
 *   (docs/decisions.md D-30).
 *
 * At start-up every pending direct send is stranded (one process per data
 * directory, so none is in flight); afterwards a periodic pass takes those
 * whose slot ended long ago and that this process is not sending.
 */

export const REASON_NOT_SENT = 'not sent: the service stopped before this direct send reached the network (charge refunded)';
export const REASON_UNKNOWN = 'outcome unknown: the service stopped while this direct send was in flight; it may have reached the recipient (charge refunded)';

const BATCH = 100;

export interface RecoveryCounts {
  sent: number;
  failed: number;
  /** Left for a later pass: the gateway could not be asked now. */
  deferred: number;
}

export interface RecoveryDeps {
  /** To drop a resolved send's media. */
  files: Pick<AcceptedMedia, 'remove'>;
  /** Direct sends this process has in flight: never touched. */
  inFlight: ReadonlySet<string>;
}

/** Resolves every direct send still `pendiente` whose slot ended before `before`. */
export async function recoverDirect(core: Pick<Core, 'store' | 'gateway' | 'clock' | 'bus'>, deps: RecoveryDeps, before: number): Promise<RecoveryCounts> {
  const counts: RecoveryCounts = { sent: 0, failed: 0, deferred: 0 };
  const skipped = new Set<string>();
  for (;;) {
    const batch = (await core.store.strandedDirect(before, BATCH + skipped.size)).filter((m) => !skipped.has(m.msg_id));
    if (batch.length === 0) return counts;
    for (const m of batch) {
      if (deps.inFlight.has(m.msg_id)) {
        skipped.add(m.msg_id);
        continue;
      }
      const outcome = await recoverOne(core, deps.files, m).catch(() => 'deferred' as const);
      if (outcome === 'deferred') skipped.add(m.msg_id);
      counts[outcome] += 1;
    }
  }
}

/** Resolves one stranded direct send now (a repeat of its key that knows its sender is gone: core/sending/send.ts). */
export async function recoverOne(
  core: Pick<Core, 'store' | 'gateway' | 'clock' | 'bus'>,
  files: Pick<AcceptedMedia, 'remove'>,
  m: MensajeRow,
): Promise<'sent' | 'failed'> {
  const outcome = await resolveOne(core, m);
  const file = (JSON.parse(m.payload ?? '{}') as MensajePayload).file;
  if (file) await files.remove(file);
  return outcome;
}

async function resolveOne(core: Pick<Core, 'store' | 'gateway' | 'clock' | 'bus'>, m: MensajeRow): Promise<'sent' | 'failed'> {
  const celular = await core.store.getCelular(m.celular_id);
  const ask = core.gateway.sentMessage?.bind(core.gateway);
  if (ask && celular?.gateway_instancia) {
    const went = await ask(celular.gateway_instancia, m.msg_id);
    if (went) {
      // Recorded at the time the network took it, so the line's caps count it where it happened.
      const after = await core.store.markSent(m.msg_id, went.gatewayMsgId, went.at);
      if (after) publishMessageStatus(core, after, 'pendiente');
      // A failure report parked before this record and applied by it counts toward the line's health (D-170).
      if (after && endedFallido(after, 'pendiente')) await countLineFailure(core, m.celular_id, 'fallido').catch(() => undefined);
      return 'sent';
    }
    return fail(core, m, REASON_NOT_SENT, 'no_enviado');
  }
  return fail(core, m, REASON_UNKNOWN, 'incierto');
}

async function fail(core: Pick<Core, 'store' | 'clock' | 'bus'>, m: MensajeRow, reason: string, clase: ErrorClase): Promise<'failed'> {
  const after = await core.store.failMensaje(m.msg_id, reason, clase, core.clock.now());
  if (after) publishMessageStatus(core, after, 'pendiente');
  return 'failed';
}

/** The periodic pass: a direct send is stranded once its slot has ended and as long again has passed. */
export class DirectRecovery {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> | undefined;

  constructor(
    private readonly core: Pick<Core, 'store' | 'gateway' | 'clock' | 'bus' | 'config'>,
    private readonly deps: RecoveryDeps,
    private readonly opts: { intervalMs: number; onError: (err: unknown) => void; onResolved: (c: RecoveryCounts) => void },
  ) {}

  /** One pass now. `all`: at start-up, when nothing of this store can be in flight. */
  async run(all = false): Promise<RecoveryCounts> {
    const before = all ? Number.MAX_SAFE_INTEGER : this.core.clock.now() - this.core.config.queue.leaseMs;
    const c = await recoverDirect(this.core, this.deps, before);
    if (c.sent + c.failed + c.deferred > 0) this.opts.onResolved(c);
    return c;
  }

  start(): void {
    if (this.opts.intervalMs <= 0) return;
    this.timer = setInterval(() => {
      this.running ??= this.run()
        .catch(this.opts.onError)
        .finally(() => (this.running = undefined));
    }, this.opts.intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
  }
}
