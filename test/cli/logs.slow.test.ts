import { readFileSync } from 'node:fs';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { api } from '../helpers/server.js';
import { Cli, cliCommandLine, HAS_SCRIPT, until, waitForText } from './helpers.js';

/**
 * `pasarela serve`'s log as people and machines read it (docs/logs.md), on
 * the real binary: JSON lines off a terminal, readable lines on one (or with
 * --log-format pretty / PASARELA_LOG_FORMAT), the request id of a response in
 * its log line, redaction in both formats, the events of a line linked and
 * logged out, and start failures as one line without a stack trace.
 */
const cli = new Cli();
afterAll(() => cli.cleanup());

const listening = /listening on (http:\/\/\S+)/;
const SGR_ALL = /\u001b\[[0-9;]*m/g;
/** A pretty line: time, level, then something. */
const PRETTY_LINE = /^\d\d:\d\d:\d\d\.\d{3} (TRACE|DEBUG|INFO |WARN |ERROR|FATAL) \S/;
const STACK_FRAME = /^\s+at /m;

let dirs = 0;
const dataDir = () => join(cli.home, `data-${++dirs}`);

/**
 * Traffic every run makes against a fresh server: a request with the
 * operator token in its query string (refused), one with a chosen request
 * id, and a line linked then logged out on the phone. Returns what to look for.
 */
async function traffic(url: string, dir: string): Promise<{ token: string; reqId: string; celularId: number; clienteId: number }> {
  const token = readFileSync(join(dir, 'admin-token'), 'utf8').trim();
  const refused = await api(url, 'GET', `/api/info.php?key=${encodeURIComponent(token)}`);
  expect(refused.status).toBe(401);
  const reqId = refused.headers.get('x-request-id')!;
  expect(reqId).toMatch(/^[0-9a-f]{12}$/);
  expect((await api(url, 'GET', '/health', { headers: { 'X-Request-Id': 'proxy-given-1' } })).headers.get('x-request-id')).toBe('proxy-given-1');
  const c = await api(url, 'POST', '/admin/clientes', { key: token, json: { nombre: 'Logs', email: `logs${dirs}@example.com` } });
  expect(c.status).toBe(201);
  const cel = await api(url, 'POST', '/api/celular_crear.php', { key: c.body.api_key, json: { numero: `5215512${String(100000 + dirs).slice(-6)}` } });
  expect(cel.status).toBe(201);
  const celularId = cel.body.celular_id as number;
  expect((await api(url, 'POST', `/api/celular_qr.php?id=${celularId}`, { key: c.body.api_key })).status).toBe(200);
  expect((await api(url, 'POST', '/admin/sim/scan', { key: token, json: { celular_id: celularId } })).status).toBe(200);
  await until(async () => (await api(url, 'GET', `/api/celular.php?id=${celularId}`, { key: c.body.api_key })).body?.celular?.estado === 'activo');
  expect((await api(url, 'POST', '/admin/sim/logout', { key: token, json: { celular_id: celularId } })).status).toBe(200);
  await until(async () => (await api(url, 'GET', `/api/celular.php?id=${celularId}`, { key: c.body.api_key })).body?.celular?.estado === 'desconectado');
  return { token, reqId, celularId, clienteId: c.body.cliente.id as number };
}

/** Runs serve piped (stdout and stderr captured), makes the traffic, stops it with SIGTERM; its stdout and what to look for. */
async function servePiped(args: string[], env: Record<string, string> = {}) {
  const dir = dataDir();
  const proc = cli.spawn(['serve', '--port', '0', '--data-dir', dir, ...args], { env });
  const url = listening.exec(await waitForText(proc.stderr, /API reference/))?.[1];
  const seen = await traffic(url!, dir);
  proc.kill('SIGTERM');
  const r = await proc;
  expect(r.exitCode, String(r.stderr)).toBe(0);
  return { ...seen, stdout: String(r.stdout), stderr: String(r.stderr) };
}

function expectJsonLines(stdout: string, seen: { token: string; reqId: string; celularId: number }): void {
  const lines = stdout.split('\n').filter((l) => l !== '');
  expect(lines.length).toBeGreaterThan(5);
  const parsed = lines.map((l) => JSON.parse(l) as Record<string, any>);
  const mine = parsed.filter((l) => l.reqId === seen.reqId);
  expect(mine).toHaveLength(1);
  expect(mine[0]).toMatchObject({ level: 30, msg: 'request completed', req: { method: 'GET', url: '/api/info.php?key=[REDACTED]' }, res: { statusCode: 401 } });
  expect(parsed.filter((l) => l.reqId === 'proxy-given-1')).toHaveLength(1);
  expect(parsed.some((l) => l.msg === 'incoming request')).toBe(false);
  expect(parsed.find((l) => l.event === 'line.status' && l.celular_id === seen.celularId && l.to === 'logged_out')).toMatchObject({
    level: 30,
    from: 'connected',
    estado: 'desconectado',
  });
  expect(stdout).not.toContain(seen.token);
}

function expectPrettyLines(stdout: string, seen: { token: string; reqId: string; celularId: number; clienteId: number }): void {
  const lines = stdout.split('\n').filter((l) => l !== '');
  expect(lines.length).toBeGreaterThan(5);
  for (const l of lines) {
    expect(l, 'a pretty line').toMatch(PRETTY_LINE);
    expect(l.startsWith('{'), 'no JSON').toBe(false);
  }
  const mine = lines.filter((l) => l.includes(` ${seen.reqId} `));
  expect(mine).toHaveLength(1);
  expect(mine[0]).toMatch(
    new RegExp(`^\\d\\d:\\d\\d:\\d\\d\\.\\d{3} INFO  ${seen.reqId} GET /api/info\\.php\\?key=\\[REDACTED\\] 401 \\d+(\\.\\d+)?ms from 127\\.0\\.0\\.1$`),
  );
  expect(lines.filter((l) => l.includes(' proxy-given-1 GET /health 200 '))).toHaveLength(1);
  expect(
    lines.some((l) =>
      l.endsWith(`INFO  line ${seen.celularId} (cliente ${seen.clienteId}) connected → logged_out instancia=pasarela-${seen.celularId} estado=desconectado`),
    ),
  ).toBe(true);
  expect(stdout).not.toContain(seen.token);
}

describe('log format', () => {
  it('off a terminal: JSON lines by default, one per request, with the request id; the events of a line', async () => {
    const r = await servePiped([]);
    expectJsonLines(r.stdout, r);
    // The banner and the stop are messages, on stderr; the log is stdout's alone.
    expect(r.stderr).not.toContain('"level"');
  });

  it('--log-format pretty off a terminal: readable lines, no colour, the key in a query string still redacted', async () => {
    const r = await servePiped(['--log-format', 'pretty']);
    expectPrettyLines(r.stdout, r);
    expect(r.stdout).not.toContain('\u001b');
  });

  it('PASARELA_LOG_FORMAT=pretty does the same; an unknown format is a usage error', async () => {
    const r = await servePiped([], { PASARELA_LOG_FORMAT: 'pretty' });
    expectPrettyLines(r.stdout, r);
    const bad = await cli.run(['serve', '--port', '0', '--data-dir', dataDir(), '--log-format', 'xml']);
    expect(bad.exitCode).toBe(2);
    expect(bad.stderr).toContain('--log-format');
  });
});

describe.skipIf(!HAS_SCRIPT)('on a terminal (pseudo-terminal)', () => {
  /** serve under `script`, traffic, then SIGTERM to serve itself (its pid from the data directory); the terminal's text, CRs removed. */
  async function serveTty(args: string[], env: Record<string, string> = {}) {
    const dir = dataDir();
    const proc = cli.spawnTty(cliCommandLine(['serve', '--port', '0', '--data-dir', dir, ...args]), { env });
    const url = listening.exec(await waitForText(proc.stdout, /API reference/))?.[1];
    const seen = await traffic(url!, dir);
    const pid = (JSON.parse(readFileSync(join(dir, 'serve.pid'), 'utf8')) as { pid: number }).pid;
    process.kill(pid, 'SIGTERM');
    const r = await proc;
    expect(r.exitCode).toBe(0);
    const output = String(r.stdout).replace(/\r/g, '');
    // The log's lines: everything but the banner and the stop messages (stderr shares the terminal).
    const log = output
      .split('\n')
      .filter((l) => /^(\u001b\[[0-9;]*m)*\d\d:\d\d/.test(l) || l.startsWith('{'))
      .join('\n');
    return { ...seen, output, log };
  }

  it('pretty by default, coloured', async () => {
    const r = await serveTty([]);
    expect(r.log).toMatch(/\u001b\[\d+m/);
    expectPrettyLines(r.log.replace(SGR_ALL, ''), r);
  });

  it('NO_COLOR: pretty without colour', async () => {
    const r = await serveTty([], { NO_COLOR: '1' });
    expect(r.output).not.toContain('\u001b');
    expectPrettyLines(r.log, r);
  });

  it('--log-format json: JSON lines on a terminal too', async () => {
    const r = await serveTty(['--log-format', 'json']);
    expectJsonLines(r.log, r);
  });
});

describe('start failures: one line on stderr, exit 1, no stack trace, no log', () => {
  async function busyPort<T>(fn: (port: number) => Promise<T>): Promise<T> {
    const busy: Server = createServer();
    await new Promise<void>((r) => busy.listen(0, '127.0.0.1', r));
    try {
      return await fn((busy.address() as AddressInfo).port);
    } finally {
      await new Promise((r) => busy.close(r));
    }
  }

  it('a port in use, piped', async () => {
    await busyPort(async (port) => {
      const r = await cli.run(['serve', '--port', String(port), '--data-dir', dataDir()]);
      expect(r.exitCode).toBe(1);
      expect(r.stderr).toBe(`error: port ${port} on 127.0.0.1 is already in use (--port or PASARELA_PORT picks another)\n`);
      expect(r.stdout).toBe('');
    });
  });

  it('a bad operator token, piped', async () => {
    const r = await cli.run(['serve', '--port', '0', '--data-dir', dataDir()], { env: { PASARELA_ADMIN_TOKEN: 'short' } });
    expect(r.exitCode).toBe(1);
    expect(r.stderr).toBe('error: cannot start: PASARELA_ADMIN_TOKEN must be at least 16 characters\n');
    expect(r.stdout).toBe('');
  });

  it.skipIf(!HAS_SCRIPT)('a port in use and a data directory in use, on a terminal (pretty log, debug level)', async () => {
    await busyPort(async (port) => {
      const r = await cli.spawnTty(cliCommandLine(['serve', '--port', String(port), '--data-dir', dataDir(), '--log-level', 'debug']));
      expect(r.exitCode).toBe(1);
      expect(String(r.stdout).replace(/\r/g, '')).toBe(`error: port ${port} on 127.0.0.1 is already in use (--port or PASARELA_PORT picks another)\n`);
    });
    const dir = dataDir();
    const first = cli.spawn(['serve', '--port', '0', '--data-dir', dir]);
    await waitForText(first.stderr, /API reference/);
    try {
      const r = await cli.spawnTty(cliCommandLine(['serve', '--port', '0', '--data-dir', dir]));
      expect(r.exitCode).toBe(1);
      const out = String(r.stdout).replace(/\r/g, '');
      expect(out).toMatch(new RegExp(`^error: data directory ${dir} is in use by another pasarela serve \\(pid ${first.pid} on [^\\n]*\\n$`));
      expect(out).not.toMatch(STACK_FRAME);
    } finally {
      first.kill('SIGTERM');
      expect((await first).exitCode).toBe(0);
    }
  });
});
