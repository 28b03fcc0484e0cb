import { writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, seedClient, startTestServer, type Seeded, type TestServer } from '../helpers/server.js';
import { Cli, expectJsonOnly } from './helpers.js';

/**
 * What the server would refuse with a pattern or a range is refused by the
 * CLI first: exit 2, the flag or argument named, no request made (the URL
 * below is a closed port, so a request would exit 8). Refusals that still
 * come from the server name the flag that sets the field.
 */
const NOWHERE = 'http://127.0.0.1:1';
let cli: Cli;
let s: TestServer;
let a: Seeded;

beforeAll(async () => {
  cli = new Cli(NOWHERE);
  s = await startTestServer();
  a = await seedClient(s);
});
afterAll(async () => {
  cli?.cleanup();
  await s?.stop();
});

const KEY = { PASARELA_KEY: 'WAC_1_aaaaaaaaaaaaaaaaaaaa', PASARELA_ADMIN_TOKEN: 'x'.repeat(32) };

describe('refused before any request: exit 2, the flag named', () => {
  const cases: Array<[string[], string]> = [
    [['celular', 'edit', '1', '--desde', '25:00'], "'--desde <HH:MM>' argument '25:00'"],
    [['celular', 'edit', '1', '--desde', '8h'], "'--desde <HH:MM>' argument '8h'"],
    [['celular', 'edit', '1', '--hasta', '12:60'], "'--hasta <HH:MM>'"],
    [['celular', 'edit', '1', '--nombre', 'n'.repeat(81)], "'--nombre <nombre>'"],
    [['celular', 'edit', '0', '--nombre', 'x'], 'id "0"'],
    [['celular', 'create', '12ab'], 'numero "12ab"'],
    [['celular', 'link', '123'], 'numero "123"'],
    [['send', 'text', 'abc', 'hola'], 'destinatario "abc"'],
    [['send', 'text', '5215598765432', 'x'.repeat(4097)], 'at most 4096'],
    [['send', 'image', '5215598765432', 'https://example.com/a.png', '--caption', 'c'.repeat(1025)], "'--caption <texto>'"],
    [['send', 'document', '5215598765432', 'https://example.com/a.pdf', '--filename', 'sin-extension'], "'--filename <nombre>'"],
    [['send', 'text', '5215598765432', 'hola', '--celular', '0'], "'--celular <id>'"],
    [['send', 'text', '5215598765432', 'hola', '--retry', '11'], "'--retry <n>'"],
    [['historial', '--desde', '2026-02-01', '--hasta', '2026-01-31'], '--desde 2026-02-01 is after --hasta 2026-01-31'],
    [['historial', '--destinatario', 'nadie'], "'--destinatario <numero>'"],
    [['historial', '--estado', 'leído'], "'--estado <estado>'"],
    [['webhook', 'set', 'ftp://example.com/hook'], 'url "ftp://example.com/hook"'],
    [['webhook', 'set', 'https://example.com/hook', '--secret', 'con espacio'], "'--secret <secret>'"],
    // The server's rule (core/events/webhook-secret.ts, D-89): 24 to 256 characters.
    [['webhook', 'set', 'https://example.com/hook', '--secret', 'x'], '1 character is too short: 24 to 256 printable ASCII characters, no spaces'],
    [['webhook', 'set', 'https://example.com/hook', '--secret', 'a'.repeat(23)], "'--secret <secret>'"],
    [['webhook', 'deliveries', '--limit', '501'], "'--limit <n>'"],
    [['admin', 'client', 'create', '--nombre', 'A', '--email', 'no-es-email'], "'--email <email>'"],
    [['admin', 'client', 'edit', '1', '--nombre', ''], "'--nombre <nombre>'"],
    [['admin', 'balance', 'add', '--cliente', '1', '--monto', '0'], "'--monto <n>'"],
    [['admin', 'celular', 'legacy-token', '1', 'corto'], 'token "corto"'],
    [['admin', 'gateway', 'add', 'mal nombre', '--gateway-url', 'http://gw.example', '--gateway-key', 'k'], 'nombre "mal nombre"'],
    [['admin', 'gateway', 'add', 'gw2', '--gateway-url', 'http://u:p@gw.example', '--gateway-key', 'k'], "'--gateway-url <url>'"],
    [['sim', 'fail', 'nadie'], 'numero "nadie"'],
    [['sim', 'receive', '1', '--from', 'x', '--text', 'hola'], "'--from <numero>'"],
  ];
  for (const [args, named] of cases) {
    it(args.join(' ').slice(0, 90), async () => {
      const r = await cli.run(args, { env: KEY });
      expect(r.stderr).toContain(named);
      expect(r.exitCode, r.stderr).toBe(2);
    });
  }

  it('a local file larger than its type allows, empty, or a document name without an extension', async () => {
    const big = join(cli.home, 'grande.webp');
    writeFileSync(big, Buffer.alloc(1024 * 1024 + 1, 1));
    const empty = join(cli.home, 'vacio.png');
    writeFileSync(empty, '');
    const bare = join(cli.home, 'factura');
    writeFileSync(bare, '%PDF-1.4\n');
    const [sticker, none, doc] = await Promise.all([
      cli.run(['send', 'sticker', '5215598765432', big], { env: KEY }),
      cli.run(['send', 'image', '5215598765432', empty], { env: KEY }),
      cli.run(['send', 'document', '5215598765432', bare], { env: KEY }),
    ]);
    expect([sticker.exitCode, none.exitCode, doc.exitCode]).toEqual([2, 2, 2]);
    expect(sticker.stderr).toContain('a sticker sent as a file may be at most 1 MB');
    expect(none.stderr).toContain('is empty');
    expect(doc.stderr).toContain('--filename');
  });
});

