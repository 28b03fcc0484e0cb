import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { injectTransport } from '../helpers/inject-http.js';
import { linkedLine, type Line } from '../server/send-helpers.js';
import { siblingLine } from '../server/grupos-helpers.js';
import { Cli, expectJsonOnly, ndjson } from './helpers.js';

/** `pasarela grupo ...`, `send --grupo` and a `send bulk` column `grupo`, in process against a real server. */
let s: TestServer;
let cli: Cli;
let a: Line;
let b: Line;
let env: Record<string, string>;

beforeAll(async () => {
  s = await startTestServer({ queue: { gapMinMs: 0, gapMaxMs: 0 } });
  a = await linkedLine(s, { saldo: 100 });
  b = await siblingLine(s, a);
  env = { PASARELA_KEY: a.clientKey };
  cli = new Cli(s.url, injectTransport(s.app));
});
afterAll(async () => {
  cli?.cleanup();
  await s?.stop();
});

describe('grupo', () => {
  it('creates, lists, edits and deletes a pool; its refusals exit with their codes', async () => {
    const c = expectJsonOnly(
      await cli.run(['grupo', 'crear', 'otp', '--celulares', `${a.celularId},${b.celularId}`, '--conmutacion', '2m', '--json'], { env }),
    );
    expect(c.grupo).toMatchObject({ nombre: 'otp', celulares: [a.celularId, b.celularId], conmutacion_s: 120 });
    const list = await cli.run(['grupo', 'list'], { env });
    expect(list.exitCode, list.stderr).toBe(0);
    expect(list.stdout.trim().split('\t')).toEqual([String(c.grupo.id), 'otp', `${a.celularId},${b.celularId}`, '120 s']);

    const dup = await cli.run(['grupo', 'crear', 'otp', '--celulares', String(a.celularId)], { env });
    expect(dup.exitCode).not.toBe(0);
    expect(dup.stderr).toMatch(/already exists/);
    const bad = await cli.run(['grupo', 'crear', 'x', '--celulares', 'uno'], { env });
    expect(bad.exitCode).toBe(2);
    const empty = await cli.run(['grupo', 'crear', '', '--celulares', String(a.celularId)], { env });
    expect(empty.exitCode).toBe(2);
    const foreign = await cli.run(['grupo', 'crear', 'ajeno', '--celulares', '999999', '--json'], { env });
    expect(foreign.exitCode).not.toBe(0);
    expect(JSON.parse(foreign.stdout)).toMatchObject({ ok: false, api_codigo: 600 });

    const e = expectJsonOnly(await cli.run(['grupo', 'editar', 'otp', '--nombre', 'codigos', '--conmutacion', 'none', '--json'], { env }));
    expect(e.grupo).toMatchObject({ nombre: 'codigos', conmutacion_s: null });
    // English aliases, as celular's commands: create, edit, delete.
    const nothing = await cli.run(['grupo', 'edit', 'codigos'], { env });
    expect(nothing.exitCode).toBe(2);
    const gone = await cli.run(['grupo', 'eliminar', 'nope', '--yes'], { env });
    expect(gone.exitCode).not.toBe(0);
    expect(gone.stderr).toMatch(/not found/);
    const d = await cli.run(['grupo', 'delete', 'codigos', '--yes'], { env });
    expect(d.exitCode, d.stderr).toBe(0);
    expect((await cli.run(['grupo', 'list'], { env })).stdout.trim()).toBe('');
  });

  it('send --grupo and a send bulk column grupo go through the pool, a client of several lines naming no line', async () => {
    const made = await cli.run(['grupo', 'create', 'envios', '--celulares', `${a.celularId},${b.celularId}`], { env });
    expect(made.exitCode, made.stderr).toBe(0);
    expect(made.stderr).toMatch(/^Created pool \d+ \(envios\)\./m);
    const one = expectJsonOnly(await cli.run(['send', 'text', '5215598765432', 'hola', '--grupo', 'envios', '--directo', '--json'], { env }));
    const line = (await s.core.store.getMensaje(one.msg_id))?.celular_id;
    expect([a.celularId, b.celularId]).toContain(line);
    const again = expectJsonOnly(await cli.run(['send', 'text', '5215598765432', 'otra', '--grupo', 'envios', '--json'], { env }));
    expect((await s.core.store.getMensaje(again.msg_id))?.celular_id).toBe(line);
    const both = await cli.run(['send', 'text', '5215598765432', 'x', '--grupo', 'envios', '--celular', String(a.celularId)], { env });
    expect(both.exitCode).toBe(2);

    const csv = join(cli.home, 'pool.csv');
    writeFileSync(csv, 'destinatario,nombre,grupo\n5215511111111,Ana,envios\n5215598765432,Luis,envios\n');
    const r = await cli.run(['send', 'bulk', csv, '--text', 'Hola {{nombre}}'], { env });
    expect(r.exitCode, r.stderr).toBe(0);
    const rows = ndjson(r.stdout);
    expect(rows.map((x) => x.ok)).toEqual([true, true]);
    expect((await s.core.store.getMensaje(rows[1]!.msg_id as string))?.celular_id).toBe(line);
  });
});
