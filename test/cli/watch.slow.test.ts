import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterAll, describe, expect, it } from 'vitest';
import { Ctx } from '../../src/cli/context.js';
import { ApiError, CliError } from '../../src/cli/exit-codes.js';
import { EXIT } from '../../src/shared/exit-codes.js';
import { makeTerm } from '../../src/cli/io.js';
import { showQr, type QrBody } from '../../src/cli/qr-display.js';
import { Watch, type WatchClock } from '../../src/cli/watch.js';
import { crash, killAllServeChildren, startServeChild, stop, type ServeChild } from '../helpers/serve-child.js';
import { api } from '../helpers/server.js';
import { Cli, tempDir, until } from './helpers.js';

/**
 * Long watches (`celular qr`, `celular link --wait`) ride out a server
 * restart: a real `serve` child is killed while the CLI watches and started
 * again on the same port and data directory; the line is then scanned and the
 * watch ends with success. A watch whose deadline passes exits 11.
 */
const clis: Cli[] = [];
const bases: string[] = [];
afterAll(() => {
  killAllServeChildren();
  for (const c of clis) c.cleanup();
  for (const b of bases) rmSync(b, { recursive: true, force: true });
});

interface Installation {
  dataDir: string;
  server: ServeChild;
  port: string;
  token: string;
  clientKey: string;
  cli: Cli;
}

let seq = 0;
async function install(): Promise<Installation> {
  const base = tempDir('pasarela-watch-');
  bases.push(base);
  const dataDir = join(base, 'data');
  mkdirSync(dataDir);
  const server = await startServeChild(dataDir, []);
  const token = readFileSync(join(dataDir, 'admin-token'), 'utf8').trim();
  seq += 1;
  const c = await api(server.url, 'POST', '/admin/clientes', { key: token, json: { nombre: `Watch ${seq}`, email: `w${seq}@example.com`, saldo: 0 } });
  expect(c.status, c.text).toBe(201);
  const cli = new Cli(server.url);
  clis.push(cli);
  return { dataDir, server, port: new URL(server.url).port, token, clientKey: c.body.api_key, cli };
}

async function newCelular(i: Installation): Promise<number> {
  const numero = `5215566${String(Date.now()).slice(-6)}`;
  const r = await api(i.server.url, 'POST', '/api/celular_crear.php', { key: i.clientKey, json: { numero } });
  expect(r.status, r.text).toBe(201);
  return r.body.celular_id;
}

/** Everything a stream has written so far, kept as it comes. */
function collect(stream: NodeJS.ReadableStream | null | undefined): () => string {
  let text = '';
  stream?.on('data', (c: Buffer) => {
    text += String(c);
  });
  return () => text;
}

describe('celular qr --wait across a server restart', () => {
  it('says once that the server is unreachable, then reconnected, and ends with success once scanned', async () => {
    const i = await install();
    const id = await newCelular(i);
    const proc = i.cli.spawn(['celular', 'qr', String(id), '--wait', '--json', '--interval', '200', '--timeout', '90'], {
      env: { PASARELA_KEY: i.clientKey },
      timeoutMs: 100_000,
    });
    const out = collect(proc.stdout);
    const err = collect(proc.stderr);
    await until(async () => out().includes('\n'), 15_000);
    expect(JSON.parse(out().split('\n')[0]!)).toMatchObject({ celular_id: id, status: 'need_scan' });

    await crash(i.server);
    await until(async () => err().includes('server unreachable, retrying…'), 15_000);
    expect(proc.exitCode).toBeNull();
    i.server = await startServeChild(i.dataDir, ['--port', i.port]);
    await until(async () => err().includes('reconnected'), 20_000);

    // The phone scans the QR the restarted server shows (409 until it shows one).
    await until(async () => (await i.cli.run(['sim', 'scan', String(id), '--admin-token', i.token])).exitCode === 0, 20_000, 200);
    const r = await proc;
    expect(r.exitCode, String(r.stderr)).toBe(0);
    const docs = String(r.stdout)
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l) as { status: string });
    expect(docs.at(-1)).toMatchObject({ celular_id: id, status: 'connected' });
    const stderr = String(r.stderr);
    expect(stderr.split('server unreachable, retrying…').length - 1).toBe(1);
    expect(stderr).toContain('reconnected');
    await stop(i.server);
    // Its own waits bound it (two server starts, a restart and the watch on a loaded machine).
  }, 120_000);
});

