import { spawn } from 'node:child_process';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ManualClock } from '../../src/core/time/clock.js';
import { seedClient, startTestServer, type Seeded, type TestServer } from '../helpers/server.js';
import { BIN, Cli, cliCommandLine } from './helpers.js';
import { storeMensaje } from './stored-mensaje.js';

/**
 * A reader that goes away early (`pasarela ... | head -1`): the CLI ends
 * quietly with exit 0, like `git log | head -1` from the reader's point of
 * view, instead of an EPIPE stack trace and exit 1.
 */
let s: TestServer;
let cli: Cli;
let a: Seeded;

beforeAll(async () => {
  s = await startTestServer();
  cli = new Cli(s.url);
  a = await seedClient(s);
  // Enough history for many pages: `historial --all --por-pagina 1` keeps writing after head has gone.
  const clock = s.clock as ManualClock;
  for (let i = 0; i < 60; i += 1) {
    const msg_id = `pipe-${String(i).padStart(3, '0')}`;
    await storeMensaje(s, {
      msg_id,
      cliente_id: a.clienteId,
      celular_id: a.celularId,
      destinatario: '525512345678',
      texto: `mensaje ${i}`,
      at: clock.now() + i,
    });
  }
});
afterAll(async () => {
  cli?.cleanup();
  await s?.stop();
});

/** Runs the CLI with its stdout a pipe whose reading end is closed before the CLI writes anything. */
function runWithClosedStdout(args: string[]): Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], { env: cli.env({ PASARELA_KEY: a.clientKey }), stdio: ['ignore', 'pipe', 'pipe'] });
    // Node takes tens of milliseconds to start: the reader is gone long before the first write.
    child.stdout.destroy();
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => (stderr += String(c)));
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code, signal, stderr }));
  });
}

const noTrace = (stderr: string) => {
  expect(stderr).not.toMatch(/EPIPE|Error|\n\s+at /);
};

describe('the reader of stdout goes away', () => {
  it('info, celular list and historial end quietly with exit 0 when stdout is already closed', async () => {
    const results = await Promise.all([
      runWithClosedStdout(['info']),
      runWithClosedStdout(['celular', 'list']),
      runWithClosedStdout(['--json', 'info']),
      runWithClosedStdout(['historial', '--all', '--por-pagina', '1', '--format', 'csv']),
    ]);
    for (const r of results) {
      expect(r.signal).toBeNull();
      expect(r.code, r.stderr).toBe(0);
      expect(r.stderr).toBe('');
    }
  });

  it('`historial --all | head -1` (pipefail): the first line, exit 0, no stack trace', async () => {
    for (const format of ['csv', 'ndjson', 'table']) {
      const line = `set -o pipefail; ${cliCommandLine(['historial', '--all', '--por-pagina', '1', '--format', format])} | head -1; echo "status=$? cli=\${PIPESTATUS[0]}" >&2`;
      const r = await execa('bash', ['-c', line], { env: cli.env({ PASARELA_KEY: a.clientKey }), extendEnv: false, reject: false, stdin: 'ignore' });
      const out = String(r.stdout);
      expect(out.split('\n').filter(Boolean)).toHaveLength(1);
      if (format === 'csv') expect(out).toMatch(/^msg_id,celular_id,/);
      else expect(out).toContain('pipe-059'); // newest first
      expect(String(r.stderr)).toMatch(/status=0 cli=0$/);
      noTrace(String(r.stderr).replace(/status=.*$/, ''));
    }
  });

  it('an error after the reader has gone is not reported either (the reader took what it wanted)', async () => {
    // 2>&1 | true: stderr is the closed pipe too; the 404 cannot be written anywhere.
    const line = `set -o pipefail; ${cliCommandLine(['celular', 'show', '99999'])} 2>&1 | true; echo "status=$?"`;
    const r = await execa('bash', ['-c', line], { env: cli.env({ PASARELA_KEY: a.clientKey }), extendEnv: false, reject: false, stdin: 'ignore' });
    // Either the message was written before `true` exited (exit 4) or the pipe was gone (exit 0); never a crash.
    expect(String(r.stdout)).toMatch(/^status=(0|4)$/);
    expect(String(r.stderr)).toBe('');
  });
});
