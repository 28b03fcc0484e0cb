import { afterAll, beforeAll, expect, it } from 'vitest';
import { ManualClock } from '../../src/core/time/clock.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { injectTransport } from '../helpers/inject-http.js';
import { numeroNuevo } from '../helpers/expect.js';
import { api } from '../helpers/server.js';
import { editCelular, linkedLine, mensaje, send, TEXT, uniqueText, type Line } from '../server/send-helpers.js';
import { Cli, expectCleanExit, expectJsonOnly, rows } from './helpers.js';

/** `pasarela cola`, `cola cancel`, `retry` and `webhook redeliver --failed` against a real server (in-process). */
let s: TestServer;
let cli: Cli;
let a: Line;

beforeAll(async () => {
  s = await startTestServer({ tz: 'UTC', clock: new ManualClock(Date.UTC(2026, 3, 1, 12)), allowPrivateUrls: true, queue: { gapMinMs: 0, gapMaxMs: 0 } });
  cli = new Cli(s.url, injectTransport(s.app));
  a = await linkedLine(s, { saldo: 20 });
  // Closed hours: what is queued stays queued.
  await editCelular(s, a, { hora_inicio_permitido: '00:00', hora_fin_permitido: '01:00' });
});
afterAll(async () => {
  cli?.cleanup();
  await s?.stop();
});

const queue = async (n: number): Promise<string[]> => {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) ids.push((await send(s, a, TEXT, { destinatario: numeroNuevo(), mensaje: uniqueText('cli') })).body.msg_id as string);
  return ids;
};

it('cola: a table row per message off a TTY, the answer with --json', async () => {
  const ids = await queue(2);
  const out = rows(expectCleanExit(await cli.run(['cola', '--celular', String(a.celularId)], { env: { PASARELA_KEY: a.clientKey } })));
  const body = out.filter((r) => ids.includes(r[0]!));
  expect(body).toHaveLength(2);
  expect(body[0]).toContain('fuera_de_horario');
  expect(body[1]).toContain('en_turno');
  const j = expectJsonOnly(await cli.run(['cola', '--json'], { env: { PASARELA_KEY: a.celularKey } }));
  expect(j).toMatchObject({ ok: true, total: 2 });
  expect(j.mensajes[0]).toMatchObject({ msg_id: ids[0], motivo: 'fuera_de_horario' });
  await cli.run(['cola', 'cancel', '--celular', String(a.celularId), '--all', '--yes'], { env: { PASARELA_KEY: a.clientKey } });
});

it('cola cancel: ids, then --all (needs --yes off a TTY); exit 12 when some were not cancelled', async () => {
  const ids = await queue(3);
  const one = await cli.run(['cola', 'cancel', ids[0]!], { env: { PASARELA_KEY: a.clientKey } });
  expect(expectCleanExit(one).trim()).toBe(`${ids[0]}\tcancelado`);
  const again = await cli.run(['cola', 'cancel', ids[0]!, ids[1]!], { env: { PASARELA_KEY: a.clientKey } });
  expect(again.exitCode, again.stderr).toBe(12);
  expect(again.stdout).toContain(`${ids[0]}\tno_pendiente`);
  expect((await mensaje(s, ids[1]!)).error_clase).toBe('cancelado');
  // --all off a TTY without --yes: a usage error, nothing cancelled.
  const noYes = await cli.run(['cola', 'cancel', '--celular', String(a.celularId), '--all'], { env: { PASARELA_KEY: a.clientKey } });
  expect(noYes.exitCode).toBe(2);
  expect((await mensaje(s, ids[2]!)).estado).toBe('pendiente');
  const all = expectJsonOnly(
    await cli.run(['cola', 'cancel', '--celular', String(a.celularId), '--all', '--yes', '--json'], { env: { PASARELA_KEY: a.clientKey } }),
  );
  expect(all).toMatchObject({ cancelados: 1, reembolso: 1 });
  // Usage: nothing named; --celular without --all.
  expect((await cli.run(['cola', 'cancel'], { env: { PASARELA_KEY: a.clientKey } })).exitCode).toBe(2);
  expect((await cli.run(['cola', 'cancel', '--celular', '3'], { env: { PASARELA_KEY: a.clientKey } })).exitCode).toBe(2);
});

it('retry: the new msg_id beside the old; a refused one exits with its own code', async () => {
  const [id] = await queue(1);
  await cli.run(['cola', 'cancel', id!], { env: { PASARELA_KEY: a.clientKey } });
  const out = expectCleanExit(await cli.run(['retry', id!], { env: { PASARELA_KEY: a.clientKey } }));
  const [old, nuevo] = out.trim().split('\t');
  expect(old).toBe(id);
  expect((await mensaje(s, nuevo!)).reintento_de).toBe(id);
  // A pending message cannot be retried: 409, exit 1.
  const refused = await cli.run(['retry', nuevo!], { env: { PASARELA_KEY: a.clientKey } });
  expect(refused.exitCode).toBe(1);
  expect(refused.stderr).toContain('only a failed message');
  const unknown = await cli.run(['retry', '01a21b3d-2a89-7ea1-83be-22d9f67523ae'], { env: { PASARELA_KEY: a.clientKey } });
  expect(unknown.exitCode).toBe(4);
  await cli.run(['cola', 'cancel', nuevo!], { env: { PASARELA_KEY: a.clientKey } });
});

it('webhook redeliver --failed: how many, and whether more remain', async () => {
  await api(s.url, 'POST', '/api/webhook.php', { key: a.clientKey, json: { url: 'http://127.0.0.1:9/hook' } });
  await api(s.url, 'POST', '/api/webhook_test.php', { key: a.clientKey });
  const db = (s.core.store as unknown as { db: { prepare(sql: string): { run(...a: unknown[]): unknown } } }).db;
  db.prepare("UPDATE eventos SET entrega = 'fallido', reclamo = NULL, reclamo_hasta = NULL WHERE cliente_id = ? AND entrega IS NOT NULL").run(a.clienteId);
  const j = expectJsonOnly(await cli.run(['webhook', 'redeliver', '--failed', '--json'], { env: { PASARELA_KEY: a.clientKey } }));
  expect(j).toMatchObject({ ok: true, quedan: false });
  expect(j.reprogramadas).toBeGreaterThan(0);
  expect((await cli.run(['webhook', 'redeliver'], { env: { PASARELA_KEY: a.clientKey } })).exitCode).toBe(2);
  expect((await cli.run(['webhook', 'redeliver', 'x', '--failed'], { env: { PASARELA_KEY: a.clientKey } })).exitCode).toBe(2);
});
