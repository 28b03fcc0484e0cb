import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Seeded, TestServer } from '../helpers/server.js';
import { Cli, cliCommandLine, HAS_SCRIPT } from './helpers.js';
import { FAMILY, FLAG, startWideWorld, TEXTS } from './table-width-fixture.js';

/**
 * Tables and field views on a terminal fit its width: every line at most
 * `columns` wide (emoji and CJK count 2, combining marks 0), free text cut
 * with `…` between characters, never inside an emoji. Off a terminal the
 * tab-separated output keeps every character.
 */
let s: TestServer;
let cli: Cli;
let a: Seeded;

beforeAll(async () => {
  ({ s, a } = await startWideWorld());
  cli = new Cli(s.url);
});
afterAll(async () => {
  cli?.cleanup();
  await s?.stop();
});

/*
 * An independent measure of a terminal line (not the CLI's own): grapheme
 * clusters, 2 columns for emoji and CJK, 0 for a cluster that is only a mark.
 */
const segmenter = new Intl.Segmenter(undefined, { granularity: 'grapheme' });
const WIDE = /\p{Extended_Pictographic}|\p{Regional_Indicator}|\p{Script=Han}|\p{Script=Hiragana}|\p{Script=Katakana}|[\u3000-\u303f\uff01-\uff60]/u;
function lineWidth(line: string): number {
  let w = 0;
  for (const { segment } of segmenter.segment(line.replace(/\u001b\[[0-9;]*m/g, ''))) w += WIDE.test(segment) ? 2 : /^\p{M}/u.test(segment) ? 0 : 1;
  return w;
}

async function onTerminal(columns: number, args: string[], env: Record<string, string> = {}): Promise<string> {
  const r = await cli.spawnTty(`stty cols ${columns} rows 50; ${cliCommandLine(args)}`, { env: { PASARELA_KEY: a.clientKey, ...env } });
  expect(r.exitCode, String(r.stdout)).toBe(0);
  return String(r.stdout).replace(/\r\n/g, '\n');
}

/** Every line fits, nothing was cut into an invalid character, and emoji sequences are whole or absent. */
function expectFits(out: string, columns: number): void {
  expect(out).not.toContain('\uFFFD');
  for (const line of out.split('\n')) expect(lineWidth(line), `${columns} columns: ${JSON.stringify(line)}`).toBeLessThanOrEqual(columns);
  // A family emoji is cut before it or kept whole, never after one of its people.
  expect(out.replace(new RegExp(FAMILY, 'g'), '')).not.toMatch(/[👨👩👧]|\u200d/u);
  // Flags are a pair of regional indicators: never one alone.
  expect(out.replace(new RegExp(FLAG, 'g'), '')).not.toMatch(/\p{Regional_Indicator}/u);
}

describe.skipIf(!HAS_SCRIPT)('on a terminal of 200, 80 and 40 columns', () => {
  for (const columns of [200, 80, 40]) {
    it(`historial, celular list and celular show fit in ${columns} columns`, async () => {
      const [historial, list, show, coloured] = await Promise.all([
        onTerminal(columns, ['historial'], { NO_COLOR: '1' }),
        onTerminal(columns, ['celular', 'list'], { NO_COLOR: '1' }),
        onTerminal(columns, ['celular', 'show', String(a.celularId)], { NO_COLOR: '1' }),
        onTerminal(columns, ['historial']),
      ]);
      for (const out of [historial, list, show, coloured]) expectFits(out, columns);
      // Cut texts end in an ellipsis; identifiers are never cut.
      expect(historial).toContain('…');
      for (let i = 0; i < TEXTS.length; i += 1) expect(historial).toContain(`width-${i}`);
      expect(list).toContain(a.numero);
      expect(show).toContain(a.numero);
      // The view of one celular wraps its long name instead of cutting it: every word is there.
      for (const word of ['Ventas', 'nombre', 'largo', 'tabla']) expect(show).toContain(word);
    });
  }

  it('a wide terminal gets the boxed table, a narrower one a table without boxes, a narrow one a block per record', async () => {
    const [wide, medium, narrow] = await Promise.all([
      onTerminal(200, ['historial'], { NO_COLOR: '1' }),
      onTerminal(95, ['celular', 'list'], { NO_COLOR: '1' }),
      onTerminal(80, ['historial'], { NO_COLOR: '1' }),
    ]);
    expect(wide).toMatch(/│ FECHA +│ MSG_ID +│/);
    expect(medium).toMatch(/^ID +NUMERO +NOMBRE +ESTADO/m);
    expect(medium).not.toMatch(/[┌│└]/);
    expect(medium).toContain('…'); // the long name was cut to make room
    expect(narrow).not.toMatch(/[┌│└]/);
    expect(narrow).toMatch(/^msg_id +width-0$/m);
    expect(narrow).toMatch(/^estado +error$/m);
  });

  it('the cut keeps whole characters: the emoji right at the edge is left out, not halved', async () => {
    const out = await onTerminal(200, ['historial'], { NO_COLOR: '1' });
    // TEXTS[4] is 30 a's then emoji; its column is 40 wide: 30 a's, 4 emoji (8 columns), the ellipsis and one blank.
    expect(out).toContain(`${'a'.repeat(30)}${'😀'.repeat(4)}…`);
    expect(out).toContain(`x${'😀'.repeat(19)}…`);
  });
});
