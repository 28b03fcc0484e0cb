import { PassThrough } from 'node:stream';
import Fastify from 'fastify';
import { afterAll, describe, expect, it, onTestFinished } from 'vitest';
import type { HttpTransport } from '../../src/cli/client.js';
import { injectTransport } from '../helpers/inject-http.js';
import { Cli, expectJsonOnly } from './helpers.js';

/**
 * main(argv, io, env, { http }): every command reaches the service through
 * the transport it is handed (src/cli/client.ts), so command tests need no
 * server process and no port. The URL names a host that does not resolve:
 * only the transport can answer.
 */
const URL_NOWHERE = 'http://pasarela.invalid:9';

describe('an injected transport', () => {
  const seen: Array<{ method: string; url: string; headers: Record<string, unknown>; body: unknown }> = [];
  const app = Fastify();
  app.post('/api/celular_crear.php', async (req) => {
    seen.push({ method: req.method, url: req.url, headers: req.headers, body: req.body });
    return {
      ok: true,
      celular_id: 7,
      celular: { id: 7, numero: '5215512345678', estado: 'desconectado' },
      api_key: 'WA_7_k',
      gateway_token: 't',
    };
  });
  app.get('/api/saldo.php', async (req, reply) => {
    seen.push({ method: req.method, url: req.url, headers: req.headers, body: undefined });
    return reply.code(402).send({ ok: false, error: 'saldo insuficiente', api_codigo: 300 });
  });
  afterAll(() => app.close());
  const cli = new Cli(URL_NOWHERE, injectTransport(app));
  afterAll(() => cli.cleanup());

  it('carries method, path, query, key and JSON body to the app, and the answer back to the command', async () => {
    const created = expectJsonOnly(await cli.run(['celular', 'create', '5215512345678', '--nombre', 'caja', '--json'], { env: { PASARELA_KEY: 'WAC_1_k' } }));
    expect(created).toMatchObject({ celular_id: 7, api_key: 'WA_7_k' });
    const balance = await cli.run(['saldo', '--celular', '7'], { env: { PASARELA_KEY: 'WAC_1_k' } });
    expect(balance).toMatchObject({ exitCode: 5, stderr: 'error: saldo insuficiente\n' });
    expect(seen).toEqual([
      {
        method: 'POST',
        url: '/api/celular_crear.php',
        headers: expect.objectContaining({ authorization: 'Bearer WAC_1_k', 'content-type': 'application/json', 'user-agent': 'pasarela-cli' }),
        body: { numero: '5215512345678', nombre_interno: 'caja' },
      },
      { method: 'GET', url: '/api/saldo.php?celular_id=7', headers: expect.objectContaining({ authorization: 'Bearer WAC_1_k' }), body: undefined },
    ]);
  });

  it('a transport that gets no answer is "cannot reach" (exit 8); an answer cut midway is "lost the connection" (exit 8)', async () => {
    const refused: HttpTransport = async () => {
      throw Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
    };
    const cut: HttpTransport = async () => {
      const body = new PassThrough();
      body.write('{"ok": tr');
      setImmediate(() => body.destroy(Object.assign(new Error('other side closed'), { code: 'UND_ERR_SOCKET' })));
      return { statusCode: 200, headers: {}, body };
    };
    const key = { env: { PASARELA_KEY: 'WAC_1_k' } };
    const [c1, c2] = [new Cli(URL_NOWHERE, refused), new Cli(URL_NOWHERE, cut)];
    onTestFinished(() => [c1, c2].forEach((c) => c.cleanup()));
    const a = await c1.run(['info'], key);
    expect(a).toMatchObject({ exitCode: 8, stderr: expect.stringContaining(`cannot reach the server at ${URL_NOWHERE} (ECONNREFUSED)`) });
    const b = await c2.run(['info'], key);
    expect(b).toMatchObject({ exitCode: 8, stderr: expect.stringContaining('lost the connection to the server') });
  });
});
