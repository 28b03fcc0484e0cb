import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { HOSTILE, seedInbox, type Inbox } from './recibidos-fixture.js';
import type { Line } from '../server/send-helpers.js';
import { Cli, cliCommandLine, ESC, HAS_SCRIPT, ids, ndjson, tempDir } from './helpers.js';

/**
 * `pasarela recibidos` through the built CLI against a real server whose lines
 * received messages through the simulator: every format, --all across pages,
 * filters passed through, csv quoting, hostile texts on a terminal, exit codes.
 */

let s: TestServer;
let cli: Cli;
let A: Line;
let expected: Inbox['expected'];

const gids = (records: Array<Record<string, unknown>>) => ids(records, 'gateway_msg_id');

beforeAll(async () => {
  s = await startTestServer({ tz: 'UTC', inboxPurgeIntervalMs: 0, healthIntervalMs: 0 });
  cli = new Cli(s.url);
  ({ A, expected } = await seedInbox(s));
});
afterAll(async () => {
  cli?.cleanup();
  await s?.stop();
});

describe('pasarela recibidos on a terminal', () => {
  it.skipIf(!HAS_SCRIPT)(
    "the table has a header and the page line; a sender's control characters and bidi override are shown escaped, never obeyed",
    async () => {
      const r = await cli.spawnTty(cliCommandLine(['recibidos', '--por-pagina', '3']), { env: { PASARELA_KEY: A.clientKey, NO_COLOR: '1' } });
      expect(r.exitCode).toBe(0);
      const out = String(r.stdout);
      expect(out).toMatch(/RECIBIDO.*ID.*CELULAR.*DE.*TIPO.*TEXTO/);
      expect(out).toMatch(/page 1\/41, 123 total/);
      expect(out).toContain('pago \\u001b[31mrojo');
      expect(out).not.toContain(ESC);
      expect(out).not.toContain('\u202e');
      expect(out).not.toContain('\u009b');
    },
  );

  it.skipIf(!HAS_SCRIPT)('ndjson and csv to a terminal escape them too; to a file the ndjson values are exact', async () => {
    for (const format of ['ndjson', 'csv']) {
      const r = await cli.spawnTty(cliCommandLine(['recibidos', '--por-pagina', '3', '--format', format]), { env: { PASARELA_KEY: A.clientKey } });
      expect(r.exitCode).toBe(0);
      const out = String(r.stdout);
      expect(out, format).toContain('\\u202etxt.exe');
      expect(out, format).not.toContain('\u202e');
      expect(out, format).not.toContain('\u009b');
      expect(out.replace(/\u001b\[[0-9;]*m/g, ''), format).not.toContain(ESC);
    }
    const dir = tempDir();
    const file = join(dir, 'out.ndjson');
    const r = await cli.spawnTty(`${cliCommandLine(['recibidos', '--all', '--por-pagina', '50', '--format', 'ndjson'])} > '${file}'`, {
      env: { PASARELA_KEY: A.clientKey },
    });
    expect(r.exitCode).toBe(0);
    expect(String(r.stdout)).toMatch(/page 3\/3/);
    const recs = ndjson(readFileSync(file, 'utf8'));
    expect(gids(recs)).toEqual(expected());
    expect(recs[1]!.texto).toBe(HOSTILE);
  });
});
