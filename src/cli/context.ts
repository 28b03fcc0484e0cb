import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ADMIN_TOKEN_FILE, defaultDataDir } from '../paths.js';
import { ApiClient } from './client.js';
import { CliError, EXIT, usage } from './exit-codes.js';
import type { Term } from './io.js';
import { Settings, type Profile } from './settings.js';

export const DEFAULT_URL = 'http://127.0.0.1:8080';

/** Global flags every command may read. */
export interface GlobalFlags {
  url?: string;
  key?: string;
  profile?: string;
  json?: boolean;
  adminToken?: string;
  dataDir?: string;
}

/**
 * What commands need, built lazily so `--help` and `completion` open no config
 * file and no connection. Precedence everywhere: flag, environment, saved
 * profile, default.
 */
export class Ctx {
  private settingsCache?: Settings;
  constructor(
    readonly term: Term,
    readonly env: NodeJS.ProcessEnv,
    readonly flags: GlobalFlags,
  ) {}

  get json(): boolean {
    return Boolean(this.flags.json);
  }

  settings(): Settings {
    return (this.settingsCache ??= new Settings(this.env));
  }

  profileName(): string {
    return this.flags.profile || this.env.PASARELA_PROFILE || this.settings().current;
  }

  /** Set by commands that may create the named profile (login, config set). */
  creatingProfile = false;

  profile(): Profile {
    const name = this.profileName();
    const explicit = Boolean(this.flags.profile || this.env.PASARELA_PROFILE);
    if (explicit && !this.creatingProfile && !(name in this.settings().profiles())) {
      throw usage(`no saved profile "${name}" (see \`pasarela config list\`; \`pasarela login --profile ${name}\` creates it)`);
    }
    return this.settings().profile(name);
  }

  url(): string {
    const url = this.flags.url || this.env.PASARELA_URL || this.profile().url || DEFAULT_URL;
    let parsed: URL | undefined;
    try {
      parsed = new URL(url);
    } catch {
      parsed = undefined;
    }
    if (!parsed || !/^https?:$/.test(parsed.protocol)) throw usage(`"${url}" is not a server URL; expected http://HOST:PORT or https://HOST`);
    return url;
  }

  key(): string {
    const k = this.flags.key || this.env.PASARELA_KEY || this.profile().key;
    if (!k) throw new CliError('no API key: pass --key, set PASARELA_KEY, or run `pasarela login`', EXIT.AUTH);
    return k;
  }

  dataDir(): string {
    return this.flags.dataDir || this.env.PASARELA_DATA_DIR || this.profile().data_dir || defaultDataDir(this.env);
  }

  /** The operator token; on the server's own machine the data directory's admin-token file works too. */
  adminToken(): string {
    const t = this.flags.adminToken || this.env.PASARELA_ADMIN_TOKEN || this.profile().admin_token;
    if (t) return t;
    const file = join(this.dataDir(), ADMIN_TOKEN_FILE);
    try {
      return readFileSync(file, 'utf8').trim();
    } catch {
      throw new CliError(
        `no operator token: pass --admin-token, set PASARELA_ADMIN_TOKEN, save one with \`pasarela config set admin_token\`, or run where ${file} is readable`,
        EXIT.AUTH,
      );
    }
  }

  client(): ApiClient {
    return new ApiClient(this.url());
  }
}
