import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, Cli, hasTool, ROOT, type RunResult } from './helpers.js';

/**
 * `pasarela completion bash|zsh|fish`: no server needed, no config touched.
 * Each script is run by its shell against a directory holding files and a
 * saved config holding profiles (fish and zsh when installed; their text is
 * checked either way).
 */
let cli: Cli;
let bash: RunResult;
let zsh: RunResult;
let fish: RunResult;
/** The working directory of the completions: two files and a directory. */
let work: string;
/** PATH with `pasarela` (the built binary) first, so the scripts can ask it for profile names. */
let env: Record<string, string>;

// Skipped where missing, except under CI=true (hasTool throws there).
const HAS_FISH = hasTool('fish');
const HAS_ZSH = hasTool('zsh');

beforeAll(async () => {
  cli = new Cli('http://127.0.0.1:1');
  [bash, zsh, fish] = await Promise.all([cli.run(['completion', 'bash']), cli.run(['completion', 'zsh']), cli.run(['completion', 'fish'])]);
  work = join(cli.home, 'work');
  mkdirSync(join(work, 'data'), { recursive: true });
  writeFileSync(join(work, 'foo.png'), 'x');
  writeFileSync(join(work, 'fob.txt'), 'x');
  const bin = join(cli.home, 'bin');
  mkdirSync(bin);
  symlinkSync(BIN, join(bin, 'pasarela'));
  mkdirSync(cli.configDir, { recursive: true });
  writeFileSync(cli.configFile, JSON.stringify({ current: 'default', profiles: { default: {}, prod: { url: 'http://x' }, staging: {} } }));
  env = { ...cli.env(), PATH: `${bin}:${process.env.PATH ?? '/usr/bin:/bin'}` };
  writeFileSync(join(cli.home, 'pasarela.bash'), bash.stdout);
  writeFileSync(join(cli.home, 'pasarela.fish'), fish.stdout);
  mkdirSync(join(cli.home, 'zfunc'));
  writeFileSync(join(cli.home, 'zfunc', '_pasarela'), zsh.stdout);
});
afterAll(() => cli?.cleanup());

/** What the bash function puts in COMPREPLY for these words (the last one is being completed), sorted. */
async function bashComplete(...words: string[]): Promise<string[]> {
  const script = `source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(( $# - 1 )); _pasarela; printf '%s\\n' "\${COMPREPLY[@]}"`;
  const r = await execa('bash', ['--norc', '--noprofile', '-c', script, 'bash', join(cli.home, 'pasarela.bash'), 'pasarela', ...words], {
    extendEnv: false,
    env,
    cwd: work,
  });
  return r.stdout.split('\n').filter(Boolean).sort();
}

/** fish's `complete -C` for a command line: the candidates, without descriptions, sorted. */
async function fishComplete(line: string): Promise<string[]> {
  const r = await execa('fish', ['--no-config', '-c', `source ${join(cli.home, 'pasarela.fish')}; complete -C ${JSON.stringify(line)}`], {
    extendEnv: false,
    env,
    cwd: work,
  });
  return r.stdout
    .split('\n')
    .filter(Boolean)
    .map((l) => l.split('\t')[0]!)
    .sort();
}

/** What zsh's completion system offers (a pseudo-terminal; see test/helpers/zsh-capture.zsh). */
async function zshComplete(line: string): Promise<string[]> {
  const r = await execa('zsh', ['-f', join(ROOT, 'test', 'helpers', 'zsh-capture.zsh'), join(cli.home, 'zfunc'), line], {
    extendEnv: false,
    env,
    cwd: work,
    timeout: 15_000,
  });
  return [
    ...new Set(
      r.stdout
        .split('\n')
        .map((l) => l.trim())
        .filter(Boolean),
    ),
  ].sort();
}

