import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { Cli, type RunResult } from './helpers.js';

/**
 * `send --retry`, `--wait-window` and the Idempotency-Key, through the built
 * CLI against a scripted server: each request takes the next answer of the
 * script and is recorded with its headers. PASARELA_MAX_WAIT_MS=0 turns every
 * wait the CLI makes into none, so nothing here waits for real.
 */

type Answer = { status: number; body: unknown; headers?: Record<string, string> } | 'drop';
interface Seen {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: any;
}

let stub: Server;
let cli: Cli;
let script: Answer[] = [];
let seen: Seen[] = [];

const SENT = {
  ok: true,
  api_codigo: 0,
  msg_id: '6f1c2c56-5b8e-4c1e-9a43-0a9f4c1f2b11',
  modo: 'directo',
  estado: 'enviado',
  gateway_msg_id: '3EB0AA',
  saldo: 9,
};
const refusal = (status: number, api_codigo: number, error: string, extra: Record<string, unknown> = {}) => ({
  status,
  body: { ok: false, error, api_codigo, api_texto: 'X', api_descripcion: error, saldo: null, ...extra },
});

beforeAll(async () => {
  stub = createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => (raw += c));
    req.on('end', () => {
      seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: raw ? JSON.parse(raw) : undefined });
      const next = script.shift() ?? { status: 500, body: { ok: false, error: 'script exhausted' } };
      if (next === 'drop') {
        req.socket.destroy();
        return;
      }
      res.writeHead(next.status, { 'content-type': 'application/json', ...next.headers });
      res.end(JSON.stringify(next.body));
    });
  });
  await new Promise<void>((r) => stub.listen(0, '127.0.0.1', r));
  cli = new Cli(`http://127.0.0.1:${(stub.address() as AddressInfo).port}`);
});
afterAll(async () => {
  cli?.cleanup();
  await new Promise((r) => stub?.close(r));
});
beforeEach(() => {
  script = [];
  seen = [];
});

const send = (args: string[] = [], env: Record<string, string> = {}): Promise<RunResult> =>
  cli.run(['send', 'text', '5215598765432', 'hola', '--directo', ...args], {
    env: { PASARELA_KEY: 'WA_1_aaaaaaaaaaaaaaaaaaaa', PASARELA_MAX_WAIT_MS: '0', ...env },
  });

const keys = () => seen.map((s) => s.headers['idempotency-key']);

