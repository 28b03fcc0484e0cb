import type { Command } from 'commander';
import { usage } from '../exit-codes.js';
import type { CtxOf } from '../main.js';
import { emit, printTable } from '../output.js';
import { mask, PROFILE_FIELDS, SECRET_FIELDS, type ProfileField } from '../settings.js';

function field(name: string): ProfileField {
  if (!(PROFILE_FIELDS as readonly string[]).includes(name)) throw usage(`unknown setting "${name}"; settings: ${PROFILE_FIELDS.join(', ')}`);
  return name as ProfileField;
}

/** `pasarela config`: the saved profiles. Secrets are shown masked. */
export function registerConfig(program: Command, ctxOf: CtxOf): void {
  const config = program.command('config').description('saved profiles: server URL, key, operator token, data directory');

  config
    .command('list')
    .description('every profile and its settings (secrets masked)')
    .action(async (_o, cmd: Command) => {
      const ctx = ctxOf(cmd);
      const s = ctx.settings();
      const profiles = s.profiles();
      const masked = Object.fromEntries(
        Object.entries(profiles).map(([n, p]) => [n, Object.fromEntries(Object.entries(p).map(([k, v]) => [k, SECRET_FIELDS.has(k as ProfileField) ? mask(v) : v]))]),
      );
      emit(ctx, { ok: true, current: s.current, path: s.path, profiles: masked }, () =>
        printTable(
          ctx.term,
          ['', 'profile', ...PROFILE_FIELDS],
          Object.entries(masked).map(([n, p]) => [n === s.current ? '*' : '', n, ...PROFILE_FIELDS.map((f) => (p as Record<string, string>)[f])]),
        ),
      );
    });

  config
    .command('get <setting>')
    .description(`one setting of the profile (${PROFILE_FIELDS.join(', ')}); secrets masked`)
    .action(async (name: string, _o, cmd: Command) => {
      const ctx = ctxOf(cmd);
      const f = field(name);
      const v = ctx.profile()[f];
      const shown = SECRET_FIELDS.has(f) ? mask(v) : (v ?? '');
      emit(ctx, { ok: true, profile: ctx.profileName(), setting: f, value: shown }, () => ctx.term.out(shown));
    });

  config
    .command('set <setting> <value>')
    .description('set one setting of the profile')
    .action(async (name: string, value: string, _o, cmd: Command) => {
      const ctx = ctxOf(cmd);
      ctx.creatingProfile = true;
      const f = field(name);
      if (f === 'url' && !/^https?:\/\//.test(value)) throw usage('url must start with http:// or https://');
      ctx.settings().update(ctx.profileName(), { [f]: value });
      emit(ctx, { ok: true, profile: ctx.profileName(), setting: f }, () => ctx.term.err(`${f} saved in profile "${ctx.profileName()}"`));
    });

  config
    .command('unset <setting>')
    .description('remove one setting of the profile')
    .action(async (name: string, _o, cmd: Command) => {
      const ctx = ctxOf(cmd);
      const f = field(name);
      ctx.settings().update(ctx.profileName(), { [f]: undefined });
      emit(ctx, { ok: true, profile: ctx.profileName(), setting: f }, () => ctx.term.err(`${f} removed from profile "${ctx.profileName()}"`));
    });

  config
    .command('use <profile>')
    .description('make a profile the current one')
    .action(async (name: string, _o, cmd: Command) => {
      const ctx = ctxOf(cmd);
      if (!(name in ctx.settings().profiles())) throw usage(`no saved profile "${name}"; saved: ${Object.keys(ctx.settings().profiles()).join(', ') || 'none'}`);
      ctx.settings().setCurrent(name);
      emit(ctx, { ok: true, current: name }, () => ctx.term.err(`current profile: ${name}`));
    });

  config
    .command('path')
    .description('where the profiles are saved')
    .action(async (_o, cmd: Command) => {
      const ctx = ctxOf(cmd);
      emit(ctx, { ok: true, path: ctx.settings().path }, () => ctx.term.out(ctx.settings().path));
    });
}
