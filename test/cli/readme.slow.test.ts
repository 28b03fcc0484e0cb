import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { BIN, ROOT, tempDir, until, freePort } from './helpers.js';

/**
 * The README's scripted walkthrough, run as written (the bash block that
 * starts with `#!/usr/bin/env bash`), with only its port changed to a free
 * one: a README whose script fails (a missing pipefail, a field that is not
 * there, a server left running) fails here first.
 */
const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
const HAS_CURL = spawnSync('sh', ['-c', 'command -v curl'], { stdio: 'ignore' }).status === 0;

describe('README', () => {
  const block = /```sh\n(#!\/usr\/bin\/env bash\n[\s\S]*?)```/.exec(readme)?.[1];

  it('has the scripted walkthrough, with set -euo pipefail and a trap that stops its server', () => {
    expect(block).toBeDefined();
    expect(block).toContain('set -euo pipefail');
    expect(block).toMatch(/trap 'kill \$!' EXIT/);
  });

  it.skipIf(!HAS_CURL)(
    'its scripted walkthrough runs as written: exit 0, the line connected, a direct send, no server left behind',
    async () => {
      const port = await freePort();
      // `node bin/pasarela` for `npx pasarela`: npx's own start-up (seconds
      // without a reachable registry) is not what this test is about.
      const script = block!.replaceAll('8081', String(port)).replaceAll('npx pasarela', `node ${BIN}`);
      const home = tempDir('pasarela-readme-');
      const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('PASARELA_')));
      const r = await execa('bash', ['-c', script], { cwd: ROOT, reject: false, timeout: 120_000, extendEnv: false, env: { ...env, HOME: home } });
      expect(r.exitCode, `${r.stdout}\n${r.stderr}`).toBe(0);
      expect(r.stdout).toMatch(/"status": "connected"/);
      expect(r.stdout).toMatch(/^[0-9a-f-]{36}\tdirecto\tenviado\t\S+$/m);
      // The trap stopped the server: its port is free again once it has closed.
      const free = () =>
        new Promise<boolean>((resolve) => {
          const srv = createServer();
          srv.once('error', () => resolve(false));
          srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
        });
      await until(free).catch(() => {
        throw new Error(`port ${port} still taken after the script ended`);
      });
      // Seven CLI starts and a server: on a loaded 2-core machine they take
      // longer than vitest's 30 s default, so the test waits as long as the script may run.
    },
    180_000,
  );
});
