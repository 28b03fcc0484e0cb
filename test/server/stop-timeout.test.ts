import { rmSync } from 'node:fs';
import { afterAll, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { expectOk } from '../helpers/expect.js';
import { linkedLine, send, TEXT, uniqueText } from './send-helpers.js';
import { until } from '../helpers/poll.js';

/**
 * A graceful stop is bounded (docs/operations.md "Health, readiness and stopping"):
 * whatever is still in flight after --stop-timeout is abandoned (its claim
 * runs out and it is retried) and the stop ends. Here a queued send whose
 * gateway call never returns holds the queue worker's stop.
 */
let s: TestServer | undefined;
afterAll(() => {
  if (s) rmSync(s.dataDir, { recursive: true, force: true });
});

it('a send the gateway never answers is abandoned after --stop-timeout, and the stop ends', async () => {
  s = await startTestServer({ stopTimeoutMs: 300 });
  const L = await linkedLine(s);
  let called = 0;
  // A gateway that takes the send and never answers.
  s.core.gateway.send = () => {
    called += 1;
    return new Promise(() => undefined);
  };
  expectOk(await send(s, L, TEXT, { destinatario: '5215512345678', mensaje: uniqueText() }), { modo: 'cola' });
  await until(() => called > 0, { what: 'the send in flight' });
  const r = await s.close();
  expect(r).toEqual({ complete: false });
  expect(s.logs.some((l) => l.includes('the graceful stop timed out'))).toBe(true);
});
