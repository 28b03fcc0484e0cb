import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Seeded, TestServer } from '../helpers/server.js';
import { injectTransport } from '../helpers/inject-http.js';
import { Cli, ESC, expectJsonOnly, rows } from './helpers.js';
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
  cli = new Cli(s.url, injectTransport(s.app));
});
afterAll(async () => {
  cli?.cleanup();
  await s?.stop();
});

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
