import qrcode from 'qrcode-terminal';
import { CliError, EXIT } from './exit-codes.js';
import type { Ctx } from './context.js';

/** What the QR endpoints answer. */
export interface QrBody {
  celular_id: number;
  gateway_instancia: string;
  qr: string;
  status: string;
  estado?: string;
  [k: string]: unknown;
}

export interface QrWatch {
  /** Fetches the QR state now (celular_qr.php). */
  fetch(): Promise<QrBody>;
  /** Keep going until connected (always on a TTY; on request otherwise). */
  wait: boolean;
  intervalMs: number;
  timeoutMs: number;
  sleep?: (ms: number) => Promise<void>;
}

function render(text: string): string {
  let out = '';
  qrcode.generate(text, { small: true }, (s) => {
    out = s;
  });
  return out;
}

/**
 * Shows a linking QR until the line is connected. On a TTY it draws the QR
 * (Unicode half blocks, no colours needed) and redraws it as it rotates.
 * Without a TTY, or with --json, it prints the QR content for another program
 * to render; with --wait it keeps printing each new one until connected
 * (NDJSON with --json).
 */
export async function showQr(ctx: Ctx, first: QrBody, w: QrWatch): Promise<QrBody> {
  const { term } = ctx;
  const drawing = term.io.stdoutIsTTY && !ctx.json;
  const sleep = w.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  let drawnLines = 0;
  let lastQr = '';
  let waitingSaid = false;

  const show = (b: QrBody) => {
    // Real gateways may need a moment before the first QR (status `connecting`): say so once, keep polling.
    if (b.qr === '' && b.status !== 'connected' && drawing && !waitingSaid) {
      waitingSaid = true;
      term.err(term.color.dim(`The gateway is starting the session of celular ${b.celular_id} (${b.status}); the QR appears here as soon as it has one.`));
    }
    if (b.status === 'connected' || b.qr === lastQr) return;
    lastQr = b.qr;
    if (ctx.json) {
      term.out(w.wait ? JSON.stringify(b) : JSON.stringify(b, null, 2));
    } else if (!drawing) {
      term.out(b.qr);
    } else {
      if (drawnLines > 0) term.io.stdout.write(`\x1b[${drawnLines}A\x1b[0J`);
      const pic = render(b.qr);
      const hint = term.color.dim(`Scan with the phone of celular ${b.celular_id} (Linked devices > Link a device). The code changes every few seconds; this view follows it.`);
      const text = `${pic}\n${hint}\n`;
      term.io.stdout.write(text);
      drawnLines = text.split('\n').length - 1;
    }
  };

  const done = (b: QrBody) => {
    if (ctx.json) term.out(w.wait ? JSON.stringify(b) : JSON.stringify(b, null, 2));
    else if (drawing) term.out(term.color.green(`✓ celular ${b.celular_id} is connected (${b.gateway_instancia})`));
    else term.err(`celular ${b.celular_id} is connected`);
    return b;
  };

  if (first.status === 'connected') return done(first);
  show(first);
  if (!drawing && !w.wait) return first;

  const deadline = Date.now() + w.timeoutMs;
  while (Date.now() < deadline) {
    await sleep(w.intervalMs);
    const b = await w.fetch();
    if (b.status === 'connected') return done(b);
    show(b);
  }
  throw new CliError(`celular ${first.celular_id} was not linked within ${Math.round(w.timeoutMs / 1000)} s; run the command again for a new QR`, EXIT.TIMEOUT);
}
