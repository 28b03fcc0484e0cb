import { afterAll, beforeAll, expect, it } from 'vitest';
import { main } from '../../src/cli/main.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { injectTransport } from '../helpers/inject-http.js';
import { numeroNuevo } from '../helpers/expect.js';
import { admin, linkedLine, send, waitEstado, type Line } from '../server/send-helpers.js';
import { Cli, expectCleanExit, expectJsonOnly, fakeIO, fields } from './helpers.js';

/** `pasarela mensaje MSG_ID`: one message's record, as fields or JSON; exit 4 for an id the key cannot see. */
let s: TestServer;
let cli: Cli;
let a: Line;
let other: Line;

beforeAll(async () => {
  s = await startTestServer({ queue: { gapMinMs: 0, gapMaxMs: 0 }, simDeliveryMs: 5, simReadMs: 10 });
  cli = new Cli(s.url, injectTransport(s.app));
  a = await linkedLine(s);
  other = await linkedLine(s);
});
afterAll(async () => {
  cli?.cleanup();
  await s?.stop();
});

it('prints the record as fields off a TTY, and the answer with --json', async () => {
  const r = await send(s, a, '/api/mensaje_enviar_texto.php', { destinatario: numeroNuevo(), mensaje: 'hola cli' });
  const id = r.body.msg_id as string;
  await waitEstado(s, id, 'leido');
  const f = fields(expectCleanExit(await cli.run(['mensaje', id], { env: { PASARELA_KEY: a.celularKey } })));
  expect(f).toMatchObject({ msg_id: id, estado: 'leido', celular: String(a.celularId), tipo: 'texto (cola)', texto: 'hola cli' });
  expect(f.leido_at).toMatch(/^\d{4}-\d{2}-\d{2}T/);
  const j = expectJsonOnly(await cli.run(['mensaje', id, '--json'], { env: { PASARELA_KEY: a.clientKey } }));
  expect(j.ok).toBe(true);
  expect(j.mensaje).toMatchObject({ msg_id: id, estado: 'leido', error: null });
});

it("exit 4 for another client's message and for an unknown id, the reason on stderr", async () => {
  const r = await send(s, a, '/api/mensaje_enviar_texto.php', { destinatario: numeroNuevo(), mensaje: 'ajeno' });
  for (const [key, id] of [
    [other.clientKey, r.body.msg_id as string],
    [a.clientKey, '01a21b3d-2a89-7ea1-83be-22d9f67523ae'],
  ]) {
    const out = await cli.run(['mensaje', id!], { env: { PASARELA_KEY: key } });
    expect(out.exitCode, out.stderr).toBe(4);
    expect(out.stdout).toBe('');
    expect(out.stderr).toContain('not found');
  }
  expect((await cli.run(['mensaje'], { env: { PASARELA_KEY: a.clientKey } })).exitCode).toBe(2);
});

it("--timeline on a terminal: the record, then a table of its story (time with its zone, step, node, detail); --json is the server's answer", async () => {
  const r = await send(s, a, '/api/mensaje_enviar_texto.php', { destinatario: numeroNuevo(), mensaje: 'historia cli' });
  const id = r.body.msg_id as string;
  await waitEstado(s, id, 'leido');
  const fake = fakeIO();
  const code = await main(['mensaje', id, '--timeline'], { ...fake.io, stdoutIsTTY: true, columns: 160 }, cli.env({ PASARELA_KEY: a.clientKey }), {
    http: injectTransport(s.app),
  });
  expect(code, fake.stderr()).toBe(0);
  const out = fake.stdout().replace(/\x1b\[[0-9;]*m/g, '');
  expect(out).toMatch(new RegExp(`msg_id +${id}`));
  const rows = out.split('\n').filter((l) => /^│ \d{4}-/.test(l));
  const step = (l: string) => l.split('│')[2]!.trim();
  expect(rows.map(step)).toEqual(['aceptado', 'cobro', 'encolado', 'reclamado', 'enviado', 'entregado', 'leido']);
  expect(out).toMatch(/│ TIME +│ STEP +│ NODE +│ DETAIL +│/);
  expect(rows[0]).toMatch(/^│ \d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} UTC │ aceptado/);
  // The claim and the send name the node (its first 8 characters); the send its gateway id.
  const node = rows[3]!.split('│')[3]!.trim();
  expect(node).toMatch(/^[0-9a-f-]{8}$/);
  expect(rows[4]!.split('│')[3]!.trim()).toBe(node);
  expect(rows[4]).toContain('gateway id ');

  const j = expectJsonOnly(await cli.run(['mensaje', id, '--timeline', '--json'], { env: { PASARELA_KEY: a.celularKey } }));
  expect(j.mensaje).toMatchObject({ msg_id: id, estado: 'leido' });
  expect(j.timeline.map((t: { paso: string }) => t.paso)).toEqual(['aceptado', 'cobro', 'encolado', 'reclamado', 'enviado', 'entregado', 'leido']);
  expect(j.timeline[3].nodo.startsWith(node)).toBe(true);
  expect(j.timeline_omitidos).toBe(0);
});

it('--timeline of a refused send shows the refund; exit 4 for what the key cannot see, as without it', async () => {
  const dead = numeroNuevo();
  await admin(s, 'POST', '/admin/sim/fail', { numero: dead, motivo: 'not on the network' });
  const r = await send(s, a, '/api/mensaje_enviar_texto.php', { destinatario: dead, mensaje: 'nunca cli' });
  const id = r.body.msg_id as string;
  await waitEstado(s, id, 'error');
  const out = expectCleanExit(await cli.run(['mensaje', id, '--timeline'], { env: { PASARELA_KEY: a.clientKey } }));
  // Off a terminal: the fields, a blank line, then one tab-separated line per step.
  const steps = out
    .split('\n\n')[1]!
    .trim()
    .split('\n')
    .map((l) => l.split('\t'));
  expect(steps.map((c) => c[1])).toEqual(['aceptado', 'cobro', 'encolado', 'reclamado', 'error', 'reembolso']);
  expect(steps[5]![3]).toMatch(/^\+1 on the (celular|global) balance, now \d+$/);
  expect(steps[4]![3]).toContain('rechazado: ');
  const foreign = await cli.run(['mensaje', id, '--timeline'], { env: { PASARELA_KEY: other.clientKey } });
  expect(foreign.exitCode, foreign.stderr).toBe(4);
  expect(foreign.stdout).toBe('');
});
