import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ManualClock } from '../../src/core/time/clock.js';
import { api, seedClient, startTestServer, type Seeded, type TestServer } from '../helpers/server.js';
import { Cli, cliCommandLine, HAS_SCRIPT, until } from './helpers.js';

/**
 * The drawn QR (`celular qr` on a terminal): a 4-module quiet zone, --invert,
 * never wider or taller than the terminal (the raw content and a hint
 * instead), redrawn in place without stale rows as it rotates, cleared once
 * the line is connected.
 */

let s: TestServer;
let cli: Cli;

beforeAll(async () => {
  s = await startTestServer();
  cli = new Cli(s.url);
});
afterAll(async () => {
  cli?.cleanup();
  await s?.stop();
});

const CURSOR_UP = /\r?\u001b\[(\d+)A\u001b\[J/g;
const sgrless = (t: string) => t.replace(/\u001b\[[0-9;]*m/g, '');
const segmenter = new Intl.Segmenter(undefined, { granularity: 'grapheme' });
const width = (line: string) => [...segmenter.segment(sgrless(line))].length; // the views hold no wide characters

function qrOnTerminal(columns: number, rows: number, a: Seeded, extra: string[] = []) {
  const args = ['celular', 'qr', String(a.celularId), '--interval', '200', '--timeout', '30', ...extra];
  return cli.spawnTty(`stty cols ${columns} rows ${rows}; ${cliCommandLine(args)}`, { env: { PASARELA_KEY: a.clientKey } });
}

async function scan(celularId: number): Promise<void> {
  await until(async () => (await api(s.url, 'POST', '/admin/sim/scan', { key: s.adminToken, json: { celular_id: celularId } })).status === 200, 15_000);
}

describe.skipIf(!HAS_SCRIPT)('on an 80-column terminal', () => {
  it('draws within 80 columns, redraws each rotation over exactly the rows it drew, and clears the QR once connected', async () => {
    const a = await seedClient(s);
    const clock = s.clock as ManualClock;
    const proc = qrOnTerminal(80, 50, a);
    let seen = '';
    proc.stdout?.on('data', (c: Buffer) => (seen += String(c)));
    const redraws = () => seen.match(CURSOR_UP)?.length ?? 0;
    const drawn = () => /this view follows it\.[^\n]*\n$/.test(seen.split(CURSOR_UP).at(-1) ?? '');
    await until(async () => drawn());
    // Two rotations of the simulated code (its clock is ours): each is a redraw in place.
    for (const k of [1, 2]) {
      clock.advance(20_000);
      await until(async () => redraws() >= k && drawn());
    }
    await scan(a.celularId);
    const r = await proc;
    expect(r.exitCode, String(r.stdout)).toBe(0);
    const out = String(r.stdout);

    // Split the stream at each "cursor up N, clear to the end": every part but the last is one drawn view.
    const ups = [...out.matchAll(CURSOR_UP)].map((m) => Number(m[1]));
    const parts = out.split(CURSOR_UP).filter((_, i) => i % 2 === 0);
    expect(ups.length).toBeGreaterThanOrEqual(3); // two rotations and the final clear
    for (let i = 0; i < ups.length; i += 1) {
      const view = parts[i]!;
      const lines = view.split('\r\n').slice(0, -1);
      expect(ups[i], `view ${i}`).toBe(lines.length); // no line wraps at 80 columns: one row each
      for (const l of lines) expect(width(l), JSON.stringify(l)).toBeLessThanOrEqual(80);
      // The quiet zone: the top two rows are all light, every row starts and ends with 4 light modules.
      expect(lines[0]).toMatch(/^█+$/);
      expect(lines[1]).toMatch(/^█+$/);
      for (const l of lines.filter((x) => /[▀▄ ]/.test(x) && !/[a-z]/i.test(x))) expect(l).toMatch(/^████.*████$/);
    }
    // Different codes were drawn, and after the last clear only the success line.
    expect(new Set(parts.slice(0, -1)).size).toBe(parts.length - 1);
    expect(parts.at(-1)).toMatch(new RegExp(`^[^█▀▄]*✓ celular ${a.celularId} is connected`));
  });

  it('--invert draws the other polarity: a blank quiet zone and swapped blocks', async () => {
    const a = await seedClient(s);
    const [normal, inverted] = await Promise.all([qrOnTerminal(80, 50, a, ['--timeout', '1']), qrOnTerminal(80, 50, a, ['--invert', '--timeout', '1'])]);
    const first = (out: string) => out.split(CURSOR_UP)[0]!.split('\r\n');
    const n = first(String(normal.stdout));
    const i = first(String(inverted.stdout));
    expect(n[0]).toMatch(/^█+$/);
    expect(i[0]).toMatch(/^ +$/);
    expect(i[0]!.length).toBe(n[0]!.length);
    expect(i.slice(2, 10).every((l) => l.startsWith('    ') && l.endsWith('    '))).toBe(true);
    // The code left on screen is cleared when the command gives up too.
    for (const r of [normal, inverted]) {
      expect(r.exitCode).toBe(11); // the watch timed out
      expect(String(r.stdout)).toMatch(/\u001b\[\d+A\u001b\[J[^█▀▄]*not linked within 1 s/);
    }
  });

  it('a terminal too short for the code gets the raw code and the size it needs', async () => {
    const a = await seedClient(s);
    const r = await qrOnTerminal(80, 24, a, ['--timeout', '1']);
    const out = sgrless(String(r.stdout));
    expect(out.replace(/\r\n(?!2@)/g, ' ')).toMatch(
      /does not fit in this 80x24 terminal: make the terminal \d+ rows tall, or write it as an image with `pasarela celular qr \d+ --png qr\.png`/,
    );
    expect(out).not.toMatch(/[█▀▄]/);
    expect(out).toMatch(/^2@\S+\r$/m);
  });
});

describe.skipIf(!HAS_SCRIPT)('on a 40-column terminal', () => {
  it('does not draw a QR that would wrap: it says how wide the terminal must be and prints the raw code whole', async () => {
    const a = await seedClient(s);
    const r = await qrOnTerminal(40, 30, a, ['--timeout', '1']);
    expect(r.exitCode).toBe(11); // the watch timed out
    const out = String(r.stdout);
    const first = out.split(CURSOR_UP)[0]!;
    const lines = first.split('\r\n').slice(0, -1);
    const raw = lines.filter((l) => l.startsWith('2@'));
    expect(raw).toHaveLength(1);
    const text = sgrless(lines.filter((l) => !l.startsWith('2@')).join(' '));
    expect(text).toMatch(/does not fit in this 40x30 terminal: widen the terminal to (\d+) columns/);
    expect(Number(/widen the terminal to (\d+) columns/.exec(text)![1])).toBeGreaterThan(40);
    expect(out).not.toMatch(/[█▀▄]/);
    // Every line but the raw code (kept on one line so that it copies whole) fits; the redraw counts the rows it wraps into.
    for (const l of lines) if (!l.startsWith('2@')) expect(width(l), JSON.stringify(l)).toBeLessThanOrEqual(40);
    const up = Number(/\u001b\[(\d+)A/.exec(out)?.[1]);
    expect(up).toBe(lines.length - 1 + Math.ceil(raw[0]!.length / 40));
  });
});
