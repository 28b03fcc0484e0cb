import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

/**
 * Two lanes, chosen by rule, never by a list of files:
 * - fast (`npm run test:fast`): every test file except the slow ones, with
 *   PostgreSQL switched off (PASARELA_TEST_POSTGRES=off, read by
 *   test/helpers/services.ts): core, contract suites on SQLite, in-process
 *   routes and commands. test/helpers/no-child.ts refuses any child process.
 * - slow (`npm run test:slow`): test/e2e/, every `*.slow.test.ts` (the binary,
 *   terminals, shells, `serve` as a child), and the PostgreSQL runs of the
 *   fast files (project `postgres`: the same files, only the tests whose name
 *   says PostgreSQL; describeWith and the contract adapters name them so).
 * `npm test` runs all three projects once, in one vitest run, so the JSON
 * report below counts every test once.
 * Tests run against real parts (SQLite files, a loopback HTTP server, the
 * built CLI), so timeouts leave room for a loaded 2-core machine.
 *
 * Speed: most tests wait on sockets and files, so two workers run even on
 * two cores (vitest's default there is one). The fast lane shares each
 * worker's module cache across its files (isolate: false): importing Fastify,
 * undici and the core once per worker instead of once per file took its run
 * from ~290 s to ~70 s here. Its files must therefore leave no global state
 * behind: no vi.mock of a module (record undici traffic through its
 * diagnostics channel instead), close what they open, restore spies.
 */
const SLOW = ['test/e2e/**/*.test.ts', 'test/**/*.slow.test.ts'];
/**
 * Runs alone, after every other project (its group): its fixture fills a
 * 1,000,000-message PostgreSQL schema in one 30-second transaction, which
 * holds the cluster's xmin back, and the other PostgreSQL tests wait for
 * their event logs to pass that line (followers read only settled events).
 */
const ALONE = ['test/server/query-plans-postgres.test.ts'];
const POSTGRES_NAME = /postgres/i;
// vitest 4.1 honours testNamePattern per project, though its ProjectConfig type leaves it out.
const ONLY_POSTGRES = { testNamePattern: POSTGRES_NAME } as object;

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    maxWorkers: Math.max(2, availableParallelism()),
    // The JSON report lets .ci/run print a plain "N passed, N failed" line.
    reporters: ['default', ['json', { outputFile: '.pasarela-test/vitest.json' }]],
    projects: [
      {
        extends: true,
        test: {
          name: 'fast',
          include: ['test/**/*.test.ts'],
          exclude: [...SLOW, ...ALONE],
          isolate: false,
          env: { PASARELA_TEST_POSTGRES: 'off' },
          setupFiles: ['test/helpers/no-child.ts'],
        },
      },
      {
        extends: true,
        // Children (serve, the binary, terminals) start slowly on a loaded machine: a test's own waits bound it.
        test: { name: 'slow', include: SLOW, testTimeout: 120_000 },
      },
      {
        extends: true,
        // The fast files again, so the same shared-cache rule holds.
        test: { name: 'postgres', include: ['test/**/*.test.ts'], exclude: [...SLOW, ...ALONE], isolate: false, ...ONLY_POSTGRES },
      },
      {
        extends: true,
        test: { name: 'alone', include: ALONE, sequence: { groupOrder: 1 } },
      },
    ],
  },
});
