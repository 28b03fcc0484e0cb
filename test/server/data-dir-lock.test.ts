import { afterEach, describe, expect, it } from 'vitest';
import { startTestServer, tempDir, type TestServer } from '../helpers/server.js';

/** One `serve` per data directory, in one process too (the CLI's case is in test/cli/serve.slow.test.ts). */
const servers: TestServer[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await s.stop();
});

describe('data directory lock', () => {
  it('refuses a second server on a directory in use, naming it and its holder, and frees it on close', async () => {
    const dataDir = tempDir();
    const first = await startTestServer({ dataDir });
    await expect(startTestServer({ dataDir })).rejects.toThrow(`data directory ${dataDir} is in use by another pasarela serve (pid ${process.pid} on `);
    // The refused start left the first one whole.
    expect((await fetch(`${first.url}/health`)).status).toBe(200);
    await first.close();
    const again = await startTestServer({ dataDir });
    servers.push(again);
    expect((await fetch(`${again.url}/health`)).status).toBe(200);
  });
});
