import { Argument, type Command } from 'commander';
import { SHELLS } from '../completion.js';
import type { IO } from '../io.js';
import { Settings } from '../settings.js';

/**
 * `pasarela completion bash|zsh|fish`: prints the script (also committed under
 * completions/). `pasarela __complete profiles` (hidden) is what the scripts
 * run for the names of the saved profiles: it reads the config file and
 * nothing else, and prints nothing when there is none or it cannot be read.
 */
export function registerCompletion(program: Command, io: IO, env: NodeJS.ProcessEnv): void {
  program
    .command('completion')
    .description('print the shell completion script')
    .addArgument(new Argument('<shell>', 'shell').choices(Object.keys(SHELLS)))
    .action((shell: Shell) => runCompletion({ shell }, io, program));

  program
    .command('__complete', { hidden: true })
    .description('values for the completion scripts')
    .addArgument(new Argument('<what>').choices(['profiles']))
    .action(() => runCompleteProfiles(io, env));
}

type Shell = keyof typeof SHELLS;

export interface CompletionOptions {
  shell: Shell;
}

/** The script for `program`'s command tree. */
export function runCompletion(o: CompletionOptions, io: IO, program: Command): void {
  io.stdout.write(SHELLS[o.shell](program));
}

/** The saved profile names, one a line; nothing when there is no config or it cannot be read. */
export function runCompleteProfiles(io: IO, env: NodeJS.ProcessEnv): void {
  let names: string[] = [];
  try {
    names = Object.keys(new Settings(env).profiles());
  } catch {
    names = [];
  }
  if (names.length > 0) io.stdout.write(`${names.join('\n')}\n`);
}
