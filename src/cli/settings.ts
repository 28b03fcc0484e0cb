import Conf from 'conf';

/**
 * Saved profiles (conf, one JSON file, mode 0600): `profiles.<name>` holds a
 * server URL, a key, an operator token and a data directory; `current` names
 * the profile used when neither --profile nor PASARELA_PROFILE says otherwise.
 * The file lives in PASARELA_CONFIG_DIR, else the platform's config folder.
 */
export const PROFILE_FIELDS = ['url', 'key', 'admin_token', 'data_dir'] as const;
export type ProfileField = (typeof PROFILE_FIELDS)[number];
export type Profile = Partial<Record<ProfileField, string>>;
export const SECRET_FIELDS = new Set<ProfileField>(['key', 'admin_token']);

interface Shape {
  current: string;
  profiles: Record<string, Profile>;
}

export class Settings {
  private readonly conf: Conf<Shape>;
  constructor(env: NodeJS.ProcessEnv) {
    this.conf = new Conf<Shape>({
      projectName: 'pasarela',
      projectSuffix: '',
      configName: 'config',
      configFileMode: 0o600,
      defaults: { current: 'default', profiles: {} },
      ...(env.PASARELA_CONFIG_DIR ? { cwd: env.PASARELA_CONFIG_DIR } : {}),
    });
  }

  get path(): string {
    return this.conf.path;
  }

  get current(): string {
    return this.conf.get('current') || 'default';
  }

  setCurrent(name: string): void {
    this.conf.set('current', name);
  }

  profiles(): Record<string, Profile> {
    return this.conf.get('profiles') ?? {};
  }

  profile(name: string): Profile {
    return this.profiles()[name] ?? {};
  }

  update(name: string, patch: Profile): void {
    const next: Profile = { ...this.profile(name) };
    for (const [k, v] of Object.entries(patch) as Array<[ProfileField, string | undefined]>) {
      if (v === undefined || v === '') delete next[k];
      else next[k] = v;
    }
    this.conf.set('profiles', { ...this.profiles(), [name]: next });
  }

  remove(name: string): boolean {
    const all = this.profiles();
    if (!(name in all)) return false;
    delete all[name];
    this.conf.set('profiles', all);
    return true;
  }
}

/** Shows that a secret is set without showing it. */
export function mask(value: string | undefined): string {
  if (!value) return '';
  return value.length <= 8 ? '********' : `${value.slice(0, 4)}…${'*'.repeat(6)}`;
}
