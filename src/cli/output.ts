import type { Ctx } from './context.js';
import type { Term } from './io.js';
import { cellSafe, displayWidth, escapeControls, padWidth, truncateWidth, wrapWidth } from '../shared/terminal-text.js';

/**
 * One way to print results. `--json`: the JSON and nothing else on stdout.
 * On a TTY: tables and aligned fields, coloured unless NO_COLOR, fitted to
 * the terminal's width. Off a TTY: tab-separated lines without headers (gh
 * style), easy to cut and grep, never cut to a width. Either way server data
 * has its control characters escaped visibly (`\u001b`), never raw.
 */
export function printJson(term: Term, data: unknown): void {
  term.out(JSON.stringify(data, null, 2));
}

export type Plain = string | number | boolean | null | undefined;

/**
 * A coloured cell. The renderer cuts `value` to its column first and colours
 * what is left, so colour codes never count as width or get cut in half.
 * Colour a cell with `painted`, never by passing a string chalk has coloured.
 */
export interface Painted {
  readonly value: Plain;
  readonly paint: (text: string) => string;
}

export type Cell = Plain | Painted;

export const painted = (value: Plain, paint: (text: string) => string): Painted => ({ value, paint });

const isPainted = (v: Cell): v is Painted => typeof v === 'object' && v !== null;
const plainText = (v: Plain) => (v === null || v === undefined ? '' : String(v));

/**
 * The cell as scripts get it off a terminal: the data, its controls escaped
 * visibly as on a terminal (a pipe may end on one), coloured only when
 * colour is forced; `flat` (a table's cell) turns tabs and line breaks into spaces.
 */
const rawText = (v: Cell, flat: boolean) => {
  const text = plainText(isPainted(v) ? v.value : v);
  const safe = escapeControls(flat ? text.replace(/[\t\n]/g, ' ') : text);
  return isPainted(v) ? v.paint(safe) : safe;
};

/**
 * A cell as a terminal line shows it: one line, control characters escaped
 * (server data may carry ESC sequences, C1 controls or bidi overrides), its
 * width, its colour.
 */
interface Shown {
  text: string;
  width: number;
  paint: (text: string) => string;
}

const same = (text: string) => text;

function shown(v: Cell): Shown {
  const text = cellSafe(plainText(isPainted(v) ? v.value : v));
  return { text, width: displayWidth(text), paint: isPainted(v) ? v.paint : same };
}

/**
 * Columns holding free text (names, messages, reasons, URLs, paths): when a
 * table is wider than the terminal they give up width first, down to
 * FREE_TEXT_FLOOR columns (or their header).
 */
const FREE_TEXT = new Set(['texto', 'error', 'ultimo error', 'nombre', 'email', 'url', 'detalle', 'motivo', 'data_dir']);
const FREE_TEXT_FLOOR = 10;

const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);

/**
 * Widths that fit `budget` columns of content, or null when the table cannot
 * fit without cutting identifiers, numbers or dates: then it is printed one
 * record per block instead (like psql's expanded display). The free-text
 * columns are cut down to one level, the widest first ("water filling").
 */
export function fitColumns(headers: string[], natural: number[], budget: number): number[] | null {
  if (sum(natural) <= budget) return natural;
  const free = headers.map((h) => FREE_TEXT.has(h.toLowerCase()));
  const floor = natural.map((w, i) => (free[i] ? Math.min(w, Math.max(displayWidth(headers[i]!), FREE_TEXT_FLOOR)) : w));
  if (sum(floor) > budget) return null;
  const at = (level: number) => natural.map((w, i) => (free[i] ? Math.max(floor[i]!, Math.min(w, level)) : w));
  // The highest level that fits (at level 0 every free column is at its floor, which fits).
  let lo = 0;
  let hi = Math.max(...natural);
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (sum(at(mid)) <= budget) lo = mid;
    else hi = mid - 1;
  }
  const widths = at(lo);
  // What the level leaves over goes, a column each, to the free columns still cut.
  let spare = budget - sum(widths);
  for (let i = 0; i < widths.length && spare > 0; i += 1) {
    if (free[i] && widths[i]! < natural[i]!) {
      widths[i]! += 1;
      spare -= 1;
    }
  }
  return widths;
}

/** One cell cut to `width` and padded to it, then coloured. */
const cellAt = (c: Shown, width: number) => {
  const text = c.width > width ? truncateWidth(c.text, width) : c.text;
  return `${c.paint(text)}${' '.repeat(width - displayWidth(text))}`;
};

