import { afterAll, beforeAll, expect, it } from 'vitest';
import { ManualClock } from '../../src/core/time/clock.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { injectTransport } from '../helpers/inject-http.js';
import { linkedLine, type Line } from '../server/send-helpers.js';
import { Cli, expectCleanExit, expectJsonOnly, fields, rows } from './helpers.js';

/** `pasarela celular edit --calentamiento` and the line's warm-up in `celular show`, against a real server (in-process). */
const T0 = Date.UTC(2026, 2, 10, 12);
let s: TestServer;
let cli: Cli;
let a: Line;

beforeAll(async () => {
  s = await startTestServer({ tz: 'UTC', clock: new ManualClock(T0) });
  cli = new Cli(s.url, injectTransport(s.app));
  a = await linkedLine(s);
});
afterAll(async () => {
  cli?.cleanup();
  await s?.stop();
});

const env = () => ({ env: { PASARELA_KEY: a.clientKey } });

it('sets a plan, shows the day and the caps it leaves, and ends it with none', async () => {
  const set = fields(expectCleanExit(await cli.run(['celular', 'edit', String(a.celularId), '--calentamiento', 'estandar'], env())));
  expect(set.calentamiento).toBe('estandar (day 1, since 2026-03-10T12:00:00.000Z)');
  expect(set).toMatchObject({ max_envios_por_minuto: '12', efectivo_por_minuto: '2', efectivo_por_hora: '10', efectivo_por_dia: '20' });
  (s.clock as ManualClock).advance(2 * 86_400_000);
  const shown = fields(expectCleanExit(await cli.run(['celular', 'show', String(a.celularId)], env())));
  expect(shown).toMatchObject({ efectivo_por_dia: '50' });
  expect(shown.calentamiento).toMatch(/^estandar \(day 3,/);
  // The list shows the caps in force (day 3: 3 a minute, 20 an hour); piped, one tab-separated row a line.
  const listed = rows(expectCleanExit(await cli.run(['celular', 'list'], env())));
  const row = listed.find((r) => r[0] === String(a.celularId))!;
  // Columns: id numero nombre estado saldo sesion "por min" "por hora" horario.
  expect([row[6], row[7]]).toEqual(['3', '20']);
  const j = expectJsonOnly(await cli.run(['celular', 'show', String(a.celularId), '--json'], env()));
  expect(j.celular).toMatchObject({ calentamiento: 'estandar', calentamiento_dia: 3, max_envios_por_dia_efectivo: 50 });
  const none = fields(expectCleanExit(await cli.run(['celular', 'edit', String(a.celularId), '--calentamiento', 'none'], env())));
  expect(none.calentamiento).toBeUndefined();
  expect(none.efectivo_por_minuto).toBeUndefined();
  const after = expectJsonOnly(await cli.run(['celular', 'show', String(a.celularId), '--json'], env()));
  expect(after.celular).toMatchObject({ calentamiento: null, max_envios_por_minuto_efectivo: 12 });
});

it('an unknown plan is a usage error (exit 2) naming the plans, and nothing is sent', async () => {
  const r = await cli.run(['celular', 'edit', String(a.celularId), '--calentamiento', 'turbo'], env());
  expect(r.exitCode).toBe(2);
  expect(r.stderr).toMatch(/estandar, rapido, prudente, none|"estandar", "rapido", "prudente", "none"/);
});

it('celular create starts a new line with its plan and its brake', async () => {
  const made = expectJsonOnly(await cli.run(['celular', 'create', '5215511112222', '--calentamiento', 'rapido', '--freno', 'on', '--json'], env()));
  expect(made.celular).toMatchObject({ calentamiento: 'rapido', calentamiento_dia: 1, freno: true });
  const bad = await cli.run(['celular', 'create', '5215511113333', '--calentamiento', 'turbo'], env());
  expect(bad.exitCode).toBe(2);
});