describe('Idempotency-Key', () => {
  it('every send carries one, new per invocation: pasarela-<uuid>', async () => {
    script = [
      { status: 200, body: SENT },
      { status: 200, body: SENT },
    ];
    expect((await send()).exitCode).toBe(0);
    expect((await send()).exitCode).toBe(0);
    const [a, b] = keys();
    expect(a).toMatch(/^pasarela-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    expect(b).toMatch(/^pasarela-/);
    expect(a).not.toBe(b);
  });

  it("--idempotency-key passes the script's own; a bad one is a usage error before any request", async () => {
    script = [{ status: 200, body: SENT }];
    expect((await send(['--idempotency-key', 'pedido-42 envio 1'])).exitCode).toBe(0);
    expect(keys()).toEqual(['pedido-42 envio 1']);
    for (const bad of ['', 'x'.repeat(256), 'clé', ' lead', 'trail ']) {
      const r = await send(['--idempotency-key', bad]);
      expect(r.exitCode, bad).toBe(2);
      expect(r.stderr).toContain('--idempotency-key');
    }
    expect(seen).toHaveLength(1);
  });
});

describe('--retry: only what can succeed later, always under the same key', () => {
  it('429 without retry_after, 503, a dropped connection and a 409/608 in flight are retried; the same key every time', async () => {
    script = [
      refusal(429, 304, 'celular 1 reached its cap of 1 sends per minute'),
      refusal(503, 901, 'the server is stopping', { retry_after: 5 }),
      'drop',
      refusal(409, 608, 'a request with this Idempotency-Key is still being answered', { retry_after: 1 }),
      { status: 200, body: SENT },
    ];
    const r = await send(['--retry', '4']);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stdout.split('\t')[0]).toBe(SENT.msg_id);
    expect(seen).toHaveLength(5);
    expect(new Set(keys()).size).toBe(1);
    expect(r.stderr).toContain('retry 1/4 in 1 s');
    expect(r.stderr).toContain('retry 2/4 in 5 s');
    expect(r.stderr).toContain('retry 4/4 in 1 s');
  });

  it('never a refusal: 502/704 exits 10, 402 exits 5, 403 exits 3, 409/607 and 400 exit 1, each after one request', async () => {
    const cases: Array<[Answer, number]> = [
      [refusal(502, 704, 'the recipient cannot receive messages'), 10],
      [refusal(402, 300, 'insufficient balance'), 5],
      [refusal(403, 201, 'a celular key may not do this'), 3],
      [refusal(409, 607, 'this Idempotency-Key was used for a different request'), 1],
      [refusal(400, 100, 'destinatario: "5215598765432" is not a valid number'), 1],
    ];
    for (const [answer, code] of cases) {
      seen = [];
      script = [answer, { status: 200, body: SENT }];
      const r = await send(['--retry', '3']);
      expect(r.exitCode, JSON.stringify(answer)).toBe(code);
      expect(seen, JSON.stringify(answer)).toHaveLength(1);
      expect(r.stderr).not.toMatch(/retry 1\/3/);
    }
  });

  it('a 403 outside the allowed hours (303) is not retried without --wait-window: exit 9', async () => {
    script = [refusal(403, 303, 'outside the allowed hours 08:00-20:00 (UTC); they open in 7200 s', { retry_after: 7200 }), { status: 200, body: SENT }];
    const r = await send(['--retry', '3']);
    expect(r.exitCode).toBe(9);
    expect(seen).toHaveLength(1);
  });

  it('gives up after N retries with the last error, its wait said once per line', async () => {
    const capped = () => refusal(429, 304, 'celular 1 reached its cap of 1 sends per minute; retry in 35 s', { retry_after: 35 });
    script = [capped(), capped(), capped()];
    const r = await send(['--retry', '2']);
    expect(r.exitCode).toBe(6);
    expect(seen).toHaveLength(3);
    const lines = r.stderr.trim().split('\n');
    expect(lines).toEqual([
      'celular 1 reached its cap of 1 sends per minute; retry 1/2 in 35 s',
      'celular 1 reached its cap of 1 sends per minute; retry 2/2 in 35 s',
      'error: celular 1 reached its cap of 1 sends per minute (retry in 35 s)',
    ]);
  });

  it('a lost connection (the CLI never got its answer) says how to try again without sending twice', async () => {
    script = ['drop'];
    const r = await send();
    expect(r.exitCode).toBe(8);
    expect(r.stderr).toContain(`--idempotency-key '${String(keys()[0])}'`);
  });

  it('a refused connection (nothing can have been sent) gives no same-key hint', async () => {
    const r = await cli.run(['send', 'text', '5215598765432', 'hola', '--directo', '--url', 'http://127.0.0.1:1'], {
      env: { PASARELA_KEY: 'WA_1_aaaaaaaaaaaaaaaaaaaa', PASARELA_MAX_WAIT_MS: '0' },
    });
    expect(r.exitCode).toBe(8);
    expect(r.stderr).toContain('ECONNREFUSED');
    expect(r.stderr).not.toContain('--idempotency-key');
  });

  it('a 5xx the server answered gives no same-key hint', async () => {
    script = [refusal(502, 700, 'the messaging network failed the send before it went out: x (msg_id m-1; nothing was sent; the charge was refunded)')];
    const r = await send();
    expect(r.exitCode).toBe(7);
    expect(r.stderr).not.toContain('--idempotency-key');
  });

  it('a direct send whose outcome is unknown (502/705) is never retried: exit 7, check historial before a new key', async () => {
    const id = '0b6c4c1e-9a43-4f2b-8e11-3e0aa1f2b611';
    script = [
      refusal(
        502,
        705,
        `the outcome of the send is unknown, it may have been delivered: Evolution 400: x (msg_id ${id} is recorded as error and the charge was refunded; ...)`,
      ),
      { status: 200, body: SENT },
    ];
    const r = await send(['--retry', '3']);
    expect(r.exitCode).toBe(7);
    expect(seen).toHaveLength(1);
    expect(r.stderr).toContain(`msg_id ${id} may have been delivered; check \`pasarela historial\``);
    expect(r.stderr).toContain('a new --idempotency-key sends a new message');
    expect(r.stderr).not.toContain(`--idempotency-key '`);
  });

  it('a replayed answer (Idempotent-Replayed: true) is final, a 5xx too: never retried', async () => {
    script = [
      { ...refusal(503, 901, 'the server is stopping'), headers: { 'idempotent-replayed': 'true' } },
      { status: 200, body: SENT },
    ];
    const r = await send(['--retry', '3']);
    expect(r.exitCode).toBe(7);
    expect(seen).toHaveLength(1);
    // The same 5xx not replayed is retried.
    seen = [];
    script = [refusal(503, 901, 'the server is stopping'), { status: 200, body: SENT }];
    expect((await send(['--retry', '3'])).exitCode).toBe(0);
    expect(seen).toHaveLength(2);
  });
});

