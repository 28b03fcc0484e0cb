import { execa } from 'execa';
import type { Cli, EnvPatch } from './helpers.js';

/**
 * Runs a command line under util-linux `script` (a pseudo-terminal, as
 * Cli.spawnTty) and answers its prompts: when the terminal has shown text
 * matching a pattern, the answer is typed (with Enter). Answers go in order,
 * each once. Resolves with the terminal's output and the exit code.
 */
export async function runTtyAnswering(
  cli: Cli,
  commandLine: string,
  answers: Array<[RegExp, string]>,
  env: EnvPatch = {},
): Promise<{ exitCode: number; output: string }> {
  const proc = execa('script', ['-qec', commandLine, '/dev/null'], {
    env: cli.env({ TERM: 'xterm-256color', ...env }),
    extendEnv: false,
    reject: false,
    stdin: 'pipe',
    stripFinalNewline: false,
    timeout: 25_000,
  });
  let seen = '';
  let next = 0;
  proc.stdout.on('data', (chunk: Buffer) => {
    seen += String(chunk);
    const a = answers[next];
    if (a && a[0].test(seen)) {
      next += 1;
      seen = '';
      proc.stdin.write(`${a[1]}\r`);
    }
  });
  const r = await proc;
  return { exitCode: r.exitCode ?? -1, output: String(r.stdout) };
}
