import Table from 'cli-table3';
import type { Ctx } from './context.js';
import type { Term } from './io.js';

/**
 * One way to print results. `--json`: the JSON and nothing else on stdout.
 * On a TTY: tables and aligned fields, coloured unless NO_COLOR. Off a TTY:
 * tab-separated lines without headers (gh style), easy to cut and grep.
 */
export function printJson(term: Term, data: unknown): void {
  term.out(JSON.stringify(data, null, 2));
}

export type Cell = string | number | boolean | null | undefined;

const cellText = (v: Cell) => (v === null || v === undefined ? '' : String(v));

export function printTable(term: Term, headers: string[], rows: Cell[][]): void {
  if (!term.io.stdoutIsTTY) {
    for (const r of rows) term.out(r.map((v) => cellText(v).replace(/[\t\n]/g, ' ')).join('\t'));
    return;
  }
  if (rows.length === 0) {
    term.out(term.color.dim('(none)'));
    return;
  }
  const colored = term.color.level > 0;
  const table = new Table({
    head: headers.map((h) => (colored ? term.color.bold(h.toUpperCase()) : h.toUpperCase())),
    style: { head: [], border: colored ? ['grey'] : [] },
  });
  for (const r of rows) table.push(r.map(cellText));
  term.out(table.toString());
}

export function printFields(term: Term, pairs: Array<[string, Cell]>): void {
  if (!term.io.stdoutIsTTY) {
    for (const [k, v] of pairs) term.out(`${k}\t${cellText(v)}`);
    return;
  }
  const w = Math.max(...pairs.map(([k]) => k.length));
  for (const [k, v] of pairs) term.out(`${term.color.dim(k.padEnd(w))}  ${cellText(v)}`);
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
  const write = to === 'out' ? term.out : term.err;
  if (tty) {
    write(`${c.yellow(label)} (shown once, store it now):`);
    write(`  ${c.bold(value)}`);
  } else {
    write(`${label}\t${value}`);
  }
}
