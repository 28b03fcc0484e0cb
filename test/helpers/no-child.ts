import childProcess from 'node:child_process';
import { syncBuiltinESMExports } from 'node:module';

/**
 * Setup file of the fast lane (vitest.config.ts): a child process there is a
 * mistake (the lane must not depend on how fast the machine starts one), so
 * every way to start one throws, naming the fix. ESM importers (execa too)
 * see the change through syncBuiltinESMExports.
 */
const names = ['spawn', 'spawnSync', 'exec', 'execSync', 'execFile', 'execFileSync', 'fork'] as const;
const cp = childProcess as unknown as Record<(typeof names)[number], unknown>;
for (const name of names) {
  cp[name] = () => {
    throw new Error(`child_process.${name} in the fast lane: move this test to a *.slow.test.ts file`);
  };
}
syncBuiltinESMExports();
