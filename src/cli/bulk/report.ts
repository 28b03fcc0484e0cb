import type { Ctx } from '../context.js';
import type { RowOutcome } from './send-row.js';

/**
 * What `send bulk` shows. Off a TTY (or with --json): one NDJSON line per row
 * on stdout, for scripts, and the summary on stderr. On a TTY: a progress bar
 * with the rate and the ETA on stderr (cli-progress), then the refused rows
 * (the first few) and the summary.
 */
export interface Tally {
  total: number;
  accepted: number;
  refused: number;
  /** Rows never sent because the run stopped (Ctrl-C, 402...). */
  unsent: number;
  /** Rows the server answered as before (an earlier run sent them): counted in accepted or refused too. */
  replayed: number;
}

/** Refused rows listed on a TTY after the bar; the NDJSON has them all. */
const SHOWN_REFUSALS = 20;

interface Bar {
  start(total: number, value: number, payload: object): void;
  update(value: number, payload: object): void;
  stop(): void;
}

export class BulkReport {
  readonly tally: Tally;
  private readonly ndjson: boolean;
  private bar: Bar | undefined;
  private readonly refusals: RowOutcome[] = [];
  private readonly replays: RowOutcome[] = [];
  private readonly started = performance.now();

  constructor(
    private readonly ctx: Ctx,
    total: number,
  ) {
    this.tally = { total, accepted: 0, refused: 0, unsent: 0, replayed: 0 };
    this.ndjson = ctx.json || !ctx.term.io.stdoutIsTTY;
  }

  /** Starts the bar on a TTY (loaded only there: scripts never load it). */
  async start(): Promise<void> {
    if (!this.ctx.term.io.stderrIsTTY) return;
    const { default: cliProgress } = await import('cli-progress');
    const bar = new cliProgress.SingleBar(
      {
        stream: this.ctx.term.io.stderr,
        format: '{bar} {percentage}% | {value}/{total} rows | {rate} rows/s | ETA {eta_formatted} | refused {refused}{status}',
        hideCursor: true,
        etaBuffer: 200,
        fps: 5,
      },
      cliProgress.Presets.shades_classic,
    );
    bar.start(this.tally.total, 0, { rate: '0', refused: 0, status: '' });
    this.bar = bar;
  }

  /** One row done: its line (NDJSON) or its tick on the bar. */
  row(o: RowOutcome, unsent = false): void {
    if (o.ok) this.tally.accepted += 1;
    else if (unsent) this.tally.unsent += 1;
    else this.tally.refused += 1;
    if (o.replayed) this.tally.replayed += 1;
    if (this.ndjson) this.ctx.term.io.stdout.write(`${JSON.stringify(o)}\n`);
    else if (!o.ok && !unsent && this.refusals.length < SHOWN_REFUSALS) this.refusals.push(o);
    else if (o.ok && o.replayed && this.replays.length < SHOWN_REFUSALS) this.replays.push(o);
    const done = this.tally.accepted + this.tally.refused + this.tally.unsent;
    this.bar?.update(done, { rate: this.rate(done).toFixed(1), refused: this.tally.refused, status: '' });
  }

  /** A wait the run is in (a 429's retry_after): on the bar on a TTY, once per kind on stderr off one. */
  status(text: string, firstOfItsKind: boolean): void {
    if (this.bar) this.bar.update(this.tally.accepted + this.tally.refused + this.tally.unsent, { status: ` | ${text}` });
    else if (firstOfItsKind) this.ctx.term.err(text);
  }

  private seconds(): number {
    return (performance.now() - this.started) / 1000;
  }

  private rate(done: number): number {
    const s = this.seconds();
    return s > 0 ? done / s : 0;
  }

  /** Stops the bar and says how the run went (why it ended early is the command's error). */
  finish(): void {
    this.bar?.stop();
    const t = this.tally;
    const { term } = this.ctx;
    if (!this.ndjson) {
      const replays = [...this.replays].sort((a, b) => a.row - b.row);
      for (const r of replays) term.out(`row ${r.row}\t${r.destinatario}\treplayed: msg_id ${r.msg_id ?? ''} was sent by an earlier run`);
      if (t.replayed > replays.length) term.out(`... and ${t.replayed - replays.length} more replayed rows (--json lists every row)`);
      for (const r of this.refusals) term.out(`row ${r.row}\t${r.destinatario}\t${r.replayed ? 'refused before (replayed)' : 'refused'}: ${r.error ?? ''}`);
      if (t.refused > this.refusals.length) term.out(`... and ${t.refused - this.refusals.length} more refused rows (--json lists every row)`);
    }
    const done = t.accepted + t.refused;
    const secs = this.seconds();
    term.err(
      `${t.accepted} of ${t.total} rows accepted, ${t.refused} refused, ${t.total - done} not sent, in ${secs.toFixed(1)} s (${this.rate(done).toFixed(1)} rows/s)` +
        (t.replayed > 0 ? `; ${t.replayed} of them replayed: answered as an earlier run of this file was, nothing sent now` : ''),
    );
  }
}