describe('completion', () => {
  it('prints a script for each shell on stdout, exit 0', () => {
    for (const r of [bash, zsh, fish]) {
      expect(r.exitCode).toBe(0);
      expect(r.stderr).toBe('');
    }
    expect(bash.stdout).toContain('complete -F _pasarela pasarela');
    expect(bash.stdout).toContain('_pasarela()');
    expect(zsh.stdout.startsWith('#compdef pasarela\n')).toBe(true);
    expect(zsh.stdout).toContain('compdef _pasarela pasarela');
    expect(fish.stdout).toContain(`complete -c pasarela -n '__pasarela_is ""' -f -a 'celular'`);
    expect(fish.stdout).toMatch(/complete -c pasarela -n '__pasarela_under "celular qr"' -l wait/);
  });

  it('an unknown shell exits 2 and names the choices', async () => {
    const r = await cli.run(['completion', 'tcsh']);
    expect(r.exitCode).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain('bash, zsh, fish');
  });

  it('the hidden `__complete profiles` prints the saved profile names, and nothing without a config', async () => {
    const r = await execa(process.execPath, [BIN, '__complete', 'profiles'], { extendEnv: false, env, reject: false });
    expect(r.exitCode).toBe(0);
    expect(r.stdout.split('\n').sort()).toEqual(['default', 'prod', 'staging']);
    const none = await execa(process.execPath, [BIN, '__complete', 'profiles'], {
      extendEnv: false,
      env: { ...env, PASARELA_CONFIG_DIR: join(cli.home, 'nothing') },
      reject: false,
    });
    expect(none.exitCode).toBe(0);
    expect(none.stdout).toBe('');
    // Hidden: not offered, not in the help.
    expect(await bashComplete('__')).toEqual([]);
    expect((await cli.run(['--help'])).stdout).not.toContain('__complete');
  });

  it('each script is valid syntax for its shell', async () => {
    expect((await execa('bash', ['-n', join(cli.home, 'pasarela.bash')], { reject: false })).exitCode).toBe(0);
    if (HAS_FISH) expect((await execa('fish', ['--no-config', '-n', join(cli.home, 'pasarela.fish')], { reject: false })).exitCode).toBe(0);
    if (HAS_ZSH) expect((await execa('zsh', ['-n', join(cli.home, 'zfunc', '_pasarela')], { reject: false })).exitCode).toBe(0);
  });

  it('fish and zsh offer files only where a file fits (checked on the text)', () => {
    // No blanket "no files" line: that would turn file completion off for `send image` too.
    expect(fish.stdout).not.toMatch(/^complete -c pasarela -f$/m);
    expect(fish.stdout).toMatch(/^complete -c pasarela -n '__pasarela_arg "send image" 1' -F/m);
    expect(fish.stdout).toMatch(/^complete -c pasarela -n '__pasarela_arg "send image" 0' -f/m);
    expect(fish.stdout).toMatch(/^complete -c pasarela -n '__pasarela_is "info"' -f$/m);
    expect(fish.stdout).toMatch(/-l data-dir -r -f -a '\(__fish_complete_directories/);
    expect(fish.stdout).toMatch(/-l profile -r -f -a '\(__pasarela_profiles\)'/);
    expect(zsh.stdout).toMatch(/f\) _files ;;/);
    expect(zsh.stdout).toMatch(/d\) _files -\/ ;;/);
    expect(zsh.stdout).toContain(`['_ send image']='- f'`);
  });
});