describe('a queued send outside the allowed hours', () => {
  it('says on stderr when it will go; stdout keeps its columns', async () => {
    script = [{ status: 200, body: { ...SENT, modo: 'cola', estado: 'pendiente', gateway_msg_id: undefined, envio_desde: '2026-03-10T13:00:00.000Z' } }];
    const r = await cli.run(['send', 'text', '5215598765432', 'hola'], { env: { PASARELA_KEY: 'WA_1_aaaaaaaaaaaaaaaaaaaa', PASARELA_MAX_WAIT_MS: '0' } });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stdout).toBe(`${SENT.msg_id}\tcola\tpendiente\t\n`);
    expect(r.stderr).toBe("note: the line's allowed hours are closed; this queued message waits until they open (2026-03-10T13:00:00.000Z)\n");
  });
});

describe('--max-wait', () => {
  it('a wait past it is not made: the error stands at once, with why; waits within it are made', async () => {
    // A duplicate block of 298 s: an OTP must not go 5 minutes late.
    script = [refusal(429, 305, 'duplicate message: sending is blocked for this celular', { retry_after: 298 }), { status: 200, body: SENT }];
    const late = await send(['--retry', '2', '--max-wait', '30s']);
    expect(late.exitCode).toBe(6);
    expect(seen).toHaveLength(1);
    expect(late.stderr).toContain('not waiting 298 s (5 min) more: --max-wait 30 s allows less');
    // The budget is for all the waits together: 20 s, then 20 s more would pass 30 s.
    seen = [];
    script = [
      refusal(503, 901, 'the server is stopping', { retry_after: 20 }),
      refusal(503, 901, 'the server is stopping', { retry_after: 20 }),
      { status: 200, body: SENT },
    ];
    const twice = await send(['--retry', '3', '--max-wait', '30s']);
    expect(twice.exitCode).toBe(7);
    expect(seen).toHaveLength(2);
    expect(twice.stderr).toContain('--max-wait 30 s and 20 s waited already');
    // Within the budget it waits and sends; --wait-window counts too.
    seen = [];
    script = [refusal(503, 901, 'the server is stopping', { retry_after: 20 }), { status: 200, body: SENT }];
    expect((await send(['--retry', '3', '--max-wait', '30s'])).exitCode).toBe(0);
    seen = [];
    script = [refusal(403, 303, 'outside the allowed hours 08:00-20:00 (UTC)', { retry_after: 7200 }), { status: 200, body: SENT }];
    const window = await send(['--wait-window', '--max-wait', '1m']);
    expect(window.exitCode).toBe(9);
    expect(seen).toHaveLength(1);
    expect((await send(['--max-wait', 'soon'])).exitCode).toBe(2);
  });
});

