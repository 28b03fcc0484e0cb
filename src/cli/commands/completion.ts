import { Argument, type Command } from 'commander';
import { SHELLS } from '../completion.js';
import type { IO } from '../io.js';

/** `pasarela completion bash|zsh|fish`: prints the script (also committed under completions/). */
export function registerCompletion(program: Command, io: IO): void {
  program
    .command('completion')
    .description('print the shell completion script')
    .addArgument(new Argument('<shell>', 'shell').choices(Object.keys(SHELLS)))
    .action((shell: keyof typeof SHELLS) => {
      io.stdout.write(SHELLS[shell](program));
    });
}
