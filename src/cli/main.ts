import { Command, CommanderError, Option } from 'commander';
import { VERSION } from '../version.js';
import { registerAccount } from './commands/account.js';
import { registerAdmin } from './commands/admin.js';
import { registerCelular } from './commands/celular.js';
import { registerGrupo } from './commands/grupo.js';
import { registerCola } from './commands/cola.js';
import { registerCompletion } from './commands/completion.js';
import { completeAs } from './completion.js';
import { addExamples } from './help-examples.js';
import { registerConfig } from './commands/config.js';
import { registerEventos } from './commands/eventos.js';
import { registerHistorial } from './commands/historial.js';
import { registerLogin } from './commands/login.js';
import { registerMensaje } from './commands/mensaje.js';
import { registerMigrate } from './commands/migrate.js';
import { registerRecibidos } from './commands/recibidos.js';
import { registerSend } from './commands/send.js';
import { registerServe } from './commands/serve.js';
import { registerSim } from './commands/sim.js';
import { registerWebhook } from './commands/webhook.js';
import type { HttpTransport } from './client.js';
import { Ctx, type GlobalFlags } from './context.js';
import { CliError, EXIT_HELP } from './exit-codes.js';
import { EXIT } from '../shared/exit-codes.js';
import { makeTerm, type IO } from './io.js';
import { escapeControls, guardLine } from '../shared/terminal-text.js';

export type CtxOf = (cmd: Command) => Ctx;

/** What a caller may hand in besides argv, io and env: the bin passes nothing. */
export interface CliDeps {
  /** How commands reach the service (default undici; tests pass one over Fastify's inject). */
  http?: HttpTransport;
}

/** The whole command tree; also the source of the completion scripts. */
export function buildProgram(io: IO, env: NodeJS.ProcessEnv, deps: CliDeps = {}): Command {
  const program = new Command('pasarela');
  program
    .description('Self-hosted messaging gateway: `pasarela serve` runs the service; every other command is its client.')
    .version(VERSION, '-V, --version')
    .exitOverride()
    // Colour and width from this invocation's io and env, not the process's (main also runs in-process in tests).
    .configureOutput({
      writeOut: (s) => void io.stdout.write(s),
      writeErr: (s) => void io.stderr.write(s),
      getOutHasColors: () => commanderColor(env) ?? (io.stdoutIsTTY && hasColors(io.stdout)),
      getErrHasColors: () => commanderColor(env) ?? (io.stderrIsTTY && hasColors(io.stderr)),
      getOutHelpWidth: () => (io.stdoutIsTTY ? io.columns : undefined) ?? 80,
      getErrHelpWidth: () => (io.stderrIsTTY ? stderrColumns(io.stderr) : undefined) ?? 80,
    })
    .showSuggestionAfterError()
    // Every command's --help lists the global flags too (commander copies this to each subcommand).
    .configureHelp({ showGlobalOptions: true })
    .addOption(new Option('--url <url>', 'server URL (env PASARELA_URL; default http://127.0.0.1:8080)'))
    .addOption(new Option('--key <key>', 'API key: client WAC_..., celular WA_..., or a token (env PASARELA_KEY)'))
    .addOption(completeAs(new Option('--profile <name>', 'saved profile to use (env PASARELA_PROFILE)'), 'profile'))
    .addOption(new Option('--json', 'print JSON only on stdout'))
    .addOption(new Option('--no-color', 'no colours (NO_COLOR is honoured too)'))
    .addHelpText('after', `\n${EXIT_HELP}\n`);

  const ctxOf: CtxOf = (cmd) => {
    const flags = cmd.optsWithGlobals<GlobalFlags & { color?: boolean }>();
    return new Ctx(makeTerm(io, env, flags.color === false), env, flags, deps.http);
  };

  registerServe(program, io, env);
  registerMigrate(program, ctxOf);
  registerLogin(program, ctxOf);
  registerConfig(program, ctxOf);
  registerAccount(program, ctxOf);
  registerCelular(program, ctxOf);
  registerGrupo(program, ctxOf);
  registerSend(program, ctxOf);
  registerMensaje(program, ctxOf);
  registerCola(program, ctxOf);
  registerAdmin(program, ctxOf);
  registerSim(program, ctxOf);
  registerHistorial(program, ctxOf);
  registerRecibidos(program, ctxOf);
  registerWebhook(program, ctxOf);
  registerEventos(program, ctxOf);
  registerCompletion(program, io, env);
  addExamples(program);
  return program;
}

