import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, seedClient, startTestServer, type Seeded, type TestServer } from '../helpers/server.js';
import { injectTransport } from '../helpers/inject-http.js';
import { Cli, ESC, expectJsonOnly, rows } from './helpers.js';

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
  cli = new Cli(s.url, injectTransport(s.app));
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

/** NOMBRE as every human format shows it: each control as a visible JSON-style escape. */
const NOMBRE_SHOWN = 'evil \\u001b]0;pwned\\u0007 and \\u001b[31mred\\u001b[0m \\u202eabc \\u009b2J end';
const noRawControls = (text: string, what: string) => {
  for (const c of [ESC, '\u0007', '\u009b', '\u202e']) expect(text.includes(c), `${what}: a raw ${JSON.stringify(c)}`).toBe(false);
};

describe('off a terminal (a pipe)', () => {
  it('the tab-separated list and the fields of show escape the controls visibly, as on a terminal; --json keeps the exact value as JSON escapes', async () => {
    const env = { env: { PASARELA_KEY: a.clientKey } };
    const [list, show, json] = await Promise.all([
      cli.run(['celular', 'list'], env),
      cli.run(['celular', 'show', String(a.celularId)], env),
      cli.run(['celular', 'show', String(a.celularId), '--json'], env),
    ]);
    expect(list.exitCode).toBe(0);
    expect(rows(list.stdout)[0]?.[2]).toBe(NOMBRE_SHOWN);
    expect(show.exitCode).toBe(0);
    expect(show.stdout).toContain(`\t${NOMBRE_SHOWN}\n`);
    for (const [r, what] of [
      [list, 'list'],
      [show, 'show'],
      [json, '--json'],
    ] as const)
      noRawControls(r.stdout, what);
    expect(expectJsonOnly(json).celular.nombre_interno).toBe(NOMBRE);
  });

  it('an error reason from the server is escaped on stderr through a pipe too, colour forced or not', async () => {
    for (const env of [{}, { FORCE_COLOR: '1' }]) {
      const r = await cli.run(['send', 'text', FAILING, 'hola', '--directo', '--celular', String(a.celularId)], { env: { PASARELA_KEY: a.clientKey, ...env } });
      expect(r.exitCode).not.toBe(0);
      expect(r.stderr).toContain('blocked \\u001b]0;pwned\\u0007 \\u001b[8mhidden\\u001b[0m');
      noRawControls(r.stderr, 'stderr');
      expect(r.stderr).not.toContain(`${ESC}]`);
      expect(r.stderr).not.toContain(`${ESC}[8m`);
    }
  });
});
