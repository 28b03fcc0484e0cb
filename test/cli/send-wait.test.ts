import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { admin, linkedLine, numeroNuevo, type Line } from '../server/send-helpers.js';
import { Cli, fields } from './helpers.js';

/**
 * `send ... --wait [estado] --timeout`: after acceptance the CLI follows the
 * event stream until the message gets there (its record, exit 0), ends in
 * error (exit 10 refused for good), or the timeout passes (exit 11, the
 * msg_id printed all the same).
 */
let s: TestServer;
let cli: Cli;
let L: Line;

beforeAll(async () => {
  s = await startTestServer({ queue: { gapMinMs: 0, gapMaxMs: 0 }, simDeliveryMs: 20, simReadMs: 40, streamTiming: { pollMs: 50 } });
  cli = new Cli(s.url);
  L = await linkedLine(s, { saldo: 50 });
});
afterAll(async () => {
  cli?.cleanup();
  await s?.stop();
});

it('queued and direct: waits for leido and prints the record; --json prints the answer of GET /api/mensaje.php', async () => {
  const r = await cli.run(['send', 'text', numeroNuevo(), 'espera a leido', '--wait', 'leido'], { env: { PASARELA_KEY: L.celularKey } });
  expect(r.exitCode, r.stderr).toBe(0);
  const f = fields(r.stdout);
  expect(f.estado).toBe('leido');
  expect(f.leido_at).toMatch(/^\d{4}-\d{2}-\d{2}T/);
  expect((await s.core.store.getMensaje(f.msg_id!))?.estado).toBe('leido');
  const j = await cli.run(['send', 'text', numeroNuevo(), 'directo', '--directo', '--wait', '--json'], { env: { PASARELA_KEY: L.celularKey } });
  expect(j.exitCode, j.stderr).toBe(0);
  const body = JSON.parse(j.stdout);
  expect(body.ok).toBe(true);
  expect(['entregado', 'leido']).toContain(body.mensaje.estado);
  expect(body.mensaje.modo).toBe('directo');
});

it('a queued message the network refuses for good: its record and exit 10', async () => {
  const dead = numeroNuevo();
  expect((await admin(s, 'POST', '/admin/sim/fail', { numero: dead, motivo: 'not on the network' })).status).toBe(200);
  const r = await cli.run(['send', 'text', dead, 'nunca llega', '--wait'], { env: { PASARELA_KEY: L.celularKey } });
  expect(r.exitCode, r.stderr).toBe(10);
  expect(fields(r.stdout).estado).toBe('error');
  expect(r.stderr).toMatch(/ended in error \(rechazado\)/);
  // Sent directly, the refusal is the send's own answer (502/704): its record is printed all the same.
  const direct = await cli.run(['send', 'text', dead, 'nunca llega', '--directo', '--wait'], { env: { PASARELA_KEY: L.celularKey } });
  expect(direct.exitCode, direct.stderr).toBe(10);
  expect(fields(direct.stdout)).toMatchObject({ estado: 'error', tipo: 'texto (directo)' });
});

it('the timeout: exit 11 with the msg_id on stdout, the message left where it is', async () => {
  const slow = await startTestServer({ queue: { gapMinMs: 0, gapMaxMs: 0 }, simDeliveryMs: 600_000, streamTiming: { pollMs: 50 } });
  const slowCli = new Cli(slow.url);
  try {
    const line = await linkedLine(slow);
    const r = await slowCli.run(['send', 'text', numeroNuevo(), 'sin acuse', '--directo', '--wait', 'entregado', '--timeout', '1'], {
      env: { PASARELA_KEY: line.celularKey },
    });
    expect(r.exitCode, r.stderr).toBe(11);
    const msgId = r.stdout.split('\t')[0]!;
    expect((await slow.core.store.getMensaje(msgId))?.estado).toBe('enviado');
    expect(r.stderr).toContain(`msg_id ${msgId} is enviado, not entregado, after 1 s (--timeout)`);
    // A bad state or timeout is a usage error before anything is sent.
    expect((await slowCli.run(['send', 'text', numeroNuevo(), 'x', '--wait', 'recibido'], { env: { PASARELA_KEY: line.celularKey } })).exitCode).toBe(2);
    expect(
      (await slowCli.run(['send', 'text', numeroNuevo(), 'x', '--wait', '--timeout', 'pronto'], { env: { PASARELA_KEY: line.celularKey } })).exitCode,
    ).toBe(2);
  } finally {
    slowCli.cleanup();
    await slow.stop();
  }
});