/** Commander's own colour rule (NO_COLOR, FORCE_COLOR, CLICOLOR_FORCE), read from `env`. */
function commanderColor(env: NodeJS.ProcessEnv): boolean | undefined {
  if (env.NO_COLOR || env.FORCE_COLOR === '0' || env.FORCE_COLOR === 'false') return false;
  if (env.FORCE_COLOR || env.CLICOLOR_FORCE !== undefined) return true;
  return undefined;
}

/** A terminal stream's own verdict on colour (tty.WriteStream.hasColors). */
const hasColors = (s: NodeJS.WritableStream) => Boolean((s as { hasColors?: () => boolean }).hasColors?.());
const stderrColumns = (s: NodeJS.WritableStream) => (s as { columns?: number }).columns;

/** Settles when `signal` aborts (never, without one). */
const aborted = (signal: AbortSignal | undefined) =>
  new Promise<void>((resolve) => {
    if (signal?.aborted) resolve();
    else signal?.addEventListener('abort', () => resolve(), { once: true });
  });

/** The longest a closed pipe waits for a command's io.lastWork (a listener's removal takes at most ~10 s). */
const LAST_WORK_MS = 12_000;

/** Settles once the command's io.lastWork has, or after LAST_WORK_MS. */
async function lastWork(io: IO): Promise<void> {
  if (!io.lastWork?.size) return;
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([Promise.allSettled([...io.lastWork]), new Promise<void>((r) => (timer = setTimeout(r, LAST_WORK_MS)))]);
  clearTimeout(timer);
}

/** A body printed under --json, its text shown as text (never obeyed by a terminal). */
function printJson(io: IO, body: unknown): void {
  io.stdout.write(`${guardLine(JSON.stringify(body, null, 2), false)}\n`);
}

/** What --json prints for a usage error (exit 2): the shape of the server's errors, without a server's fields. */
const usageBody = (message: string) => ({ ok: false, error: message, exit_code: EXIT.USAGE });

/**
 * `help send text` as `send text --help`: commander's help command reads one
 * level only, and printed the help of `send`.
 */
function nestedHelp(argv: string[]): string[] {
  const words = argv.slice(1);
  if (argv[0] !== 'help' || words.length < 2 || words.some((w) => w.startsWith('-'))) return argv;
  return [...words, '--help'];
}

/**
 * Runs one invocation and returns its exit code; nothing below calls process.exit.
 * When the reader of our output goes away (`| head -1`, io.closed), it returns
 * 0 at once, whatever the command was doing: the reader took what it wanted,
 * like `git log | head -1` (the shim then ends the process). Only work the
 * command put in io.lastWork (a webhook listener's removal) is waited for.
 * `serve` takes its streams' failures itself (io.takeOutputErrors): for it a
 * closed pipe is no stop signal, its log drops lines and it goes on serving.
 */
export async function main(argv: string[], io: IO, env: NodeJS.ProcessEnv, deps: CliDeps = {}): Promise<number> {
  const program = buildProgram(io, env, deps);
  const jsonMode = argv.includes('--json');
  try {
    const run = program.parseAsync(nestedHelp(argv), { from: 'user' });
    run.catch(() => undefined); // a run left behind by a closed pipe must not reject unhandled
    await Promise.race([run, aborted(io.closed)]);
    if (io.closed?.aborted) await lastWork(io);
    return EXIT.OK;
  } catch (err) {
    if (io.closed?.aborted) {
      await lastWork(io);
      return EXIT.OK;
    }
    if (err instanceof CommanderError) {
      if (err.exitCode === 0 || err.code === 'commander.helpDisplayed' || err.code === 'commander.version') return EXIT.OK;
      // Commander has said it on stderr; --json promises JSON on stdout too.
      if (jsonMode) printJson(io, usageBody(err.message.replace(/^error: /, '')));
      return EXIT.USAGE;
    }
    // Error reasons often quote the server: its control characters are shown, not obeyed (a pipe may end on a terminal).
    const said = (message: string) => escapeControls(message);
    if (err instanceof CliError) {
      if (jsonMode && err.body !== undefined) printJson(io, err.body);
      // A usage error is found before any request and any output: under --json it is JSON too (D-156).
      else if (jsonMode && err.exitCode === EXIT.USAGE) printJson(io, usageBody(err.message));
      io.stderr.write(`error: ${said(err.message)}\n`);
      return err.exitCode;
    }
    if ((err as { name?: string }).name === 'ExitPromptError') {
      io.stderr.write('cancelled\n');
      return EXIT.INTERRUPTED;
    }
    io.stderr.write(`error: ${said((err as Error).message ?? String(err))}\n`);
    return EXIT.ERROR;
  }
}
