import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, seedClient, startTestServer, type Seeded, type TestServer } from '../helpers/server.js';
import { Cli, cliCommandLine, ESC, HAS_SCRIPT } from './helpers.js';

/**
 * Server data carrying terminal controls (ESC sequences that retitle the
 * window or colour text, a C1 CSI, a bidi override) is shown escaped on a
 * terminal, never obeyed, and through a pipe too (which may well end on a
 * terminal: `| grep`, `| cat`); --json stays the exact JSON.
 */
let s: TestServer;
let cli: Cli;
let a: Seeded;

const NOMBRE = 'evil \u001b]0;pwned\u0007 and \u001b[31mred\u001b[0m \u202eabc \u009b2J end';
const FAILING = '5215500000077';
const MOTIVO = 'blocked \u001b]0;pwned\u0007 \u001b[8mhidden\u001b[0m';

beforeAll(async () => {
  s = await startTestServer();
  cli = new Cli(s.url);
  a = await seedClient(s, { saldo: 10 });
  const edit = await api(s.url, 'POST', `/api/celular_editar.php?id=${a.celularId}`, { key: a.clientKey, json: { nombre_interno: NOMBRE } });
  expect(edit.status, edit.text).toBe(200);
  // Linked, with a rule that makes sends to FAILING fail with MOTIVO as the reason.
  await api(s.url, 'POST', `/api/celular_qr.php?id=${a.celularId}`, { key: a.clientKey });
  expect((await api(s.url, 'POST', '/admin/sim/scan', { key: s.adminToken, json: { celular_id: a.celularId } })).status).toBe(200);
  const fail = await api(s.url, 'POST', '/admin/sim/fail', { key: s.adminToken, json: { numero: FAILING, activo: true, motivo: MOTIVO } });
  expect(fail.status, fail.text).toBe(200);
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

/** NOMBRE as every human format shows it: each control as a visible JSON-style escape. */
const NOMBRE_SHOWN = 'evil \\u001b]0;pwned\\u0007 and \\u001b[31mred\\u001b[0m \\u202eabc \\u009b2J end';
const noRawControls = (text: string, what: string) => {
  for (const c of [ESC, '\u0007', '\u009b', '\u202e']) expect(text.includes(c), `${what}: a raw ${JSON.stringify(c)}`).toBe(false);
};

describe('off a terminal (a pipe)', () => {
  it('the real binary through a pipe (`celular list | cat`): no raw ESC, BEL, C1 or bidi override', async () => {
    const r = await cli.runBinary(['celular', 'list'], { env: { PASARELA_KEY: a.clientKey } });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stdout).toContain(NOMBRE_SHOWN);
    noRawControls(r.stdout, 'celular list | cat');
  });
});
