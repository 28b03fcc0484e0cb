import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa, type ResultPromise } from 'execa';
import { expect } from 'vitest';

/**
 * `pasarela serve` as a real child process (the built binary), for tests that
 * kill it: start on a free port and read the URL from the banner, SIGKILL,
 * SIGTERM. `npm run build` must have run first (bin/pasarela imports dist/).
 */
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const BIN = join(ROOT, 'bin', 'pasarela');
if (!existsSync(join(ROOT, 'dist', 'cli', 'main.js'))) {
  throw new Error('dist/ is missing: run `npm run build` before the e2e tests (npm test does it)');
}

export interface ServeChild {
  url: string;
  child: ResultPromise<{ reject: false }>;
}

const children = new Set<ResultPromise<{ reject: false }>>();

/** For afterAll: a failed assertion must not leave a server running. */
export function killAllServeChildren(): void {
  for (const c of children) c.kill('SIGKILL');
}

/**
 * `timeoutMs`: the child is killed after this long, so a hung test never leaves it running.
 * `env`: added to the child's small environment (NODE_OPTIONS, NODE_EXTRA_CA_CERTS for the fake network).
 */
export async function startServeChild(dataDir: string, args: string[], timeoutMs = 60_000, env: Record<string, string> = {}): Promise<ServeChild> {
  const home = join(dataDir, '..', 'home');
  const child = execa(process.execPath, [BIN, 'serve', '--port', '0', '--data-dir', dataDir, '--log-level', 'warn', ...args], {
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, LANG: 'C.UTF-8', PASARELA_CONFIG_DIR: join(home, 'config'), ...env },
    extendEnv: false,
    reject: false,
    stdin: 'ignore',
    timeout: timeoutMs,
  }) as ResultPromise<{ reject: false }>;
  children.add(child);
  void child.finally(() => children.delete(child));
  const url = await new Promise<string>((resolve, reject) => {
    let seen = '';
    const onData = (chunk: Buffer) => {
      seen += String(chunk);
      const m = /listening on (http:\/\/\S+)/.exec(seen);
      if (m) {
        child.stderr.off('data', onData);
        resolve(m[1]!);
      }
    };
    child.stderr.on('data', onData);
    void child.then((r) => reject(new Error(`serve ended before listening (exit ${r.exitCode}, ${r.signal ?? 'no signal'}): ${seen}${String(r.stderr)}`)));
  });
  return { url, child };
}

/** kill -9. */
export async function crash(s: ServeChild): Promise<void> {
  s.child.kill('SIGKILL');
  const r = await s.child;
  expect(r.signal).toBe('SIGKILL');
}

/** A graceful stop, which must exit 0. */
export async function stop(s: ServeChild): Promise<void> {
  s.child.kill('SIGTERM');
  const r = await s.child;
  expect(r.exitCode, String(r.stderr)).toBe(0);
}
