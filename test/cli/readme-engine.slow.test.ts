import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterEach, describe, expect, it } from 'vitest';
import { BIN, HAS_SCRIPT, ROOT, tempDir, until, freePort } from './helpers.js';

/**
 * The README's "Try the engine without a phone", run as written (issue 37):
 * `npm run fakewa` in a first terminal, `serve` on the engine in a second,
 * a client, a line and its QR view in a third (a pseudo-terminal, so the view
 * is drawn and followed as a user sees it), the scan, the send and what the
 * contact decrypted in a fourth. Only what the fake printed (its preload, CA
 * and ws URL), free ports, a temporary data dir and HOME are put in, and
 * `npx pasarela` becomes `node bin/pasarela` (npx's first run waits up to a
 * minute for an unreachable registry: not what this is about). Ctrl-C
 * (SIGINT to each terminal's process group) stops the fake and `serve`.
 */
const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
const HAS_CURL = spawnSync('sh', ['-c', 'command -v curl'], { stdio: 'ignore' }).status === 0;
const TITLE = '### Try the engine without a phone';

function section(): string {
  const at = readme.indexOf(TITLE);
  if (at < 0) throw new Error(`README.md has no "${TITLE}" section`);
  const next = readme.indexOf('\n## ', at);
  return readme.slice(at, next < 0 ? undefined : next);
}
const blocks = [...section().matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!);

/** What each block must still hold for the substitutions below to mean anything. */
const SHAPE: { name: string; holds: string[] }[] = [
  { name: 'first terminal (the fake)', holds: ['npm run fakewa'] },
  {
    name: 'second terminal (serve)',
    holds: [
      'NODE_OPTIONS=--import=/tmp/fakewa-XXXX/trust-fakewa.mjs',
      'NODE_EXTRA_CA_CERTS=/tmp/fakewa-XXXX/media-ca.pem',
      'PASARELA_DATA_DIR=/tmp/pasarela-fake',
      'npm start -- --gateway baileys --baileys-ws-url ws://127.0.0.1:PORT/ws/chat',
    ],
  },
  {
    name: 'third terminal (client, line, QR view)',
    holds: [
      'export PASARELA_DATA_DIR=/tmp/pasarela-fake',
      'npx pasarela login --key-stdin',
      'npx pasarela celular create 5215512345678',
      'npx pasarela celular qr 1',
    ],
  },
  { name: 'fourth terminal (the scan)', holds: ['export PASARELA_DATA_DIR=/tmp/pasarela-fake', '$(npx pasarela celular qr 1)', 'http://127.0.0.1:7787/scan'] },
  { name: 'the send', holds: ['npx pasarela send text 34600111222 "hola" --directo', 'http://127.0.0.1:7787/contacts/34600111222/received'] },
];

const portFree = (port: number) =>
  new Promise<boolean>((resolve) => {
    const srv = createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
  });

/** A terminal: its own process group (as a shell's job), its output kept. */
interface Terminal {
  child: ChildProcess;
  out: () => string;
  exited: Promise<number | null>;
}
const started: Terminal[] = [];

