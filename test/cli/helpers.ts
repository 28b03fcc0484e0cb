import { accessSync, constants, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable, Writable } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
import { fileURLToPath } from 'node:url';
import { execa, type ResultPromise } from 'execa';
import { expect } from 'vitest';
import { main } from '../../src/cli/main.js';
import type { HttpTransport } from '../../src/cli/client.js';
import type { IO } from '../../src/cli/io.js';
import { until as poll } from '../helpers/poll.js';

/**
 * Runs the CLI with an isolated environment: its own HOME and config
 * directory, none of the caller's PASARELA_* / NO_COLOR / FORCE_COLOR.
 * `Cli.run` calls `main(argv, io, env)` of the TypeScript source in this
 * process with fake IO (no build needed); `Cli.runBinary`, `spawn` and
 * `spawnTty` start the real binary (bin/pasarela, which imports dist/), for
 * what only the shim does: its exit, signals, a terminal, a closed pipe, and
 * `serve`. Those need `npm run build` first (npm test does it).
 */
export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const BIN = join(ROOT, 'bin', 'pasarela');

/** Throws unless dist/ is built: for the tests that start the binary. */
export function needBuild(): void {
  if (!existsSync(join(ROOT, 'dist', 'cli', 'main.js'))) {
    throw new Error('dist/ is missing: run `npm run build` before the CLI tests that start the binary (npm test does it)');
  }
}

/** A stream that keeps everything written to it as text. */
class TextSink extends Writable {
  text = '';
  private readonly decoder = new StringDecoder('utf8');
  override _write(chunk: Buffer | string, _enc: BufferEncoding, cb: (err?: Error | null) => void): void {
    this.text += typeof chunk === 'string' ? chunk : this.decoder.write(chunk);
    cb();
  }
}

/** IO off a terminal whose output is kept as text: stdin is `input`, or empty like /dev/null. */
export function fakeIO(input?: string): { io: IO; stdout: () => string; stderr: () => string } {
  const stdout = new TextSink();
  const stderr = new TextSink();
  const io: IO = {
    stdout,
    stderr,
    stdin: Readable.from(input !== undefined ? [input] : []),
    stdoutIsTTY: false,
    stderrIsTTY: false,
    stdinIsTTY: false,
  };
  return { io, stdout: () => stdout.text, stderr: () => stderr.text };
}

/** `serve` reads commander's env-backed options from process.env: it always runs as the binary. */
const isServe = (args: string[]) => args.find((a) => !a.startsWith('-')) === 'serve';

export type EnvPatch = Record<string, string | undefined>;

export interface RunResult {
  exitCode: number;
  stdout: string;
  stderr: string;
}

export interface RunOptions {
  /** Added to (or, with undefined, removed from) the base environment. */
  env?: EnvPatch;
  /** Written to stdin; without it stdin is /dev/null (in-process: an empty stream). */
  input?: string;
  /** The binary is killed after this long (25 s unless given); an in-process run is bounded by the test's timeout. */
  timeoutMs?: number;
}

const executable = (file: string) => {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
};

/**
 * Is `tool` an executable on PATH? (Looked up without a child process, so the
 * fast lane may import this file.) Where it is missing its tests are skipped,
 * except under CI=true: there the test file fails, naming the tool (.ci/run
 * installs script, zsh and fish).
 */
export function hasTool(tool: string): boolean {
  const found = (process.env.PATH ?? '').split(':').some((dir) => dir !== '' && executable(join(dir, tool)));
  if (!found && /^(1|true|yes)$/i.test(process.env.CI ?? '')) {
    throw new Error(`\`${tool}\` is not on PATH: under CI=true its tests fail instead of being skipped (.ci/run installs it)`);
  }
  return found;
}

/** Is util-linux `script` (a pseudo-terminal for the CLI) on PATH? */
export const HAS_SCRIPT = hasTool('script');

export function tempDir(prefix = 'pasarela-cli-'): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

/** One isolated CLI user: a HOME, a config directory, and optionally a server URL in PASARELA_URL. */
export class Cli {
  readonly home = tempDir();
  readonly configDir = join(this.home, 'config');
  readonly configFile = join(this.configDir, 'config.json');

  /** `http`: how commands reach the server in `run` (e.g. test/helpers/inject-http.ts); undici over a socket without it. */
  constructor(
    readonly url?: string,
    readonly http?: HttpTransport,
  ) {}

  env(patch: EnvPatch = {}): Record<string, string> {
    const e: EnvPatch = {
      PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin',
      HOME: this.home,
      LANG: 'C.UTF-8',
      PASARELA_CONFIG_DIR: this.configDir,
      PASARELA_URL: this.url,
      ...patch,
    };
    return Object.fromEntries(Object.entries(e).filter((kv): kv is [string, string] => kv[1] !== undefined));
  }

  /** Starts the CLI binary without waiting for it. */
  spawn(args: string[], opts: RunOptions = {}): ResultPromise<{ reject: false }> {
    needBuild();
    return execa(process.execPath, [BIN, ...args], {
      env: this.env(opts.env),
      extendEnv: false,
      reject: false,
      stripFinalNewline: false,
      timeout: opts.timeoutMs ?? 25_000,
      ...(opts.input !== undefined ? { input: opts.input } : { stdin: 'ignore' as const }),
    });
  }