describe('a watch whose deadline passes exits 11', () => {
  it('celular link --pairing-code --wait while the server is down: exit 11 naming the timeout and the failure', async () => {
    const i = await install();
    const numero = `5215588${String(Date.now()).slice(-6)}`;
    const proc = i.cli.spawn(['celular', 'link', numero, '--pairing-code', '--wait', '--interval', '200', '--timeout', '3'], {
      env: { PASARELA_KEY: i.clientKey },
    });
    const out = collect(proc.stdout);
    await until(async () => /\n[A-Z0-9]{4}-[A-Z0-9]{4}\n/.test(out()), 15_000);
    await crash(i.server);
    const r = await proc;
    expect(r.exitCode).toBe(EXIT.TIMEOUT);
    expect(r.exitCode).toBe(11);
    expect(String(r.stderr)).toContain('server unreachable, retrying…');
    expect(String(r.stderr)).toMatch(/error: celular \d+ was not linked within 3 s \(the server was still unreachable: cannot reach the server/);
  });
});

describe('Watch (an injected clock)', () => {
  const ctxWith = () => {
    const err = new PassThrough();
    let text = '';
    err.on('data', (c: Buffer) => (text += String(c)));
    const io = { stdout: new PassThrough(), stderr: err, stdin: new PassThrough(), stdoutIsTTY: false, stderrIsTTY: false, stdinIsTTY: false };
    return { ctx: new Ctx(makeTerm(io, {}), {}, {}), stderr: () => text };
  };
  const clockAt = (start: number): WatchClock & { pauses: number[] } => {
    let now = start;
    const pauses: number[] = [];
    return {
      pauses,
      now: () => now,
      sleep: async (ms) => {
        pauses.push(ms);
        now += ms;
      },
    };
  };
  const down = new CliError('cannot reach the server at http://x (ECONNREFUSED)', EXIT.UNREACHABLE);

  it('backs off 0.25 s doubling up to 5 s, says each change once, and answers when the server is back', async () => {
    const { ctx, stderr } = ctxWith();
    const clock = clockAt(0);
    const w = new Watch(ctx, { deadline: 60_000, timedOut: () => new CliError('late', EXIT.TIMEOUT), clock });
    let calls = 0;
    const v = await w.call(async () => {
      calls += 1;
      if (calls <= 8) throw down;
      return 'ok';
    });
    expect(v).toBe('ok');
    expect(clock.pauses).toEqual([250, 500, 1000, 2000, 4000, 5000, 5000, 5000]);
    await new Promise((r) => setImmediate(r));
    expect(stderr()).toBe('server unreachable, retrying… (cannot reach the server at http://x (ECONNREFUSED))\nreconnected\n');
  });

  it('past the deadline: the timeout error with the last failure; other errors at once', async () => {
    const { ctx } = ctxWith();
    const w = new Watch(ctx, { deadline: 3000, timedOut: (cause) => new CliError(`late: ${cause}`, EXIT.TIMEOUT), clock: clockAt(0) });
    await expect(w.call(async () => Promise.reject(down))).rejects.toMatchObject({ exitCode: 11, message: `late: ${down.message}` });
    const w2 = new Watch(ctx, { deadline: 3000, timedOut: () => new CliError('late', EXIT.TIMEOUT), clock: clockAt(0) });
    await expect(w2.call(async () => Promise.reject(new CliError('invalid credential', EXIT.AUTH)))).rejects.toMatchObject({ exitCode: 3 });
  });

  it('a 503 (APAGANDO) is ridden out; any other 5xx of the server ends the watch at once with exit 7', async () => {
    const apiError = (status: number, codigo: number) =>
      new ApiError(`server said ${status}`, EXIT.SERVER, {}, status, codigo, undefined, `server said ${status}`);
    const { ctx, stderr } = ctxWith();
    const w = new Watch(ctx, { deadline: 60_000, timedOut: () => new CliError('late', EXIT.TIMEOUT), clock: clockAt(0) });
    let calls = 0;
    expect(
      await w.call(async () => {
        calls += 1;
        if (calls <= 2) throw apiError(503, 901);
        return 'ok';
      }),
    ).toBe('ok');
    expect(calls).toBe(3);
    for (const [status, codigo] of [
      [500, 900],
      [502, 802],
    ]) {
      let n = 0;
      const w2 = new Watch(ctx, { deadline: 60_000, timedOut: () => new CliError('late', EXIT.TIMEOUT), clock: clockAt(0) });
      await expect(
        w2.call(async () => {
          n += 1;
          throw apiError(status!, codigo!);
        }),
      ).rejects.toMatchObject({ exitCode: 7, status });
      expect(n).toBe(1);
    }
    await new Promise((r) => setImmediate(r));
    expect(stderr()).toMatch(/^server error, retrying… \(server said 503\)\nreconnected\n$/);
  });

  it('on a terminal the QR redraw erases the notices printed below the view too', async () => {
    // stdout and stderr are the same screen, as on a terminal.
    let screen = '';
    const tty = new PassThrough();
    tty.on('data', (c: Buffer) => (screen += String(c)));
    const io = { stdout: tty, stderr: tty, stdin: new PassThrough(), stdoutIsTTY: true, stderrIsTTY: true, stdinIsTTY: false, columns: 200, rows: 200 };
    const ctx = new Ctx(makeTerm(io, { NO_COLOR: '1' }), {}, {});
    const w = new Watch(ctx, { deadline: Number.MAX_SAFE_INTEGER, timedOut: () => new CliError('late', EXIT.TIMEOUT), clock: clockAt(0) });
    const qr = (code: string, status = 'need_scan'): QrBody => ({ celular_id: 7, gateway_instancia: 'c7', qr: code, status });
    const answers: Array<QrBody | CliError> = [down, down, qr('second'), qr('', 'connected')];
    const fetch = () =>
      w.call(async () => {
        const a = answers.shift()!;
        if (a instanceof CliError) throw a;
        return a;
      });
    await showQr(ctx, qr('first'), { fetch, wait: true, intervalMs: 0, timeoutMs: 60_000, sleep: async () => undefined, notices: w });
    await new Promise((r) => setImmediate(r));
    const CURSOR_UP = /\r\u001b\[(\d+)A\u001b\[J/g;
    const ups = [...screen.matchAll(CURSOR_UP)].map((m) => Number(m[1]));
    const parts = screen.split(CURSOR_UP).filter((_, i) => i % 2 === 0);
    // The first view, then the two notices; the redraw goes up over all of it.
    expect(parts[0]).toContain('server unreachable, retrying…');
    expect(parts[0]).toContain('reconnected\n');
    expect(ups[0]).toBe(parts[0]!.split('\n').length - 1);
    expect(ups[1]).toBe(parts[1]!.split('\n').length - 1);
    expect(parts.at(-1)).toMatch(/✓ celular 7 is connected/);
  });
});
