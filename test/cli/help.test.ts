import { PassThrough, Writable } from 'node:stream';
import type { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { visibleSubcommands } from '../../src/cli/completion.js';
import { EXAMPLES } from '../../src/cli/help-examples.js';
import type { IO } from '../../src/cli/io.js';
import { buildProgram, main } from '../../src/cli/main.js';
import { Cli } from './helpers.js';

/**
 * Every command's --help: the global flags (commander's showGlobalOptions)
 * and an Examples section with the exit-code reference. The tree is walked
 * from buildProgram, so a new command without examples fails here.
 */
function fakeIO(): { io: IO; out: () => string } {
  let text = '';
  const sink = new Writable({
    write(chunk, _enc, cb) {
      text += String(chunk);
      cb();
    },
  });
  return { io: { stdout: sink, stderr: sink, stdin: new PassThrough(), stdoutIsTTY: false, stderrIsTTY: false, stdinIsTTY: false }, out: () => text };
}

/** Every command one can run: those without subcommands, and one with both an action of its own and subcommands (`cola`, `cola cancel`). */
function leaves(cmd: Command, path: string[] = []): string[][] {
  const visible = visibleSubcommands(cmd);
  if (visible.length === 0) return [path];
  const runnable = path.length > 0 && (cmd as unknown as { _actionHandler: unknown })._actionHandler != null;
  return [...(runnable ? [path] : []), ...visible.flatMap((c) => leaves(c, [...path, c.name()]))];
}

const program = buildProgram(fakeIO().io, {});
const all = leaves(program);

describe('--help of every leaf command', () => {
  it('walks a real tree', () => {
    expect(all.length).toBeGreaterThan(40);
    expect(all).toContainEqual(['celular', 'qr']);
  });

  it.each(all.map((p) => [p.join(' ')]))('pasarela %s --help: Global Options, Examples, exit codes', async (name) => {
    const { io, out } = fakeIO();
    const code = await main([...name.split(' '), '--help'], io, {});
    expect(code).toBe(0);
    const help = out();
    expect(help).toContain('Global Options:');
    for (const flag of ['--url', '--key', '--profile', '--json', '--no-color']) expect(help).toContain(flag);
    expect(help).toContain('\nExamples:\n');
    const section = help.slice(help.indexOf('\nExamples:\n') + 11);
    const examples = section.slice(0, section.indexOf('\n\n')).split('\n');
    expect(examples.length).toBeGreaterThanOrEqual(1);
    expect(examples.length).toBeLessThanOrEqual(3);
    // Each example runs the command it documents.
    for (const e of examples) expect(e).toMatch(new RegExp(`^ {2}\\$ .*pasarela ${name}( |$)|pasarela config rm `));
    expect(help).toContain('pasarela --help');
  });

  it('help takes a nested command: `help send text` is `send text --help`, `help admin client create` three levels down', async () => {
    for (const name of ['send text', 'admin client create', 'celular qr']) {
      const viaHelp = fakeIO();
      const viaFlag = fakeIO();
      expect(await main(['help', ...name.split(' ')], viaHelp.io, {})).toBe(0);
      expect(await main([...name.split(' '), '--help'], viaFlag.io, {})).toBe(0);
      expect(viaHelp.out()).toBe(viaFlag.out());
      expect(viaHelp.out()).toContain(`pasarela ${name}`);
    }
    // One level still works as commander has it.
    const one = fakeIO();
    expect(await main(['help', 'send'], one.io, {})).toBe(0);
    expect(one.out()).toMatch(/Usage: pasarela send/);
  });

  it('has no examples for commands that do not exist', () => {
    // Every command, a group with an action of its own (saldo) among them.
    const every = (cmd: Command, path: string[] = []): string[][] => [path, ...visibleSubcommands(cmd).flatMap((c) => every(c, [...path, c.name()]))];
    const names = new Set(every(program).map((p) => p.join(' ')));
    expect(Object.keys(EXAMPLES).filter((k) => !names.has(k))).toEqual([]);
  });

  it('the binary prints the same (admin commands list their group options as global too)', async () => {
    const cli = new Cli();
    try {
      const r = await cli.run(['admin', 'client', 'rotate-key', '--help']);
      expect(r.exitCode).toBe(0);
      expect(r.stdout).toMatch(/Global Options:[\s\S]*--admin-token[\s\S]*--url[\s\S]*Examples:/);
    } finally {
      cli.cleanup();
    }
  });
});
