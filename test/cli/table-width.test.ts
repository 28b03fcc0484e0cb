import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Seeded, TestServer } from '../helpers/server.js';
import { injectTransport } from '../helpers/inject-http.js';
import { Cli, expectCleanExit, rows } from './helpers.js';
import { ERROR, NOMBRE, startWideWorld, TEXTS } from './table-width-fixture.js';

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
  cli = new Cli(s.url, injectTransport(s.app));
});
afterAll(async () => {
  cli?.cleanup();
  await s?.stop();
});

describe('off a terminal nothing is cut', () => {
  it('historial and celular list keep every character in their tab-separated lines', async () => {
    const env = { env: { PASARELA_KEY: a.clientKey, COLUMNS: '40' } };
    const [historial, list] = await Promise.all([cli.run(['historial'], env), cli.run(['celular', 'list'], env)]);
    const h = rows(expectCleanExit(historial));
    expect(h.map((r) => r[7])).toEqual([...TEXTS].reverse());
    expect(h.find((r) => r[1] === 'width-0')?.[8]).toBe(ERROR);
    expect(rows(expectCleanExit(list))[0]?.[2]).toBe(NOMBRE);
  });
});
