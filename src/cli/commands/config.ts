import type { Command } from 'commander';
import { confirmOrYes } from '../confirm.js';
import type { Ctx } from '../context.js';
import { usage } from '../exit-codes.js';
import type { CtxOf } from '../main.js';
import { emit, printTable } from '../output.js';
import { mask, PROFILE_FIELDS, SECRET_FIELDS, type ProfileField } from '../settings.js';
import { readSecretStdin } from './login.js';

function field(name: string): ProfileField {
  if (!(PROFILE_FIELDS as readonly string[]).includes(name)) throw usage(`unknown setting "${name}"; settings: ${PROFILE_FIELDS.join(', ')}`);
  return name as ProfileField;
}

export function runConfigList(ctx: Ctx): void {
  const s = ctx.settings();
  const profiles = s.profiles();
  const masked = Object.fromEntries(
    Object.entries(profiles).map(([n, p]) => [
      n,
      Object.fromEntries(Object.entries(p).map(([k, v]) => [k, SECRET_FIELDS.has(k as ProfileField) ? mask(v) : v])),
    ]),
  );
  emit(ctx, { ok: true, current: s.current, path: s.path, profiles: masked }, () =>
    printTable(
      ctx.term,
      ['', 'profile', ...PROFILE_FIELDS],
      Object.entries(masked).map(([n, p]) => [n === s.current ? '*' : '', n, ...PROFILE_FIELDS.map((f) => (p as Record<string, string>)[f])]),
    ),
  );
}

export interface ConfigGetOptions {
  setting: string;
}

export function runConfigGet(o: ConfigGetOptions, ctx: Ctx): void {
  const f = field(o.setting);
  const v = ctx.profile()[f];
  const shown = SECRET_FIELDS.has(f) ? mask(v) : (v ?? '');
  emit(ctx, { ok: true, profile: ctx.profileName(), setting: f, value: shown }, () => ctx.term.out(shown));
}

export interface ConfigSetOptions {
  setting: string;
  value?: string;
  keyStdin?: boolean;
}

export async function runConfigSet(o: ConfigSetOptions, ctx: Ctx): Promise<void> {
  ctx.creatingProfile = true;
  const f = field(o.setting);
  let value = o.value;
  if (o.keyStdin) {
    if (value !== undefined) throw usage('give the value or --key-stdin, not both');
    if (!SECRET_FIELDS.has(f)) throw usage(`--key-stdin is for key and admin_token; give the ${f} as an argument`);
    value = await readSecretStdin(ctx, '--key-stdin');
  } else if (value === undefined) {
    throw usage(`missing the value of ${f}${SECRET_FIELDS.has(f) ? ' (or --key-stdin to read it from standard input)' : ''}`);
  }
  if (f === 'url' && !/^https?:\/\//.test(value)) throw usage('url must start with http:// or https://');
  ctx.settings().update(ctx.profileName(), { [f]: value });
  emit(ctx, { ok: true, profile: ctx.profileName(), setting: f }, () => ctx.term.err(`${f} saved in profile "${ctx.profileName()}"`));
}

export interface ConfigUnsetOptions {
  setting: string;
}

export function runConfigUnset(o: ConfigUnsetOptions, ctx: Ctx): void {
  const f = field(o.setting);
  ctx.settings().update(ctx.profileName(), { [f]: undefined });
  emit(ctx, { ok: true, profile: ctx.profileName(), setting: f }, () => ctx.term.err(`${f} removed from profile "${ctx.profileName()}"`));
}

export interface ConfigUseOptions {
  profile: string;
}

export function runConfigUse(o: ConfigUseOptions, ctx: Ctx): void {
  const name = o.profile;
  if (!(name in ctx.settings().profiles())) throw usage(`no saved profile "${name}"; saved: ${Object.keys(ctx.settings().profiles()).join(', ') || 'none'}`);
  ctx.settings().setCurrent(name);
  emit(ctx, { ok: true, current: name }, () => ctx.term.err(`current profile: ${name}`));
}

export interface ConfigRemoveOptions {
  profile: string;
  yes?: boolean;
}

export async function runConfigRemove(o: ConfigRemoveOptions, ctx: Ctx): Promise<void> {
  const name = o.profile;
  const s = ctx.settings();
  const p = s.profiles()[name];
  if (!p) throw usage(`no saved profile "${name}"; saved: ${Object.keys(s.profiles()).join(', ') || 'none'}`);
  const held = [p.url ? `URL ${p.url}` : '', p.key ? 'a key' : '', p.admin_token ? 'an operator token' : ''].filter(Boolean).join(', ');
  const sure = await confirmOrYes(ctx, o.yes, () => `Delete profile "${name}"${held ? ` (${held})` : ''}? This cannot be undone.`, 'nothing deleted');
  if (!sure) return;
  const wasCurrent = s.current === name;
  s.remove(name);
  // The current profile must name one that exists, or the unnamed default.
  if (wasCurrent) s.setCurrent('default');
  emit(ctx, { ok: true, removed: name, current: s.current }, () =>
    ctx.term.err(`Deleted profile "${name}".${wasCurrent && name !== 'default' ? ' The current profile is now "default".' : ''}`),
  );
}

export function runConfigPath(ctx: Ctx): void {
  emit(ctx, { ok: true, path: ctx.settings().path }, () => ctx.term.out(ctx.settings().path));
}

/** `pasarela config`: the saved profiles. Secrets are shown masked. */
export function registerConfig(program: Command, ctxOf: CtxOf): void {
  const config = program.command('config').description('saved profiles: server URL, key, operator token, data directory');

  config
    .command('list')
    .description('every profile and its settings (secrets masked)')
    .action(async (_o, cmd: Command) => runConfigList(ctxOf(cmd)));

  config
    .command('get <setting>')
    .description(`one setting of the profile (${PROFILE_FIELDS.join(', ')}); secrets masked`)
    .action(async (setting: string, _o, cmd: Command) => runConfigGet({ setting }, ctxOf(cmd)));

  config
    .command('set <setting> [value]')
    .description('set one setting of the profile')
    .option('--key-stdin', 'read the value of key or admin_token from standard input (keeps it out of shell history and the process list)')
    .action((setting: string, value: string | undefined, o: { keyStdin?: boolean }, cmd: Command) => runConfigSet({ setting, value, ...o }, ctxOf(cmd)));

  config
    .command('unset <setting>')
    .description('remove one setting of the profile')
    .action(async (setting: string, _o, cmd: Command) => runConfigUnset({ setting }, ctxOf(cmd)));

  config
    .command('use <profile>')
    .description('make a profile the current one')
    .action(async (profile: string, _o, cmd: Command) => runConfigUse({ profile }, ctxOf(cmd)));

  config
    .command('remove <profile>')
    .alias('rm')
    .description('delete a saved profile and everything in it; asks first on a TTY')
    .option('-y, --yes', 'do not ask for confirmation')
    .action((profile: string, o: { yes?: boolean }, cmd: Command) => runConfigRemove({ profile, ...o }, ctxOf(cmd)));

  config
    .command('path')
    .description('where the profiles are saved')
    .action(async (_o, cmd: Command) => runConfigPath(ctxOf(cmd)));
}
