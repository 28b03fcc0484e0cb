import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { injectTransport } from '../helpers/inject-http.js';
import { numeroNuevo } from '../helpers/expect.js';
import { linkedLine, send, waitEstado, type Line } from '../server/send-helpers.js';
import { Cli, expectCleanExit, expectJsonOnly, fields } from './helpers.js';

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
