import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Seeded, TestServer } from '../helpers/server.js';
import { Cli, cliCommandLine, ESC, HAS_SCRIPT } from './helpers.js';
import { FAILING, NOMBRE, NOMBRE_SHOWN, noRawControls, startControlsWorld } from './controls-fixture.js';

/**
 * Server data carrying terminal controls (ESC sequences that retitle the
 * window or colour text, a C1 CSI, a bidi override) is shown escaped on a
 * terminal, never obeyed, and through a pipe too (which may well end on a
 * terminal: `| grep`, `| cat`); --json stays the exact JSON.
 */
let s: TestServer;
let cli: Cli;
let a: Seeded;

beforeAll(async () => {
  ({ s, a } = await startControlsWorld());
  cli = new Cli(s.url);
});
afterAll(async () => {
  cli?.cleanup();
  await s?.stop();
});

async function onTerminal(args: string[], env: Record<string, string> = {}): Promise<{ exitCode: number; out: string }> {
  const r = await cli.spawnTty(`stty cols 200 rows 50; ${cliCommandLine(args)}`, { env: { PASARELA_KEY: a.clientKey, ...env } });
  return { exitCode: r.exitCode ?? -1, out: String(r.stdout) };
}

/** The colour codes these views write themselves (bold, dim, green, yellow, grey borders, their ends) taken out. */
const withoutOurColours = (s: string) => s.replace(/\u001b\[(?:1|2|22|32|33|39|90)m/g, '');

describe.skipIf(!HAS_SCRIPT)('on a terminal', () => {
  it('celular list and show escape the name: no raw ESC, C1 or bidi override; the escapes are visible', async () => {
    const [list, show] = await Promise.all([
      onTerminal(['celular', 'list'], { NO_COLOR: '1' }),
      onTerminal(['celular', 'show', String(a.celularId)], { NO_COLOR: '1' }),
    ]);
    for (const r of [list, show]) {
      expect(r.exitCode, r.out).toBe(0);
      expect(r.out).not.toContain(ESC);
      expect(r.out).not.toContain('\u0007');
      expect(r.out).not.toContain('\u009b');
      expect(r.out).not.toContain('\u202e');
      expect(r.out).toContain('evil \\u001b]0;pwned\\u0007');
    }
    expect(show.out).toContain('\\u001b[31mred\\u001b[0m \\u202eabc \\u009b2J end');
  });

  it('with colours on, only our own colour codes are raw', async () => {
    const [list, show] = await Promise.all([onTerminal(['celular', 'list']), onTerminal(['celular', 'show', String(a.celularId)])]);
    for (const r of [list, show]) {
      expect(r.exitCode, r.out).toBe(0);
      expect(r.out).toMatch(/\u001b\[3[23]m/); // estado, coloured by us
      expect(r.out).not.toContain(`${ESC}]`);
      expect(r.out).not.toContain(`${ESC}[31m`);
      expect(withoutOurColours(r.out)).not.toContain(ESC);
      expect(r.out).toContain('\\u001b]0;pwned\\u0007');
    }
  });

  it('an error reason from the server is escaped on stderr', async () => {
    const r = await onTerminal(['send', 'text', FAILING, 'hola', '--directo', '--celular', String(a.celularId)], { NO_COLOR: '1' });
    expect(r.exitCode).not.toBe(0);
    expect(r.out).toContain('blocked \\u001b]0;pwned\\u0007 \\u001b[8mhidden\\u001b[0m');
    expect(r.out).not.toContain(ESC);
    // With colour on, still none of the server's sequences: an error line has no colour of ours.
    const coloured = await onTerminal(['send', 'text', FAILING, 'hola', '--directo', '--celular', String(a.celularId)]);
    expect(coloured.out).not.toContain(`${ESC}]`);
    expect(coloured.out).not.toContain(`${ESC}[8m`);
  });

  it('--json on a terminal is the exact JSON: the same value, its controls as JSON escapes', async () => {
    const r = await onTerminal(['celular', 'show', String(a.celularId), '--json']);
    expect(r.exitCode).toBe(0);
    expect(r.out).not.toContain(ESC);
    expect(r.out).not.toContain('\u009b');
    expect(r.out).not.toContain('\u202e');
    expect(JSON.parse(r.out.replace(/\r\n/g, '\n')).celular.nombre_interno).toBe(NOMBRE);
  });
});

describe('off a terminal (a pipe)', () => {
  it('the real binary through a pipe (`celular list | cat`): no raw ESC, BEL, C1 or bidi override', async () => {
    const r = await cli.runBinary(['celular', 'list'], { env: { PASARELA_KEY: a.clientKey } });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stdout).toContain(NOMBRE_SHOWN);
    noRawControls(r.stdout, 'celular list | cat');
  });
});
