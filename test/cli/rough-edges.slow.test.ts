import { afterAll, describe, expect, it } from 'vitest';
import { Cli } from './helpers.js';

/**
 * Issue 40 item 6 through the binary (bin/pasarela, dist/): the exit status a
 * script sees and what reaches its pipe, for a duration no timer holds and a
 * usage error under --json. No server is needed: both are refused before any
 * request.
 */
const cli = new Cli('http://127.0.0.1:1');
afterAll(() => cli.cleanup());

describe('the binary', () => {
  it("--timeout 99999999d (the adversary's F1) is exit 2 at once, JSON on stdout under --json, no timer overflow", async () => {
    const r = await cli.runBinary(['send', 'text', '5215598765000', 'x', '--wait', '--timeout', '99999999d', '--json'], { env: { PASARELA_KEY: 'WAC_1_x' } });
    expect(r.exitCode).toBe(2);
    expect(JSON.parse(r.stdout)).toMatchObject({ ok: false, exit_code: 2, error: expect.stringContaining('too long') });
    expect(r.stderr).toContain('too long: a wait may be at most 24d');
    expect(r.stderr).not.toContain('TimeoutOverflowWarning');
  });

  it('serve refuses a timer setting past 24d (exit 2), from a flag or its variable, before it starts', async () => {
    const r = await cli.runBinary(['serve', '--gateway-timeout', '30d', '--port', '0']);
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toContain('too long');
    const env = await cli.runBinary(['serve', '--port', '0'], { env: { PASARELA_STOP_TIMEOUT: '90d' } });
    expect(env.exitCode).toBe(2);
    expect(env.stderr).toContain('too long');
  });

  it('a usage error under --json: one JSON document on stdout, the message on stderr', async () => {
    const r = await cli.runBinary(['send', 'text', '123', 'hi', '--json']);
    expect(r.exitCode).toBe(2);
    const body = JSON.parse(r.stdout) as { ok: boolean; error: string; exit_code: number };
    expect(body).toMatchObject({ ok: false, exit_code: 2 });
    expect(r.stderr).toContain(body.error.split('\n')[0]!);
    const plain = await cli.runBinary(['send', 'text', '123', 'hi']);
    expect(plain.exitCode).toBe(2);
    expect(plain.stdout).toBe('');
  });
});
