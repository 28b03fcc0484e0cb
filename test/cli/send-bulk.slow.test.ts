import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { linkedLine, type Line } from '../server/send-helpers.js';
import { BIN, Cli, cliCommandLine, HAS_SCRIPT, ndjson, ROOT, tempDir } from './helpers.js';

/** `pasarela send bulk` as the built binary: killed half way and run again, Ctrl-C, and the bar on a terminal. */
let s: TestServer;
let cli: Cli;
let files = 0;

beforeAll(async () => {
  s = await startTestServer({ queue: { gapMinMs: 0, gapMaxMs: 0 } });
  cli = new Cli(s.url);
});
afterAll(async () => {
  cli?.cleanup();
  await s?.stop();
});

function campaign(n: number): string {
  files += 1;
  const path = join(cli.home, `campania-${files}.csv`);
  const lines = ['destinatario,nombre'];
  for (let i = 1; i <= n; i++) lines.push(`52155${files}${String(i).padStart(7, '0')},Cliente ${i}`);
  writeFileSync(path, lines.join('\n') + '\n');
  return path;
}

const count = async (l: Line) => (await s.core.store.listMensajes({ cliente_id: l.clienteId, page: 1, por_pagina: 1 })).total;

/** Resolves once `n` complete NDJSON lines have come out on stdout (counted, not matched: the text grows large). */
function afterLines(stream: NodeJS.ReadableStream | null, n: number): Promise<void> {
  if (!stream) return Promise.reject(new Error('no stdout'));
  return new Promise((resolve) => {
    let lines = 0;
    const onData = (chunk: Buffer | string) => {
      for (const ch of String(chunk)) if (ch === '\n') lines += 1;
      if (lines >= n) {
        stream.off('data', onData);
        resolve();
      }
    };
    stream.on('data', onData);
  });
}

describe('send bulk, the binary', () => {
  it('2,000 rows killed half way (SIGKILL) and run again: exactly 2,000 messages, each row once', async () => {
    const l = await linkedLine(s, { saldo: 5000 });
    const csv = campaign(2000);
    const args = ['send', 'bulk', csv, '--text', 'Hola {nombre}', '--concurrency', '4'];
    const env = { PASARELA_KEY: l.celularKey };
    const first = cli.spawn(args, { env, timeoutMs: 180_000 });
    await afterLines(first.stdout, 1000);
    first.kill('SIGKILL');
    const killed = await first;
    expect(killed.signal).toBe('SIGKILL');
    const before = await count(l);
    expect(before).toBeGreaterThanOrEqual(1000);
    expect(before).toBeLessThan(2000);

    const again = await cli.spawn(args, { env, timeoutMs: 180_000 });
    expect(again.exitCode, String(again.stderr)).toBe(0);
    const lines = ndjson(String(again.stdout));
    expect(lines).toHaveLength(2000);
    expect(new Set(lines.map((x) => x.row)).size).toBe(2000);
    expect(lines.every((x) => x.ok === true)).toBe(true);
    expect(new Set(lines.map((x) => x.msg_id)).size).toBe(2000);
    expect(await count(l)).toBe(2000);
  });

  it('SIGINT stops cleanly: the rows in flight finish, the summary is printed, exit 130; a rerun finishes the rest', async () => {
    const l = await linkedLine(s, { saldo: 5000 });
    const csv = campaign(1500);
    const args = ['send', 'bulk', csv, '--text', 'Hola {nombre}'];
    const env = { PASARELA_KEY: l.celularKey };
    const run = cli.spawn(args, { env, timeoutMs: 180_000 });
    await afterLines(run.stdout, 100);
    run.kill('SIGINT');
    const r = await run;
    expect(r.exitCode, String(r.stderr)).toBe(130);
    expect(String(r.stderr)).toMatch(/rows accepted/);
    expect(String(r.stderr)).toMatch(/run the same command again/);
    // Every row it printed is one the server took, and nothing it did not print was sent.
    const printed = ndjson(String(r.stdout));
    expect(printed.every((x) => x.ok === true)).toBe(true);
    expect(await count(l)).toBe(printed.length);

    const rest = await cli.spawn(args, { env, timeoutMs: 180_000 });
    expect(rest.exitCode, String(rest.stderr)).toBe(0);
    expect(await count(l)).toBe(1500);
  });

  it.runIf(HAS_SCRIPT)('on a terminal: a progress bar with rate and ETA on stderr, and the summary', async () => {
    const l = await linkedLine(s, { saldo: 100 });
    const csv = campaign(20);
    const r = await cli.spawnTty(cliCommandLine(['send', 'bulk', csv, '--text', 'Hola {nombre}']), { env: { PASARELA_KEY: l.celularKey } });
    expect(r.exitCode, String(r.stdout)).toBe(0);
    const out = String(r.stdout);
    expect(out).toMatch(/20\/20 rows \| [0-9.]+ rows\/s \| ETA/);
    expect(out).toMatch(/20 of 20 rows accepted, 0 refused, 0 not sent/);
    expect(out).not.toContain('"row"');
    expect(await count(l)).toBe(20);
  });

  it("the README's Campaigns block runs as written (with a client key in the environment)", async () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    const section = readme.slice(readme.indexOf('\n## Campaigns\n'), readme.indexOf('\n## Incoming messages\n'));
    const block = /```sh\n([\s\S]*?)```/.exec(section)?.[1];
    expect(block).toBeDefined();
    const l = await linkedLine(s, { saldo: 100 });
    const cwd = tempDir('pasarela-campaign-');
    const script = `set -euo pipefail\n${block!.replaceAll('npx pasarela', `node ${BIN}`)}`;
    const r = await execa('bash', ['-c', script], { cwd, reject: false, timeout: 120_000, env: cli.env({ PASARELA_KEY: l.clientKey }), extendEnv: false });
    expect(r.exitCode, `${r.stdout}\n${r.stderr}`).toBe(0);
    expect(r.stdout).toContain('every row was accepted');
    const rows = ndjson(readFileSync(join(cwd, 'resultado.ndjson'), 'utf8'));
    expect(rows.map((x) => x.ok)).toEqual([true, true]);
    // The dry run sent nothing and the rerun sent nothing twice.
    expect(await count(l)).toBe(2);
  });
});
