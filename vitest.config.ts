import { defineConfig } from 'vitest/config';

// Tests run against real parts (HTTP server on a loopback port, SQLite files,
// the built CLI), so timeouts leave room for a loaded 2-core machine.
export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // The JSON report lets .ci/run print a plain "N passed, N failed" line.
    reporters: ['default', ['json', { outputFile: '.pasarela-test/vitest.json' }]],
  },
});
