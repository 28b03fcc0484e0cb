import { createRequire } from 'node:module';
import { CliError } from './exit-codes.js';
import { EXIT } from '../shared/exit-codes.js';
import type { Ctx } from './context.js';
import { displayWidth, escapeControls, rowsTaken, wrapWidth } from '../shared/terminal-text.js';

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
  /** Draw the dark modules instead of the light ones: for terminals with a light background. */
  invert?: boolean;
  sleep?: (ms: number) => Promise<void>;
  /** The watch behind `fetch` (watch.ts): while the QR is drawn its notices are counted in the next erase. */
  notices?: { notify: (text: string) => void };
}

/** Modules of blank margin on every side: the QR specification asks for 4, and phones read badly with less. */
export const QUIET_ZONE = 4;

interface QrEncoder {
  addData(data: string): void;
  make(): void;
  getModuleCount(): number;
  isDark(row: number, col: number): boolean;
}

/**
 * The code's modules (true: dark). qrcode-terminal bundles Kazuhiko Arase's
 * encoder; its own drawing has a one-module margin and fixed colours, so we
 * draw from the matrix. Error correction L, as qrcode-terminal uses: the
 * smallest picture, which matters more on a terminal than the margin for
 * damage a printed code needs.
 */
export function qrModules(text: string): boolean[][] {
  const require = createRequire(import.meta.url);
  const QRCode = require('qrcode-terminal/vendor/QRCode/index.js') as new (typeNumber: number, level: number) => QrEncoder;
  const level = require('qrcode-terminal/vendor/QRCode/QRErrorCorrectLevel.js') as { L: number };
  const qr = new QRCode(-1, level.L);
  qr.addData(text);
  qr.make();
  const n = qr.getModuleCount();
  return Array.from({ length: n }, (_, r) => Array.from({ length: n }, (_, c) => qr.isDark(r, c)));
}

/**
 * The code as lines of half blocks (two modules a character cell, one column
 * per module), with the quiet zone on every side. A terminal draws blocks in
 * its text colour: by default the light modules are the blocks and the dark
 * ones the background, which is right on a dark background; `invert` draws
 * the dark modules instead, for a light background.
 */
export function renderQr(modules: boolean[][], invert = false): string[] {
  const n = modules.length;
  const size = n + 2 * QUIET_ZONE;
  const dark = (r: number, c: number) =>
    r >= QUIET_ZONE && r < QUIET_ZONE + n && c >= QUIET_ZONE && c < QUIET_ZONE + n && modules[r - QUIET_ZONE]![c - QUIET_ZONE]!;
  const ink = (r: number, c: number) => dark(r, c) === invert;
  const lines: string[] = [];
  // An odd height leaves a last half row: it is quiet zone too (light).
  for (let r = 0; r < size; r += 2) {
    let line = '';
    for (let c = 0; c < size; c += 1) {
      const top = ink(r, c);
      const bottom = r + 1 < size ? ink(r + 1, c) : !invert;
      line += top && bottom ? '█' : top ? '▀' : bottom ? '▄' : ' ';
    }
    lines.push(line);
  }
  return lines;
}

/** What a QR answer without a QR means: a linked line coming back (the engine, D-133), or a session still starting. */
function noQr(b: QrBody): string {
  return `celular ${b.celular_id} has no QR to show (${escapeControls(b.status)}): linked, it is reconnecting and needs no scan; not linked yet, its QR comes shortly`;
}

/**
 * Shows a linking QR until the line is connected. On a TTY it draws the QR
 * and redraws it in place as it rotates: the view's terminal rows are
 * counted (wrapped lines included), the cursor goes up exactly that many and
 * clears to the end of the screen. A QR wider or taller than the terminal is
 * not drawn (it would wrap into something no phone reads): the view says how
 * big the terminal must be and prints the code's content for another tool.
 * Once connected the QR is cleared and the success line printed. Without a
 * TTY, or with --json, it prints the QR content for another program to
 * render; with --wait it keeps printing each new one until connected (NDJSON
 * with --json).
 */
