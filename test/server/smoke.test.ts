import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, seedClient, startTestServer, type TestServer } from '../helpers/server.js';

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(async () => {
  await s.stop();
});

describe('health', () => {
  it('answers without credentials and names the gateway', async () => {
    const r = await api(s.url, 'GET', '/health');
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ ok: true, status: 'ok', gateway: 'sim', simulado: true, store: 'sqlite' });
  });
  it('seeds a client through the API', async () => {
    const seeded = await seedClient(s);
    expect(seeded.celularKey).toMatch(/^WA_\d+_/);
  });
});