export function printTable(term: Term, headers: string[], rows: Cell[][]): void {
  if (!term.io.stdoutIsTTY) {
    for (const r of rows) term.out(r.map((v) => rawText(v, true)).join('\t'));
    return;
  }
  if (rows.length === 0) {
    term.out(term.color.dim('(none)'));
    return;
  }
  const heads = headers.map((h) => h.toUpperCase());
  const cells = rows.map((r) => headers.map((_, i) => shown(r[i])));
  const natural = heads.map((h, i) => Math.max(displayWidth(h), ...cells.map((r) => r[i]!.width)));
  const colored = term.color.level > 0;
  const bold = (s: string) => (colored ? term.color.bold(s) : s);
  const head = heads.map((h): Shown => ({ text: h, width: displayWidth(h), paint: bold }));
  const columns = term.columns();
  const n = headers.length;

  // Boxed as long as it fits (free text cut first); then without the boxes' 3 columns a cell; then one block per row.
  const boxed = columns === undefined ? natural : fitColumns(headers, natural, columns - (3 * n + 1));
  if (boxed !== null) {
    const border = (s: string) => (colored ? term.color.gray(s) : s);
    const rule = (l: string, m: string, r: string) => border(`${l}${boxed.map((w) => '─'.repeat(w + 2)).join(m)}${r}`);
    const line = (row: Shown[]) => `${border('│')}${row.map((c, i) => ` ${cellAt(c, boxed[i]!)} `).join(border('│'))}${border('│')}`;
    const out: string[] = [rule('┌', '┬', '┐'), line(head)];
    for (const r of cells) out.push(rule('├', '┼', '┤'), line(r));
    out.push(rule('└', '┴', '┘'));
    term.out(out.join('\n'));
    return;
  }
  const compact = fitColumns(headers, natural, columns! - 2 * (n - 1));
  if (compact !== null) {
    // gh style: two spaces between columns, no trailing blanks.
    const line = (row: Shown[]) =>
      row
        .map((c, i) => cellAt(c, compact[i]!))
        .join('  ')
        .trimEnd();
    term.out([line(head), ...cells.map(line)].join('\n'));
    return;
  }
  printRecords(term, headers, cells, columns!);
}

/**
 * `key  value` lines for one record. With a known width, a value longer than
 * the room left is cut (`cut`, in lists) or wrapped under itself (`wrap`, in
 * the view of one thing, where nothing should be lost).
 */
function fieldLines(term: Term, key: string, keyWidth: number, v: Shown, columns: number | undefined, mode: 'cut' | 'wrap'): string[] {
  const k = term.color.dim(padWidth(key, keyWidth));
  if (columns === undefined) return [`${k}  ${v.paint(v.text)}`];
  const room = columns - keyWidth - 2;
  if (room >= 8) {
    const parts = mode === 'cut' ? [truncateWidth(v.text, room)] : wrapWidth(v.text, room);
    return parts.map((p, i) => `${i === 0 ? `${k}  ` : ' '.repeat(keyWidth + 2)}${v.paint(p)}`);
  }
  // Too narrow for key and value side by side: the value goes under its key.
  const indent = columns > 4 ? 2 : 0;
  const vroom = columns - indent;
  const parts = mode === 'cut' ? [truncateWidth(v.text, vroom)] : wrapWidth(v.text, vroom);
  return [term.color.dim(truncateWidth(key, columns)), ...parts.map((p) => `${' '.repeat(indent)}${v.paint(p)}`)];
}

/** A table too wide for the terminal: each row as a block of `header  value` lines, blocks apart by a blank line. */
function printRecords(term: Term, headers: string[], cells: Shown[][], columns: number): void {
  const keyWidth = Math.max(...headers.map(displayWidth));
  const out: string[] = [];
  cells.forEach((r, n) => {
    if (n > 0) out.push('');
    r.forEach((c, i) => out.push(...fieldLines(term, headers[i]!, keyWidth, c, columns, 'cut')));
  });
  term.out(out.join('\n'));
}

export function printFields(term: Term, pairs: Array<[string, Cell]>): void {
  if (!term.io.stdoutIsTTY) {
    for (const [k, v] of pairs) term.out(`${k}\t${rawText(v, false)}`);
    return;
  }
  const w = Math.max(...pairs.map(([k]) => displayWidth(k)));
  const columns = term.columns();
  term.out(pairs.flatMap(([k, v]) => fieldLines(term, k, w, shown(v), columns, 'wrap')).join('\n'));
}

/** Prints `data` as JSON under --json, else runs the human renderer. */
export function emit(ctx: Ctx, data: unknown, human: () => void): void {
  if (ctx.json) printJson(ctx.term, data);
  else human();
}

/** A one-time secret, said loudly on a TTY and plainly otherwise. */
export function printSecret(term: Term, label: string, value: string, to: 'out' | 'err' = 'out'): void {
  const tty = to === 'out' ? term.io.stdoutIsTTY : term.io.stderrIsTTY;
  const c = to === 'out' ? term.color : term.errColor;
  const write = (line: string) => (to === 'out' ? term.out(line) : term.err(line));
  if (tty) {
    write(`${c.yellow(label)} (shown once, store it now):`);
    write(`  ${c.bold(value)}`);
  } else {
    write(`${label}\t${value}`);
  }
}