describe('accepted and normalised', () => {
  it('celular edit --desde 8:00 --hasta 9:30 is sent as 08:00 and 09:30', async () => {
    const r = await new Cli(s.url).run(['celular', 'edit', String(a.celularId), '--desde', '8:00', '--hasta', '9:30', '--json'], {
      env: { PASARELA_KEY: a.clientKey },
    });
    const b = expectJsonOnly(r);
    expect(b.celular).toMatchObject({ hora_inicio_permitido: '08:00', hora_fin_permitido: '09:30' });
    const shown = await api(s.url, 'GET', `/api/celular.php?id=${a.celularId}`, { key: a.clientKey });
    expect(shown.body.celular.hora_inicio_permitido).toBe('08:00');
  });
});

describe('refusals that still come from the server name the flag', () => {
  let stub: Server;
  let stubCli: Cli;
  let answer: unknown;
  beforeAll(async () => {
    stub = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        res.writeHead(400, { 'content-type': 'application/json' });
        res.end(JSON.stringify(answer));
      });
    });
    await new Promise<void>((r) => stub.listen(0, '127.0.0.1', r));
    stubCli = new Cli(`http://127.0.0.1:${(stub.address() as AddressInfo).port}`);
  });
  afterAll(async () => {
    stubCli?.cleanup();
    await new Promise((r) => stub.close(r));
  });
  const invalid = (error: string) => ({ ok: false, error, api_codigo: 100, api_texto: 'PARAMETROS_INVALIDOS', api_descripcion: error, saldo: null });

  it('a JSON-schema refusal of hora_inicio_permitido is told as --desde, without the schema text (exit 1)', async () => {
    answer = invalid('body: hora_inicio_permitido must match pattern "^([01][0-9]|2[0-3]):[0-5][0-9](:[0-5][0-9])?$"');
    const r = await stubCli.run(['celular', 'edit', '1', '--desde', '08:00'], { env: KEY });
    expect(r.exitCode).toBe(1);
    expect(r.stderr).toBe('error: --desde: is not in the expected format\n');
  });

  it("a missing field and a range, in the command's terms; --json still prints the server's body", async () => {
    answer = invalid("body: must have required property 'mensaje'");
    const missing = await stubCli.run(['send', 'text', '5215598765432', 'hola'], { env: { PASARELA_KEY: 'WA_1_aaaaaaaaaaaaaaaaaaaa' } });
    expect(missing.stderr).toBe('error: [texto] is required\n');
    answer = invalid('querystring: por_pagina must be <= 500');
    const range = await stubCli.run(['historial', '--por-pagina', '400', '--json'], { env: KEY });
    expect(range.stderr).toBe('error: --por-pagina: must be at most 500\n');
    expect(JSON.parse(range.stdout)).toEqual(answer);
    // A field no flag sets: the server's text as is.
    answer = invalid('body: something_else must be integer');
    expect((await stubCli.run(['celular', 'edit', '1', '--desde', '08:00'], { env: KEY })).stderr).toBe('error: body: something_else must be integer\n');
  });
});
