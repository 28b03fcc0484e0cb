import { expect, it } from 'vitest';
import { describeWith, postgres, redis } from './helpers/services.js';

/**
 * The outside services the PostgreSQL and Redis suites use. Without them
 * this file is skipped with the reason, like those suites; .ci/run sets
 * PASARELA_REQUIRE_SERVICES=1, which turns a missing one into a failure here.
 */
for (const svc of [postgres, redis]) {
  describeWith(svc, `${svc.name} for the suites that need it`, () => {
    it(`answers at ${svc.url}`, () => {
      expect(svc.available).toBe(true);
    });
  });
}
