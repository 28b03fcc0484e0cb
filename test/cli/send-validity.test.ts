import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ManualClock } from '../../src/core/time/clock.js';
import { until } from '../helpers/poll.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { editCelular, linkedLine, numeroNuevo, type Line } from '../server/send-helpers.js';
import { Cli, fields, ndjson } from './helpers.js';

/**
 * A send's validity from the command line (docs/validity.md): `--valid-for` on
 * every send command, the `send bulk` column `vigencia`, and `--wait` saying a
 * message expired in the queue (the failure's exit code, 7).
 */
const T0 = Date.UTC(2026, 3, 1, 12);
let s: TestServer;
let cli: Cli;
let L: Line;
const clock = new ManualClock(T0);

beforeAll(async () => {
  s = await startTestServer({ clock, tz: 'UTC', queue: { gapMinMs: 0, gapMaxMs: 0 }, streamTiming: { pollMs: 50 } });
  cli = new Cli(s.url);
  L = await linkedLine(s, { saldo: 50 });
  // Closed hours: what is queued stays queued until the test moves the clock.
  await editCelular(s, L, { hora_inicio_permitido: '00:00', hora_fin_permitido: '01:00' });
});
afterAll(async () => {
  cli?.cleanup();
  await s?.stop();
});

const env = () => ({ PASARELA_KEY: L.celularKey });

it('--valid-for 5m sends vigencia 300; a bare number is seconds; the record shows vigencia_hasta', async () => {
  const r = await cli.run(['send', 'text', numeroNuevo(), 'codigo 1234', '--valid-for', '5m'], { env: env() });
  expect(r.exitCode, r.stderr).toBe(0);
  const msgId = r.stdout.split('\t')[0]!;
  expect((await s.core.store.getMensaje(msgId))?.vigencia_hasta).toBe(clock.now() + 300_000);
  const shown = await cli.run(['mensaje', msgId], { env: env() });
  expect(shown.exitCode, shown.stderr).toBe(0);
  expect(fields(shown.stdout).vigencia_hasta).toBe(new Date(clock.now() + 300_000).toISOString());
  const bare = await cli.run(['send', 'text', numeroNuevo(), 'codigo 5678', '--valid-for', '90'], { env: env() });
  expect(bare.exitCode, bare.stderr).toBe(0);
  expect((await s.core.store.getMensaje(bare.stdout.split('\t')[0]!))?.vigencia_hasta).toBe(clock.now() + 90_000);
  // Without it: none.
  const plain = await cli.run(['send', 'text', numeroNuevo(), 'sin vigencia'], { env: env() });
  expect((await s.core.store.getMensaje(plain.stdout.split('\t')[0]!))?.vigencia_hasta).toBeNull();
});

it('--valid-for 0, abc, 9s, 25h or 1500ms is a usage error (exit 2) and sends nothing', async () => {
  const before = (await s.core.store.queueSizes([L.celularId]))[0]!.pendientes;
  for (const bad of ['0', 'abc', '9s', '25h', '1500ms', '-5m']) {
    const r = await cli.run(['send', 'text', numeroNuevo(), 'x', '--valid-for', bad], { env: env() });
    expect(r.exitCode, `${bad}: ${r.stderr}`).toBe(2);
    expect(r.stderr).toMatch(/valid-for/);
  }
  const img = await cli.run(['send', 'image', numeroNuevo(), 'https://example.com/a.png', '--valid-for', '0'], { env: env() });
  expect(img.exitCode).toBe(2);
  expect((await s.core.store.queueSizes([L.celularId]))[0]!.pendientes).toBe(before);
});

it('--valid-until sends an instant; with --valid-for too, or not an instant, it is a usage error; a bulk cell may be one', async () => {
  const until = new Date(clock.now() + 600_000).toISOString();
  const r = await cli.run(['send', 'text', numeroNuevo(), 'codigo 4321', '--valid-until', until], { env: env() });
  expect(r.exitCode, r.stderr).toBe(0);
  expect((await s.core.store.getMensaje(r.stdout.split('\t')[0]!))?.vigencia_hasta).toBe(clock.now() + 600_000);
  const both = await cli.run(['send', 'text', numeroNuevo(), 'x', '--valid-until', until, '--valid-for', '5m'], { env: env() });
  expect(both.exitCode).toBe(2);
  expect(both.stderr).toMatch(/--valid-for or --valid-until, not both/);
  const bad = await cli.run(['send', 'text', numeroNuevo(), 'x', '--valid-until', 'tomorrow'], { env: env() });
  expect(bad.exitCode).toBe(2);
  // Too soon: the server refuses it (400: exit 1), and the CLI names its flags.
  const soon = await cli.run(['send', 'text', numeroNuevo(), 'x', '--valid-until', new Date(clock.now() + 1000).toISOString()], { env: env() });
  expect(soon.exitCode).toBe(1);
  expect(soon.stderr).toMatch(/--valid-for or --valid-until: .* must fall 10 s to 24 h after the send starts/);
  const path = join(cli.home, 'hasta.csv');
  writeFileSync(path, ['destinatario,vigencia', `${numeroNuevo()},${until}`].join('\n') + '\n');
  const bulk = await cli.run(['send', 'bulk', path, '--text', 'hola'], { env: env() });
  expect(bulk.exitCode, bulk.stderr).toBe(0);
  const [row] = ndjson(bulk.stdout);
  expect((await s.core.store.getMensaje(row!.msg_id as string))?.vigencia_hasta).toBe(clock.now() + 600_000);
});

it('send bulk: the column vigencia gives each row its validity; a bad cell refuses its row only', async () => {
  const path = join(cli.home, 'codigos.csv');
  writeFileSync(
    path,
    ['destinatario,codigo,vigencia', `${numeroNuevo()},111,5m`, `${numeroNuevo()},222,`, `${numeroNuevo()},333,3`, `${numeroNuevo()},444,120`].join('\n') +
      '\n',
  );
  const r = await cli.run(['send', 'bulk', path, '--text', 'Tu código es {codigo}'], { env: env() });
  expect(r.exitCode, r.stderr).toBe(12);
  const rows = Object.fromEntries(ndjson(r.stdout).map((x) => [x.row, x]));
  expect(rows[3]).toMatchObject({ ok: false, msg_id: null });
  expect(String(rows[3]!.error)).toMatch(/vigencia "3"/);
  const vigencia = async (row: number) => (await s.core.store.getMensaje(rows[row]!.msg_id as string))?.vigencia_hasta;
  expect(await vigencia(1)).toBe(clock.now() + 300_000);
  expect(await vigencia(2)).toBeNull();
  expect(await vigencia(4)).toBe(clock.now() + 120_000);
});

it('--wait on a message that expires in the queue: its record, a line saying it expired, exit 7', async () => {
  const running = cli.run(['send', 'text', numeroNuevo(), 'codigo 9999', '--valid-for', '10s', '--wait'], { env: env() });
  // Accepted, then its validity passes while the line's hours are closed.
  const waiting = await until(
    async () => {
      const heads = await s.core.store.listQueue([L.celularId], 0, 500);
      return heads.find((m) => m.texto === 'codigo 9999');
    },
    { what: 'the queued code' },
  );
  clock.advance(10_000);
  await s.stepQueue();
  const r = await running;
  expect(r.exitCode, r.stderr).toBe(7);
  expect(fields(r.stdout)).toMatchObject({ msg_id: waiting.msg_id, estado: 'error' });
  expect(r.stderr).toContain(`msg_id ${waiting.msg_id} expired: not sent within its validity`);
  expect((await s.core.store.getMensaje(waiting.msg_id))?.error_clase).toBe('caducado');
});
