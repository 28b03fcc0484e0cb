import { spawn, type ChildProcess } from 'node:child_process';
import { openSync, closeSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { api } from '../helpers/server.js';
import { numeroNuevo } from '../helpers/expect.js';
import { until } from '../helpers/poll.js';
import { BIN, needBuild, tempDir } from './helpers.js';

/**
 * A log output that fails never stops `serve` (docs/logs.md, "When the log
 * cannot be written"): stdout on a full disk (/dev/full: every write fails
 * with ENOSPC) or a pipe whose reader went away. The binary keeps answering,
 * counts the dropped lines in /metrics, says it once on stderr, and still
 * stops gracefully (exit 0) on SIGTERM.
 */
const TOKEN = 'log-output-test-token-0001';
const home = tempDir();
const children = new Set<ChildProcess>();
afterAll(() => {
  for (const c of children) c.kill('SIGKILL');
});

let dirs = 0;

interface Serving {
  child: ChildProcess;
  url: string;
  stderr: () => string;
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** `serve` with stdout on `stdout` (a descriptor, or a pipe the test may close); the URL from the banner on stderr. */
async function serve(stdout: number | 'pipe'): Promise<Serving> {
  needBuild();
  const dir = join(home, `data-${++dirs}`);
  const child = spawn(process.execPath, [BIN, 'serve', '--port', '0', '--data-dir', dir, '--log-format', 'json', '--log-level', 'info'], {
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, LANG: 'C.UTF-8', PASARELA_CONFIG_DIR: join(home, 'config'), PASARELA_ADMIN_TOKEN: TOKEN },
    stdio: ['ignore', stdout, 'pipe'],
  });
  children.add(child);
  let err = '';
  child.stderr!.on('data', (c: Buffer) => (err += String(c)));
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('exit', (code, signal) => {
      children.delete(child);
      resolve({ code, signal });
    }),
  );
  const url = await until(() => /listening on (http:\/\/\S+)/.exec(err)?.[1] ?? (child.exitCode !== null ? `exited: ${err}` : undefined), {
    timeoutMs: 30_000,
    what: () => `the banner (stderr so far: ${err})`,
  });
  expect(url).toMatch(/^http:/);
  return { child, url, stderr: () => err, exit };
}

/** A client with a linked line, and a queued text sent through it: every request is answered as usual. */
async function traffic(url: string): Promise<void> {
  const c = await api(url, 'POST', '/admin/clientes', { key: TOKEN, json: { nombre: 'Log', email: `log${dirs}@example.com`, saldo: 10 } });
  expect(c.status).toBe(201);
  const cel = await api(url, 'POST', '/api/celular_crear.php', { key: c.body.api_key, json: { numero: numeroNuevo() } });
  expect(cel.status).toBe(201);
  const id = cel.body.celular_id as number;
  expect((await api(url, 'POST', `/api/celular_qr.php?id=${id}`, { key: c.body.api_key })).status).toBe(200);
  expect((await api(url, 'POST', '/admin/sim/scan', { key: TOKEN, json: { celular_id: id } })).status).toBe(200);
  await until(async () => (await api(url, 'GET', `/api/celular.php?id=${id}`, { key: c.body.api_key })).body?.celular?.estado === 'activo', {
    what: 'the line activo',
  });
  for (let i = 0; i < 5; i += 1) {
    const r = await api(url, 'POST', '/api/mensaje_enviar_texto.php', { key: cel.body.api_key, json: { destinatario: '5215512345678', mensaje: `hola ${i}` } });
    expect(r.status, r.text).toBe(200);
  }
  for (let i = 0; i < 5; i += 1) expect((await api(url, 'GET', '/health')).status).toBe(200);
}

/** The drop counter's value on /metrics. */
async function dropped(url: string): Promise<number> {
  const m = await api(url, 'GET', '/metrics', { key: TOKEN });
  expect(m.status).toBe(200);
  const v = /^pasarela_log_lines_dropped_total (\d+)$/m.exec(m.text)?.[1];
  expect(v, 'pasarela_log_lines_dropped_total on /metrics').toBeDefined();
  return Number(v);
}

async function stopsCleanly(s: Serving): Promise<void> {
  s.child.kill('SIGTERM');
  const r = await s.exit;
  expect(r, s.stderr()).toEqual({ code: 0, signal: null });
  expect(s.stderr()).toContain('pasarela stopped');
  expect(s.stderr()).not.toMatch(/\n\s+at |Error:/);
}

describe('serve whose log output fails', () => {
  it('stdout on a full device (ENOSPC): keeps answering sends and /health, counts the dropped lines, says it once, exits 0 on SIGTERM', async () => {
    const full = openSync('/dev/full', 'w');
    let s: Serving;
    try {
      s = await serve(full);
    } finally {
      closeSync(full);
    }
    await traffic(s.url);
    // A line per request at info: each of them dropped.
    expect(await dropped(s.url)).toBeGreaterThanOrEqual(12);
    expect(s.stderr().match(/the log output failed \(ENOSPC/g)).toHaveLength(1);
    await stopsCleanly(s);
  });

  it('stdout a pipe whose reader went away (EPIPE): not a stop signal, it keeps serving; exits 0 on SIGTERM', async () => {
    const s = await serve('pipe');
    s.child.stdout!.destroy();
    await traffic(s.url);
    expect(await dropped(s.url)).toBeGreaterThan(0);
    expect(s.child.exitCode).toBeNull();
    expect(s.stderr().match(/the log output failed/g)).toHaveLength(1);
    await stopsCleanly(s);
  });
});