  /**
   * One invocation in this process: `main` with fake IO (no TTY; stdin is
   * `input`, or empty like /dev/null) and this user's environment. `serve`
   * runs as the binary.
   */
  async run(args: string[], opts: RunOptions = {}): Promise<RunResult> {
    if (isServe(args)) return this.runBinary(args, opts);
    const fake = fakeIO(opts.input);
    const exitCode = await main(args, fake.io, this.env(opts.env), { http: this.http });
    return { exitCode, stdout: fake.stdout(), stderr: fake.stderr() };
  }

  /** One invocation of the binary: for what the shim itself does (its exit code, a closed pipe). */
  async runBinary(args: string[], opts: RunOptions = {}): Promise<RunResult> {
    const r = await this.spawn(args, opts);
    return { exitCode: r.exitCode ?? -1, stdout: String(r.stdout), stderr: String(r.stderr) };
  }

  /**
   * Runs a shell command line under util-linux `script`, so the CLI's stdin,
   * stdout and stderr are a pseudo-terminal. Output is the terminal's (CRLF).
   */
  spawnTty(commandLine: string, opts: RunOptions = {}): ResultPromise<{ reject: false }> {
    needBuild();
    return execa('script', ['-qec', commandLine, '/dev/null'], {
      env: this.env({ TERM: 'xterm-256color', ...opts.env }),
      extendEnv: false,
      reject: false,
      stdin: 'ignore',
      stripFinalNewline: false,
      timeout: opts.timeoutMs ?? 25_000,
    }) as ResultPromise<{ reject: false }>;
  }

  cleanup(): void {
    rmSync(this.home, { recursive: true, force: true });
  }
}

/** A shell-quoted `node bin/pasarela ARGS` for `script -c`. */
export function cliCommandLine(args: string[]): string {
  const q = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
  return [process.execPath, BIN, ...args].map(q).join(' ');
}

export const ESC = '\u001b';
/** SGR (colour/style) escape sequences; cursor movement is something else. */
export const SGR = /\u001b\[[0-9;]*m/;

/** Exit 0, nothing on stderr, and stdout is exactly one JSON document; returns it. */
export function expectJsonOnly(r: RunResult): any {
  expect(r.stderr, 'stderr of a --json command').toBe('');
  expect(r.exitCode, r.stderr).toBe(0);
  let parsed: unknown;
  expect(() => (parsed = JSON.parse(r.stdout)), `stdout is one JSON document:\n${r.stdout}`).not.toThrow();
  expect(typeof parsed).toBe('object');
  expect(parsed).not.toBeNull();
  return parsed;
}

/** No escape code at all in either stream. */
export function expectPlain(r: RunResult): void {
  expect(r.stdout.includes(ESC), `ANSI in stdout: ${JSON.stringify(r.stdout)}`).toBe(false);
  expect(r.stderr.includes(ESC), `ANSI in stderr: ${JSON.stringify(r.stderr)}`).toBe(false);
}

/** Exit 0 and plain output (off a TTY); returns stdout. (Not the server tests' expectOk, which checks a response body.) */
export function expectCleanExit(r: RunResult): string {
  expect(r.exitCode, `exit ${r.exitCode}; stderr: ${r.stderr}`).toBe(0);
  expectPlain(r);
  return r.stdout;
}

/** Tab-separated lines of stdout, split into cells. */
export function rows(stdout: string): string[][] {
  return stdout
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => l.split('\t'));
}

/** `key\tvalue` lines of printFields off a TTY, as a map. */
export function fields(stdout: string): Record<string, string> {
  return Object.fromEntries(rows(stdout).map((r) => [r[0] ?? '', r.slice(1).join('\t')]));
}

/** Resolves with everything read so far once `stream` has produced text matching `re`. */
export function waitForText(stream: NodeJS.ReadableStream | null | undefined, re: RegExp, timeoutMs = 60_000): Promise<string> {
  if (!stream) return Promise.reject(new Error('no stream'));
  return new Promise((resolve, reject) => {
    let seen = '';
    const timer = setTimeout(() => {
      stream.off('data', onData);
      reject(new Error(`timed out waiting for ${re} in: ${JSON.stringify(seen)}`));
    }, timeoutMs);
    const onData = (chunk: Buffer | string) => {
      seen += String(chunk);
      if (re.test(seen)) {
        clearTimeout(timer);
        stream.off('data', onData);
        resolve(seen);
      }
    };
    stream.on('data', onData);
  });
}

/** Polls `fn` until it returns true (the shared poller, with the CLI tests' defaults: 10 s, every 100 ms). */
export async function until(fn: () => Promise<boolean>, timeoutMs = 10_000, stepMs = 100): Promise<void> {
  await poll(fn, { timeoutMs, stepMs });
}

/** Records of ndjson output, and their ids. */
export const ndjson = (stdout: string) =>
  stdout
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
export const ids = (records: Array<Record<string, unknown>>, field = 'msg_id') => records.map((m) => m[field] as string);

/** A loopback port free now (the OS's pick), for a child process that must be told its port. */
export async function freePort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const port = (srv.address() as { port: number }).port;
  await new Promise<void>((r) => srv.close(() => r()));
  return port;
}
