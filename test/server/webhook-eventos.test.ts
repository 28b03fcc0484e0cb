import { afterAll, beforeAll, expect, it } from 'vitest';
import { expectError, expectOk } from '../helpers/expect.js';
import { api, seedClient, startTestServer, type Seeded, type TestServer } from '../helpers/server.js';

/** The shapes `eventos` may arrive in from PHP-era clients, and the empty list. */
let s: TestServer;
let A: Seeded;
beforeAll(async () => {
  s = await startTestServer({ allowPrivateUrls: true });
  A = await seedClient(s);
});
afterAll(async () => {
  await s.stop();
});

it('PHP-style eventos[] form fields are read, not ignored', async () => {
  const r = await api(s.url, 'POST', '/api/webhook.php', {
    key: A.clientKey,
    form: { url: 'http://127.0.0.1:9/hook', 'eventos[]': ['message.status', 'session.status'] },
  });
  expectOk(r);
  expect(r.body.eventos).toEqual(['message.status', 'session.status']);
});

it('an explicit empty list is refused instead of meaning all', async () => {
  const r = await api(s.url, 'POST', '/api/webhook.php', { key: A.clientKey, json: { url: 'http://127.0.0.1:9/hook', eventos: [] } });
  expectError(r, 400, 100);
  expect(r.body.error).toContain('eventos');
});