export async function showQr(ctx: Ctx, first: QrBody, w: QrWatch): Promise<QrBody> {
  const { term } = ctx;
  const drawing = term.io.stdoutIsTTY && !ctx.json;
  const sleep = w.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  let lastQr = '';

  // On a TTY: the view now on screen, as terminal rows, and what it showed.
  let drawnRows = 0;
  let drawnKey = '';
  const erase = () => {
    if (drawnRows > 0) term.io.stdout.write(`\r\u001b[${drawnRows}A\u001b[J`);
    drawnRows = 0;
    drawnKey = '';
  };
  const draw = (key: string, lines: () => string[]) => {
    if (key === drawnKey) return;
    const columns = term.columns();
    const text = lines();
    erase();
    term.io.stdout.write(`${text.join('\n')}\n`);
    // eslint-disable-next-line no-control-regex -- colour codes take no columns
    drawnRows = columns === undefined ? text.length : text.reduce((n, l) => n + rowsTaken(l.replace(/\u001b\[[0-9;]*m/g, ''), columns), 0);
    drawnKey = key;
  };
  const dim = (lines: string[]) => lines.map((l) => term.color.dim(l));

  // A notice ("server unreachable, retrying…", "reconnected") lands below the view on the same
  // screen (stderr, when it is the terminal too): the next erase takes its rows with the view's.
  const notices = drawing ? w.notices : undefined;
  const plainNotify = notices?.notify;
  if (notices && plainNotify) {
    notices.notify = (text) => {
      plainNotify(text);
      if (!term.io.stderrIsTTY || drawnRows === 0) return;
      const columns = term.columns();
      drawnRows += text.split('\n').reduce((n, l) => n + (columns === undefined ? 1 : rowsTaken(l, columns)), 0);
    };
  }

  const view = (b: QrBody) => {
    const columns = term.columns();
    const rows = term.rows();
    const wrap = (text: string) => (columns === undefined ? [text] : wrapWidth(text, columns));
    if (b.qr === '') {
      // Real gateways may need a moment before the first QR (status `connecting`): say so, keep polling.
      draw(`wait ${b.status} ${columns} ${rows}`, () => dim(wrap(`${noQr(b)}; this view follows it.`)));
      return;
    }
    draw(`${b.qr} ${columns} ${rows}`, () => {
      const picture = renderQr(qrModules(b.qr), w.invert);
      const width = displayWidth(picture[0] ?? '');
      const hint = `Scan with the phone of celular ${b.celular_id} (Linked devices > Link a device). The code changes every few seconds; this view follows it.`;
      const hintLines = wrapWidth(hint, Math.max(columns ?? width, width));
      // The whole view and the line the cursor waits on must be on screen, or the redraw cannot reach its top.
      const height = picture.length + hintLines.length + 1;
      const narrow = columns !== undefined && width > columns;
      const short = rows !== undefined && height > rows;
      if (!narrow && !short) return [...picture, ...dim(hintLines)];
      const terminal = rows === undefined ? `${columns}-column terminal` : `${columns}x${rows} terminal`;
      const action =
        narrow && short
          ? `widen the terminal to ${width} columns and ${height} rows`
          : narrow
            ? `widen the terminal to ${width} columns`
            : `make the terminal ${height} rows tall`;
      return [
        ...wrap(
          `The QR of celular ${b.celular_id} does not fit in this ${terminal}: ${action}, or write it as an image with \`pasarela celular qr ${b.celular_id} --png qr.png\` and open that (it holds the QR of that moment: write it again if the phone says it expired). It changes every few seconds; this view follows it. The raw code:`,
        ).map((l) => term.color.yellow(l)),
        escapeControls(b.qr),
      ];
    });
  };

  let lastWait = '';
  const show = (b: QrBody) => {
    if (drawing) {
      if (b.status !== 'connected') view(b);
      return;
    }
    if (b.status === 'connected') return;
    if (b.qr === '' && !ctx.json) {
      // Nothing for another program to read: say on stderr what is happening, once per status.
      if (b.status !== lastWait) term.err(`${noQr(b)}${w.wait ? '; waiting' : ''}`);
      lastWait = b.status;
      lastQr = '';
      return;
    }
    if (b.qr === lastQr) return;
    lastQr = b.qr;
    lastWait = '';
    if (ctx.json) term.out(w.wait ? JSON.stringify(b) : JSON.stringify(b, null, 2));
    else term.out(b.qr);
  };

  const done = (b: QrBody) => {
    if (ctx.json) term.out(w.wait ? JSON.stringify(b) : JSON.stringify(b, null, 2));
    else if (drawing) {
      erase();
      term.out(term.color.green(`✓ celular ${b.celular_id} is connected (${escapeControls(b.gateway_instancia)})`));
    } else term.err(`celular ${b.celular_id} is connected`);
    return b;
  };

  if (first.status === 'connected') return done(first);
  show(first);
  if (!drawing && !w.wait) return first;

  try {
    const deadline = Date.now() + w.timeoutMs;
    while (Date.now() < deadline) {
      await sleep(w.intervalMs);
      const b = await w.fetch();
      if (b.status === 'connected') return done(b);
      show(b);
    }
  } finally {
    // A code left on screen after we stop following it would only be scanned in vain.
    if (drawing) erase();
    if (notices && plainNotify) notices.notify = plainNotify;
  }
  throw new CliError(`celular ${first.celular_id} was not linked within ${Math.round(w.timeoutMs / 1000)} s; run the command again for a new QR`, EXIT.TIMEOUT);
}