function terminal(file: string, args: string[], env: Record<string, string>): Terminal {
  const child = spawn(file, args, { cwd: ROOT, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  const t = { child, out: () => out, exited };
  started.push(t);
  return t;
}

const alive = (t: Terminal) => t.child.exitCode === null && t.child.signalCode === null;

afterEach(() => {
  // Whatever a failed run left: its groups, killed by their own ids.
  for (const t of started.splice(0)) if (alive(t) && t.child.pid) process.kill(-t.child.pid, 'SIGKILL');
});

describe('README: Try the engine without a phone', () => {
  it('has its five sh blocks in the shape this test runs', () => {
    expect(blocks.length, `"${TITLE}" has ${blocks.length} sh blocks; this test runs 5: update both`).toBe(5);
    SHAPE.forEach((b, i) => {
      for (const h of b.holds) {
        expect(blocks[i], `README "${TITLE}", block ${i + 1} (${b.name}) no longer holds \`${h}\`: this test substitutes it (update both)`).toContain(h);
      }
    });
    // The README's control port is the fake's default one.
    expect(readFileSync(join(ROOT, 'test/fakewa/run.ts'), 'utf8')).toContain('FAKEWA_CONTROL_PORT ?? 7787');
  });

  it.skipIf(!HAS_CURL || !HAS_SCRIPT)(
    'runs as written: the line turns connected, the direct send is enviado, the contact decrypted "hola", nothing left running',
    async () => {
      expect(blocks.length, 'the section changed shape: see the test above').toBe(SHAPE.length);
      const [controlPort, servePort] = [await freePort(), await freePort()];
      const home = tempDir('pasarela-readme-engine-');
      const dataDir = join(home, 'pasarela-fake');
      // A new user's shell: none of this run's PASARELA_*, npm_*, NODE_OPTIONS or test settings.
      const base = Object.fromEntries(
        Object.entries(process.env).filter(
          ([k, v]) => v !== undefined && !/^(PASARELA_|npm_|VITEST|NODE_OPTIONS$|NODE_ENV$|TEST$|FORCE_COLOR$|NO_COLOR$)/.test(k),
        ),
      ) as Record<string, string>;
      const env = { ...base, HOME: home, LANG: 'C.UTF-8' };
      const cli = (block: string) =>
        block.replaceAll('/tmp/pasarela-fake', dataDir).replaceAll('npx pasarela', `node ${BIN}`).replaceAll('127.0.0.1:7787', `127.0.0.1:${controlPort}`);
      const asWritten = (block: string, what: string) => {
        const file = join(home, `${what}.sh`);
        writeFileSync(file, block);
        return file;
      };

      // First terminal: the fake, as the README starts it (npm compiles it, then runs it).
      const fake = terminal('bash', [asWritten(blocks[0]!, 'first')], { ...env, FAKEWA_CONTROL_PORT: String(controlPort) });
      await until(async () => /^pasarela: /m.test(fake.out()) || !alive(fake), 180_000).catch(() => undefined);
      const printed = (re: RegExp) => {
        const v = re.exec(fake.out())?.[1];
        if (!v) throw new Error(`the fake did not print ${re}:\n${fake.out()}`);
        return v;
      };
      const wsUrl = printed(/^fakewa wsUrl\s+(ws:\/\/\S+)$/m);
      const preload = printed(/^fakewa preload\s+(\S+)/m);
      const ca = printed(/^fakewa media CA\s+(\S+)/m);
      expect(printed(/^fakewa control API (\S+)$/m)).toBe(`http://127.0.0.1:${controlPort}/`);

      // Second terminal: serve, with what the fake printed.
      const serveBlock = blocks[1]!
        .replaceAll('/tmp/fakewa-XXXX/trust-fakewa.mjs', preload)
        .replaceAll('/tmp/fakewa-XXXX/media-ca.pem', ca)
        .replaceAll('ws://127.0.0.1:PORT/ws/chat', wsUrl)
        .replaceAll('/tmp/pasarela-fake', dataDir);
      const serve = terminal('bash', [asWritten(serveBlock, 'second')], { ...env, PASARELA_PORT: String(servePort) });
      await until(async () => serve.out().includes(`listening on http://127.0.0.1:${servePort}`) || !alive(serve), 120_000).catch(() => undefined);
      expect(serve.out(), 'serve did not start').toContain(`listening on http://127.0.0.1:${servePort}`);

      // Third terminal, a real one (a pseudo-terminal): the QR is drawn and followed until connected.
      const url = { PASARELA_URL: `http://127.0.0.1:${servePort}` };
      const third = asWritten(cli(blocks[2]!), 'third');
      const view = terminal('script', ['-qec', `stty cols 160 rows 80; bash ${third}`, '/dev/null'], { ...env, ...url, TERM: 'xterm-256color' });
      await until(async () => view.out().includes('Scan with the phone of celular 1') || !alive(view), 120_000).catch(() => undefined);
      expect(view.out(), 'the third terminal drew no QR').toContain('Scan with the phone of celular 1');

      // Fourth: the fake's phone scans the QR's text.
      const run = (block: string, what: string) =>
        execa('bash', [asWritten(cli(block), what)], { cwd: ROOT, env: { ...env, ...url }, extendEnv: false, reject: false, timeout: 120_000 });
      const scan = await run(blocks[3]!, 'fourth');
      expect(scan.exitCode, `${scan.stdout}\n${scan.stderr}`).toBe(0);
      expect(scan.stdout).toContain('{"ok":true}');
      expect(await view.exited, view.out()).toBe(0);
      expect(view.out()).toMatch(/✓ celular 1 is connected/);

      const send = await run(blocks[4]!, 'send');
      expect(send.exitCode, `${send.stdout}\n${send.stderr}`).toBe(0);
      expect(send.stdout).toMatch(/^[0-9a-f-]{36}\tdirecto\tenviado\t\S+$/m);
      const received = JSON.parse(/^\[.*$/m.exec(send.stdout)?.[0] ?? '[]') as {
        message: { extendedTextMessage?: { text?: string }; conversation?: string };
      }[];
      expect(received.map((m) => m.message.extendedTextMessage?.text ?? m.message.conversation)).toEqual(['hola']);

      // Ctrl-C in the second and the first terminal: both stop, their ports are free again.
      for (const t of [serve, fake]) process.kill(-t.child.pid!, 'SIGINT');
      await Promise.all([serve.exited, fake.exited]);
      expect(serve.out()).toContain('pasarela stopped');
      for (const port of [servePort, controlPort, Number(new URL(wsUrl).port)]) {
        await until(async () => portFree(port), 30_000).catch(() => {
          throw new Error(`port ${port} still taken after Ctrl-C`);
        });
      }
      expect(started.filter(alive)).toEqual([]);
    },
    300_000,
  );
});
