import { existsSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterEach, describe, expect, it } from 'vitest';
import { ROOT, needBuild, tempDir, until, freePort } from './helpers.js';

/**
 * `npm start` then `kill <npm's pid>` (issue 36's walk, D-109): npm passes
 * SIGTERM to the shell it ran the script in, which ends without passing it
 * on, so the server used to run on, adopted by init. Under npm, `serve`
 * watches its parent and stops as on SIGTERM once it has gone.
 */

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

let leftover: number | undefined;
afterEach(() => {
  // A failing run leaves no server behind.
  if (leftover !== undefined && alive(leftover)) process.kill(leftover, 'SIGKILL');
  leftover = undefined;
});

describe('npm start', () => {
  it('kill of the npm process stops serve too (gracefully), and frees its port', async () => {
    needBuild();
    const port = await freePort();
    const data = tempDir('pasarela-npm-start-');
    const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('PASARELA_') && !k.startsWith('npm_')));
    const npm = execa('npm', ['start', '--', '--port', String(port)], {
      cwd: ROOT,
      reject: false,
      extendEnv: false,
      env: { ...env, PASARELA_DATA_DIR: data, PASARELA_CONFIG_DIR: tempDir('pasarela-npm-start-cfg-'), HOME: tempDir('pasarela-npm-start-home-') },
    });
    await until(async () => (await fetch(`http://127.0.0.1:${port}/health`).catch(() => null))?.ok === true, 90_000, 200);
    // serve's own pid, as its data directory's lock names it: a grandchild of npm (npm, its shell, node).
    const servePid = (JSON.parse(readFileSync(join(data, 'serve.pid'), 'utf8')) as { pid: number }).pid;
    leftover = servePid;
    expect(servePid).not.toBe(npm.pid);
    expect(alive(servePid)).toBe(true);

    npm.kill('SIGTERM');
    await until(async () => !alive(servePid), 60_000, 100).catch(() => {
      throw new Error(`serve (pid ${servePid}) still runs after npm (pid ${npm.pid}) was killed`);
    });
    // Its output reaches the pipe npm was given: it stopped the graceful way and said why.
    const out = await npm;
    expect(out.stderr).toContain('the npm process that started it ended: finishing requests in flight');
    expect(out.stderr).toContain('pasarela stopped');
    // The lock's holder file goes with a graceful stop (a killed server leaves it).
    expect(existsSync(join(data, 'serve.pid'))).toBe(false);
    const free = await new Promise<boolean>((resolve) => {
      const srv = createServer();
      srv.once('error', () => resolve(false));
      srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
    });
    expect(free).toBe(true);
  }, 180_000);
});
