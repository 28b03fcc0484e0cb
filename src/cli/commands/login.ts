import type { Command } from 'commander';
import { ApiClient } from '../client.js';
import { DEFAULT_URL } from '../context.js';
import { CliError, EXIT, usage } from '../exit-codes.js';
import type { CtxOf } from '../main.js';
import { emit } from '../output.js';
import { readStdin } from '../io.js';

/**
 * `pasarela login`: saves a server URL and key in a profile after checking
 * them against the server. Prompts on a TTY (the key masked); scripts pass
 * --url and --key, or --with-key to read the key from stdin (keeps it out of
 * shell history and `ps`).
 */
export function registerLogin(program: Command, ctxOf: CtxOf): void {
  program
    .command('login')
    .description('save a server URL and API key in a profile, after checking them')
    .option('--with-key', 'read the key from standard input')
    .action(async (o: { withKey?: boolean }, cmd: Command) => {
      const ctx = ctxOf(cmd);
      ctx.creatingProfile = true;
      const name = ctx.profileName();
      const saved = ctx.profile();
      let url = ctx.flags.url || ctx.env.PASARELA_URL;
      let key = ctx.flags.key || ctx.env.PASARELA_KEY;
      if (o.withKey) {
        key = await readStdin(ctx.term.io.stdin);
        if (!key) throw usage('--with-key: the key read from standard input is empty');
      }
      if (!key) {
        // Without a key there is a person to ask, or a usage error; the URL is asked for with it.
        if (!ctx.term.canPrompt) throw usage('not a terminal: pass --key (or --with-key with the key on stdin), and --url unless the default is right');
        const { input, password } = await import('@inquirer/prompts');
        url ??= await input({ message: 'Server URL', default: saved.url ?? DEFAULT_URL, validate: (v) => /^https?:\/\/\S+$/.test(v.trim()) || 'a URL starting with http:// or https://' });
        key = await password({ message: 'API key (WAC_... or WA_...)', mask: '*', validate: (v) => v.trim() !== '' || 'the key is required' });
      }
      url ??= saved.url ?? DEFAULT_URL;
      key = key.trim();
      if (!key) throw usage('the key is empty');
      const info = await new ApiClient(url).call<{ cliente: { id: number; nombre: string } }>('GET', '/api/info.php', { key }).catch((err: unknown) => {
        if (err instanceof CliError && err.exitCode === EXIT.AUTH) throw new CliError(`the server at ${url} refused this key; nothing saved`, EXIT.AUTH, err.body);
        throw err;
      });
      ctx.settings().update(name, { url, key });
      if (!ctx.flags.profile && !ctx.env.PASARELA_PROFILE) ctx.settings().setCurrent(name);
      const result = { ok: true, profile: name, url, cliente: info.cliente, config: ctx.settings().path };
      emit(ctx, result, () => ctx.term.out(`Logged in to ${url} as client ${info.cliente.id} (${info.cliente.nombre}); saved as profile "${name}".`));
    });
}
