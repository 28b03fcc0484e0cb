import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type Seeded, type TestServer } from '../helpers/server.js';
import { Cli, cliCommandLine, HAS_SCRIPT, ids, ndjson, tempDir } from './helpers.js';
import { seedHistory, type History } from './historial-fixture.js';

/**
 * `pasarela historial` through the built CLI against a real server: every
 * format, --all across pages, filters passed through, csv quoting, exit codes.
 */

let s: TestServer;
let cli: Cli;
let A: Seeded;
let seeds: History['seeds'];
let expected: History['expected'];

beforeAll(async () => {
  s = await startTestServer({ tz: 'UTC' });
  cli = new Cli(s.url);
  ({ A, seeds, expected } = await seedHistory(s));
});
afterAll(async () => {
  cli?.cleanup();
  await s?.stop();
});

describe('pasarela historial --all', () => {
  const all = ['historial', '--all', '--por-pagina', '50'];

  it.skipIf(!HAS_SCRIPT)('progress "page N/M" on stderr when it is a terminal; the data still goes to stdout', async () => {
    const dir = tempDir();
    const file = join(dir, 'out.ndjson');
    const line = `${cliCommandLine([...all, '--format', 'ndjson'])} > '${file}'`;
    const r = await cli.spawnTty(line, { env: { PASARELA_KEY: A.clientKey } });
    expect(r.exitCode).toBe(0);
    expect(String(r.stdout)).toMatch(/page 3\/3/);
    expect(ids(ndjson(readFileSync(file, 'utf8')))).toEqual(expected());
  });

  it.skipIf(!HAS_SCRIPT)('on a TTY the table has a header row', async () => {
    const r = await cli.spawnTty(cliCommandLine(['historial', '--por-pagina', '3']), { env: { PASARELA_KEY: A.clientKey, NO_COLOR: '1' } });
    expect(r.exitCode).toBe(0);
    const out = String(r.stdout);
    expect(out).toMatch(/FECHA.*MSG_ID.*ESTADO/);
    expect(out).toContain(seeds[120]!.msg_id);
    expect(out).toMatch(/page 1\/41, 121 total/);
  });
});