describe('bash', () => {
  it('completes commands, subcommands and options', async () => {
    expect(await bashComplete('cel')).toEqual(['celular']);
    expect(await bashComplete('celular', 's')).toEqual(['show', 'status']);
    expect(await bashComplete('celular', 'qr', '--w')).toEqual(['--wait']);
    expect(await bashComplete('admin', 'client', '')).toEqual(['create', 'edit', 'list', 'rotate-key', 'show']);
    // Global options everywhere; a group's option below it (`admin client list --admin-token T`).
    expect(await bashComplete('info', '--js')).toEqual(['--json']);
    expect(await bashComplete('admin', 'client', 'list', '--adm')).toEqual(['--admin-token']);
    // An option's value is not taken for a command: `--profile celular` is a profile named celular.
    expect(await bashComplete('--profile', 'prod', 'celular', 'sh')).toEqual(['show']);
  });

  it('completes files where a file fits, and nothing else there', async () => {
    expect(await bashComplete('send', 'image', '5215512345678', './fo')).toEqual(['./fob.txt', './foo.png']);
    expect(await bashComplete('send', 'document', '5215512345678', '')).toEqual(['data', 'fob.txt', 'foo.png']);
    // The recipient and an id are not files.
    expect(await bashComplete('send', 'image', 'fo')).toEqual([]);
    expect(await bashComplete('celular', 'show', 'fo')).toEqual([]);
    expect(await bashComplete('info', '')).toEqual([]);
    // --data-dir: directories only.
    expect(await bashComplete('serve', '--data-dir', '')).toEqual(['data']);
    expect(await bashComplete('admin', 'client', 'list', '--data-dir', 'd')).toEqual(['data']);
    // migrate --from sqlite:PATH (bash splits the word at the colon).
    expect(await bashComplete('migrate', '--from', 'sq')).toEqual(['sqlite', 'sqlite:']);
    expect(await bashComplete('migrate', '--from', 'sqlite', ':', 'd')).toEqual(['data']);
    expect(await bashComplete('migrate', '--from', 'sqlite', ':')).toEqual(['data', 'fob.txt', 'foo.png']);
  });

  it('completes the values of enumerated options and arguments', async () => {
    expect(await bashComplete('historial', '--format', '')).toEqual(['csv', 'json', 'ndjson', 'table']);
    expect(await bashComplete('historial', '--format', '=', 'c')).toEqual(['csv']);
    expect(await bashComplete('historial', '--format=n')).toEqual(['--format=ndjson']);
    expect(await bashComplete('historial', '--estado', 'e')).toEqual(['entregado', 'enviado', 'error']);
    expect(await bashComplete('admin', 'client', 'create', '--plan', '')).toEqual(['ilimitado', 'medido']);
    expect(await bashComplete('celular', 'edit', '3', '--estado', 's')).toEqual(['suspendido']);
    expect(await bashComplete('serve', '--gateway', '')).toEqual(['baileys', 'evolution', 'sim', 'waha']);
    expect(await bashComplete('webhook', 'set', 'http://x', '--eventos', 'all,mess')).toEqual(['all,message.status', 'all,messages.received']);
    expect(await bashComplete('completion', '')).toEqual(['bash', 'fish', 'zsh']);
    expect(await bashComplete('config', 'get', '')).toEqual(['admin_token', 'data_dir', 'key', 'url']);
    expect(await bashComplete('config', 'set', 'k')).toEqual(['key']);
  });

  it('completes profile names from the saved config', async () => {
    expect(await bashComplete('--profile', '')).toEqual(['default', 'prod', 'staging']);
    expect(await bashComplete('celular', 'list', '--profile', 'p')).toEqual(['prod']);
    expect(await bashComplete('config', 'use', 's')).toEqual(['staging']);
    expect(await bashComplete('config', 'rm', 'p')).toEqual(['prod']);
  });
});

describe.skipIf(!HAS_FISH)('fish (installed)', () => {
  it('completes commands, files where they fit, values and profiles', async () => {
    expect(await fishComplete('pasarela cel')).toEqual(['celular']);
    expect(await fishComplete('pasarela send image 5215512345678 ./fo')).toEqual(['./fob.txt', './foo.png']);
    expect(await fishComplete('pasarela send image fo')).toEqual([]);
    expect(await fishComplete('pasarela info ')).toEqual([]);
    expect(await fishComplete('pasarela serve --data-dir ')).toEqual(['data/']);
    expect(await fishComplete('pasarela migrate --from sqlite:d')).toEqual(['sqlite:data/']);
    expect(await fishComplete('pasarela historial --format ')).toEqual(['csv', 'json', 'ndjson', 'table']);
    expect(await fishComplete('pasarela webhook set http://x --eventos all,mess')).toEqual(['all,message.status', 'all,messages.received']);
    expect(await fishComplete('pasarela --profile ')).toEqual(['default', 'prod', 'staging']);
    expect(await fishComplete('pasarela config get ')).toEqual(['admin_token', 'data_dir', 'key', 'url']);
    expect(await fishComplete('pasarela config rm p')).toEqual(['prod']);
    expect(await fishComplete('pasarela admin client list --adm')).toEqual(['--admin-token']);
  });
});

describe.skipIf(!HAS_ZSH)('zsh (installed)', () => {
  it('completes commands, files where they fit, values and profiles', async () => {
    expect(await zshComplete('pasarela cel')).toEqual(['celular']);
    const files = await zshComplete('pasarela send image 5215512345678 ./fo');
    expect(files).toEqual(expect.arrayContaining(['fob.txt', 'foo.png']));
    expect(await zshComplete('pasarela celular show ')).toEqual([]);
    expect(await zshComplete('pasarela info ')).toEqual([]);
    expect(await zshComplete('pasarela serve --data-dir ')).toContain('data');
    expect(await zshComplete('pasarela historial --format ')).toEqual(['csv', 'json', 'ndjson', 'table']);
    expect(await zshComplete('pasarela historial --format=n')).toEqual(['--format=ndjson']);
    expect(await zshComplete('pasarela --profile ')).toEqual(['default', 'prod', 'staging']);
    expect(await zshComplete('pasarela config get ')).toEqual(['admin_token', 'data_dir', 'key', 'url']);
    expect(await zshComplete('pasarela config rm p')).toEqual(['prod']);
    expect(await zshComplete('pasarela admin client list --adm')).toEqual(['--admin-token']);
  });
});
