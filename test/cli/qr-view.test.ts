import qrcode from 'qrcode-terminal';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { QUIET_ZONE, qrModules, renderQr } from '../../src/cli/qr-display.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { Cli } from './helpers.js';

/**
 * The drawn QR (`celular qr` on a terminal): a 4-module quiet zone, --invert,
 * never wider or taller than the terminal (the raw content and a hint
 * instead), redrawn in place without stale rows as it rotates, cleared once
 * the line is connected.
 */

const CONTENT =
  '2@abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJ,KLMNOPQRSTUVWXYZ0123456789abcdefghijklmnopq=,rstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+/=,1';

/** Half-block lines back into modules (true: the terminal's text colour). */
function inked(lines: string[]): boolean[][] {
  const rows: boolean[][] = [];
  for (const line of lines) {
    const chars = [...line];
    rows.push(chars.map((c) => c === '█' || c === '▀'));
    rows.push(chars.map((c) => c === '█' || c === '▄'));
  }
  return rows;
}

describe('renderQr', () => {
  const modules = qrModules(CONTENT);
  const n = modules.length;

  it("draws the encoder's modules inside a quiet zone of 4 light modules on every side", () => {
    const lines = renderQr(modules);
    const size = n + 2 * QUIET_ZONE;
    expect(lines).toHaveLength(Math.ceil(size / 2));
    for (const l of lines) expect([...l]).toHaveLength(size);
    const ink = inked(lines); // default: the light modules are inked
    for (let r = 0; r < size; r += 1) {
      for (let c = 0; c < size; c += 1) {
        const inside = r >= QUIET_ZONE && r < QUIET_ZONE + n && c >= QUIET_ZONE && c < QUIET_ZONE + n;
        const light = inside ? !modules[r - QUIET_ZONE]![c - QUIET_ZONE] : true;
        expect(ink[r]![c], `module ${r},${c}`).toBe(light);
      }
    }
    // The last half row of an odd height is light too.
    expect(ink[size]!.every(Boolean)).toBe(true);
  });

  it("uses the same matrix as qrcode-terminal's own drawing (its margin aside)", () => {
    let theirs = '';
    qrcode.generate(CONTENT, { small: true }, (s) => (theirs = s));
    const their = inked(theirs.split('\n').filter((l) => l !== ''));
    // Its first line is a half-dark, half-light border; then one light column on the left.
    for (let r = 0; r < n; r += 1) for (let c = 0; c < n; c += 1) expect(their[r + 2]![c + 1]).toBe(!modules[r]![c]);
  });

  it('--invert inks the dark modules instead: every cell swapped', () => {
    const normal = renderQr(modules);
    const inverted = renderQr(modules, true);
    const swap: Record<string, string> = { '█': ' ', ' ': '█', '▀': '▄', '▄': '▀' };
    // All but the last line, whose lower half is padding (light in both).
    expect(inverted.slice(0, -1)).toEqual(normal.slice(0, -1).map((l) => [...l].map((c) => swap[c]).join('')));
    expect(inverted[0]).toBe(' '.repeat(n + 2 * QUIET_ZONE));
    expect(normal[0]).toBe('█'.repeat(n + 2 * QUIET_ZONE));
  });
});

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