describe('--wait-window', () => {
  it('sleeps retry_after once the window is closed, says so on stderr, then sends under the same key', async () => {
    script = [refusal(403, 303, 'outside the allowed hours 08:00-20:00 (UTC); they open in 7200 s', { retry_after: 7200 }), { status: 200, body: SENT }];
    const r = await send(['--wait-window']);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stdout.split('\t')[0]).toBe(SENT.msg_id);
    expect(r.stderr).toBe('outside the allowed hours 08:00-20:00 (UTC); waiting 7200 s (2 h 0 min) for the window to open (--wait-window)\n');
    expect(seen).toHaveLength(2);
    expect(new Set(keys()).size).toBe(1);
  });

  it('a window that stays closed ends with exit 9 after a few waits; other 403s are never waited for', async () => {
    const closed = () => refusal(403, 303, 'outside the allowed hours 08:00-20:00 (UTC)', { retry_after: 60 });
    script = Array.from({ length: 10 }, closed);
    const r = await send(['--wait-window']);
    expect(r.exitCode).toBe(9);
    expect(seen).toHaveLength(6);
    seen = [];
    script = [refusal(403, 301, 'celular 1 is desconectado; it must be activo (linked) to send'), { status: 200, body: SENT }];
    const notLinked = await send(['--wait-window', '--retry', '2']);
    expect(notLinked.exitCode).toBe(9);
    expect(seen).toHaveLength(1);
  });
});

describe('a client key without --celular', () => {
  const asClient = { PASARELA_KEY: 'WAC_1_aaaaaaaaaaaaaaaaaaaa' };
  const line = (id: number, numero: string) => ({ id, numero, estado: 'activo', nombre_interno: null });

  it('one line: sends from it (celular_id in the body), nothing said off a TTY', async () => {
    script = [
      { status: 200, body: { ok: true, total: 1, celulares: [line(7, '5215511112222')] } },
      { status: 200, body: SENT },
    ];
    const r = await send([], asClient);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stderr).toBe('');
    expect(seen.map((s) => `${s.method} ${s.url.split('?')[0]}`)).toEqual(['GET /api/celulares.php', 'POST /api/mensaje_enviar_texto.php']);
    expect(seen[1]!.body).toMatchObject({ celular_id: 7, destinatario: '5215598765432', mensaje: 'hola', directo: 1 });
  });

  it('several lines: exit 2 listing their ids and numbers, asking for --celular; none: exit 2 saying to create one', async () => {
    script = [{ status: 200, body: { ok: true, total: 2, celulares: [line(7, '5215511112222'), line(9, '5215533334444')] } }];
    const several = await send([], asClient);
    expect(several.exitCode).toBe(2);
    expect(several.stderr).toContain('--celular');
    expect(several.stderr).toMatch(/7\t5215511112222/);
    expect(several.stderr).toMatch(/9\t5215533334444/);
    script = [{ status: 200, body: { ok: true, total: 0, celulares: [] } }];
    const none = await send([], asClient);
    expect(none.exitCode).toBe(2);
    expect(none.stderr).toContain('celular create');
    expect(seen.filter((s) => s.method === 'POST')).toHaveLength(0);
  });

  it('--celular given: no lookup', async () => {
    script = [{ status: 200, body: SENT }];
    expect((await send(['--celular', '9'], asClient)).exitCode).toBe(0);
    expect(seen).toHaveLength(1);
    expect(seen[0]!.body.celular_id).toBe(9);
  });
});
