import { Option, type Command } from 'commander';
import { API } from '../../core/api/api-routes.js';
import { DEFAULT_URL, type Ctx } from '../context.js';
import { CliError, usage } from '../exit-codes.js';
import { EXIT } from '../../shared/exit-codes.js';
import type { CtxOf } from '../main.js';
import { emit } from '../output.js';
import { readStdin } from '../io.js';
import { mask } from '../settings.js';

/** Where the key that login saves came from; said back to the person, and in --json. */
type KeyFrom = 'stdin' | 'flag' | 'prompt' | 'env';
const FROM_TEXT: Record<KeyFrom, string> = { stdin: 'standard input', flag: '--key', prompt: 'the prompt', env: 'PASARELA_KEY' };

/**
 * A secret piped in (`--key-stdin`), trimmed: never from a terminal, where
 * it would be echoed as typed (the prompts mask it instead).
 */
export async function readSecretStdin(ctx: Ctx, flag: string): Promise<string> {
  if (ctx.term.io.stdinIsTTY)
    throw usage(`${flag} reads the key from a pipe (printf %s "$KEY" | pasarela ... ${flag}); at a terminal, leave it out and type the key at the prompt`);
  const v = await readStdin(ctx.term.io.stdin);
  if (!v) throw usage(`${flag}: nothing on standard input`);
  return v;
}

export interface LoginOptions {
  keyStdin?: boolean;
  /** The first spelling of --key-stdin. */
  withKey?: boolean;
}

/** Checks the key (and URL) against the server, then saves them in the profile. */
export async function runLogin(o: LoginOptions, ctx: Ctx): Promise<void> {
  ctx.creatingProfile = true;
  const name = ctx.profileName();
  const saved = ctx.profile();
  let url = ctx.flags.url || ctx.env.PASARELA_URL;
  let key: string | undefined;
  let from: KeyFrom = 'prompt';
  if (o.keyStdin || o.withKey) {
    if (ctx.flags.key) throw usage('give --key or --key-stdin, not both');
    key = await readSecretStdin(ctx, '--key-stdin');
    from = 'stdin';
  } else if (ctx.flags.key) {
    key = ctx.flags.key;
    from = 'flag';
  } else if (ctx.env.PASARELA_KEY) {
    if (!ctx.term.canPrompt) {
      throw usage(
        `PASARELA_KEY is set, but login saves a key only when told which: pipe it in with --key-stdin (printf %s "$PASARELA_KEY" | pasarela login --key-stdin) or pass --key`,
      );
    }
    const { confirm } = await import('@inquirer/prompts');
    if (await confirm({ message: `PASARELA_KEY is set (${mask(ctx.env.PASARELA_KEY)}). Save that key in profile "${name}"?`, default: true })) {
      key = ctx.env.PASARELA_KEY;
      from = 'env';
    }
  }
  if (!key) {
    // Without a key there is a person to ask, or a usage error; the URL is asked for with it.
    if (!ctx.term.canPrompt) throw usage('not a terminal: pass --key-stdin (the key on standard input) or --key, and --url unless the default is right');
    const { input, password } = await import('@inquirer/prompts');
    url ??= await input({
      message: 'Server URL',
      default: saved.url ?? DEFAULT_URL,
      validate: (v) => /^https?:\/\/\S+$/.test(v.trim()) || 'a URL starting with http:// or https://',
    });
    // The server first: a wrong URL is told before the key is typed, not after.
    await ctx.client(url.trim()).call('GET', API.health);
    key = await password({ message: 'API key (WAC_... or WA_...)', mask: '*', validate: (v) => v.trim() !== '' || 'the key is required' });
    from = 'prompt';
  }
  url ??= saved.url ?? DEFAULT_URL;
  url = url.trim();
  key = key.trim();
  if (!key) throw usage('the key is empty');
  const checked = url;
  const info = await ctx
    .client(url)
    .call<{ cliente: { id: number; nombre: string } }>('GET', API.info, { key })
    .catch((err: unknown) => {
      if (err instanceof CliError && err.exitCode === EXIT.AUTH)
        throw new CliError(`the server at ${checked} refused this key; nothing saved`, EXIT.AUTH, err.body);
      throw err;
    });
  ctx.settings().update(name, { url, key });
  if (!ctx.flags.profile && !ctx.env.PASARELA_PROFILE) ctx.settings().setCurrent(name);
  const path = ctx.settings().path;
  const result = { ok: true, profile: name, url, cliente: info.cliente, config: path, key: mask(key), key_from: from };
  // A confirmation, not output: stderr, as every command's messages (stdout stays for --json).
  emit(ctx, result, () =>
    ctx.term.err(
      `Logged in to ${url} as client ${info.cliente.id} (${info.cliente.nombre}); saved the URL and the key ${mask(key)} (from ${FROM_TEXT[from]}) as profile "${name}" in ${path}.`,
    ),
  );
}

export function runLogout(ctx: Ctx): void {
  const name = ctx.profileName();
  const p = ctx.profile();
  const removed = Boolean(p.key);
  if (removed) ctx.settings().update(name, { key: undefined });
  emit(ctx, { ok: true, profile: name, removed }, () => {
    ctx.term.err(
      removed ? `Removed the key of profile "${name}"${p.url ? `; its URL (${p.url}) stays` : ''}.` : `Profile "${name}" has no saved key; nothing removed.`,
    );
    const flag = ctx.flags.profile ? ` --profile ${name}` : '';
    if (p.admin_token) ctx.term.err(`It still holds an operator token: \`pasarela config unset admin_token${flag}\` removes it.`);
    if (ctx.env.PASARELA_KEY) ctx.term.err('PASARELA_KEY is still set in this environment, and commands still use it.');
  });
}

/**
 * `pasarela login`: saves a server URL and key in a profile after checking
 * them against the server. The key comes from --key-stdin (kept out of shell
 * history and `ps`), --key, or a masked prompt on a TTY. PASARELA_KEY is
 * never saved unasked: on a TTY login asks first, off one it is a usage error
 * that says how to pass it. `pasarela logout` removes the key again.
 */
export function registerLogin(program: Command, ctxOf: CtxOf): void {
  program
    .command('login')
    .description('save a server URL and API key in a profile, after checking them')
    .option('--key-stdin', 'read the key from standard input (keeps it out of shell history and the process list)')
    // The first spelling of --key-stdin, kept for the scripts that use it.
    .addOption(new Option('--with-key').hideHelp())
    .action((o: LoginOptions, cmd: Command) => runLogin(o, ctxOf(cmd)));

  program
    .command('logout')
    .description('remove the saved key of the profile (its URL and other settings stay)')
    .action(async (_o, cmd: Command) => runLogout(ctxOf(cmd)));
}
