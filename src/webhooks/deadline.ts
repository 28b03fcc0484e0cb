import { abortable } from '../core/media/media-url.js';

/**
 * One webhook attempt's overall deadline: connecting, sending, the answer's
 * headers and its whole body together. undici's headersTimeout/bodyTimeout
 * are idle timers, so a receiver that trickles a byte a second would hold an
 * attempt for hours; aborting the request's signal destroys it wherever it
 * is. `stop` (the dispatcher stopping) aborts it too, for another reason.
 */
export class AttemptDeadline {
  // Made only when a vetting is raced (rare): the POST itself is cut through `onCut`, no listener on a signal.
  private controller: AbortController | null = null;
  private readonly timer: NodeJS.Timeout;
  /** Why the attempt was cut: its time ran out, or the node is stopping; null while it runs. */
  cut: 'timeout' | 'stop' | null = null;
  /** The error the attempt was cut with; null while it runs. */
  reason: Error | null = null;
  /** Called once when the attempt is cut (the running POST's abort). */
  onCut: ((reason: Error) => void) | null = null;

  constructor(readonly timeoutMs: number) {
    this.timer = setTimeout(() => this.abort('timeout'), timeoutMs);
  }

  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.reason) this.controller.abort(this.reason);
    }
    return this.controller.signal;
  }

  abort(why: 'timeout' | 'stop'): void {
    if (this.cut) return;
    this.cut = why;
    clearTimeout(this.timer);
    this.reason = new Error(why === 'timeout' ? `timeout after ${this.timeoutMs / 1000} s` : 'the node is stopping');
    this.controller?.abort(this.reason);
    this.onCut?.(this.reason);
  }

  /** Waits for `p` (a receiver's vetting, shared with other attempts and not cancellable) no longer than the attempt may last. */
  race<T>(p: Promise<T>): Promise<T> {
    return abortable(p, this.signal);
  }

  /** The attempt ended: no timer left behind. */
  done(): void {
    clearTimeout(this.timer);
  }
}
