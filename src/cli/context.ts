import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ADMIN_TOKEN_FILE, defaultDataDir } from '../paths.js';
import { ApiClient, undiciTransport, type HttpTransport } from './client.js';
import { CliError, usage } from './exit-codes.js';
import { EXIT } from '../shared/exit-codes.js';
import type { Term } from './io.js';
import { Settings, type Profile } from './settings.js';

export const DEFAULT_URL = 'http://127.0.0.1:8080';

/** An operator token and, for a refusal's message, where it came from. */
export interface OperatorCredential {
  token: string;
  from: string;
}

/** localhost, 127.0.0.0/8 or ::1: a server on this machine. */
export function isLoopback(url: string): boolean {
  const host = new URL(url).hostname.replace(/^\[|\]$/g, '').toLowerCase();
  return host === 'localhost' || host.endsWith('.localhost') || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host);
}

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
    /** How clients reach the service: undici, or (in tests) Fastify's inject. */
    readonly http: HttpTransport = undiciTransport,
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
    return this.keyCredential().key;
  }

  /** The API key and where it came from: --key, then PASARELA_KEY, then the saved profile (named with its file). */
  keyCredential(): { key: string; from: string } {
    if (this.flags.key) return { key: this.flags.key, from: 'the key from --key' };
    if (this.env.PASARELA_KEY) return { key: this.env.PASARELA_KEY, from: 'the key from PASARELA_KEY' };
    const k = this.profile().key;
    if (!k) throw new CliError('no API key: pass --key, set PASARELA_KEY, or run `pasarela login`', EXIT.AUTH);
    const name = this.profileName();
    return { key: k, from: `the key saved in profile "${name}" (${this.settings().path}); \`pasarela login --profile ${name}\` saves another` };
  }

  dataDir(): string {
    return this.flags.dataDir || this.env.PASARELA_DATA_DIR || this.profile().data_dir || defaultDataDir(this.env);
  }

  /**
   * The operator token and where it came from: --admin-token, then
   * PASARELA_ADMIN_TOKEN, then the profile's admin_token, then the
   * admin-token file of a data directory. The platform's default data
   * directory is read only when the server URL is on this machine (a
   * loopback address): its token belongs to a local `serve`, and is not sent
   * to another server. A data directory named by --data-dir,
   * PASARELA_DATA_DIR or the profile's data_dir is read for any URL.
   */
  adminCredential(): OperatorCredential {
    if (this.flags.adminToken) return { token: this.flags.adminToken, from: 'from --admin-token' };
    if (this.env.PASARELA_ADMIN_TOKEN) return { token: this.env.PASARELA_ADMIN_TOKEN, from: 'from PASARELA_ADMIN_TOKEN; pass --admin-token to use another' };
    const saved = this.profile().admin_token;
    const name = this.profileName();
    if (saved) {
      return {
        token: saved,
        from: `the admin_token saved in profile "${name}"; replace it with \`pasarela config set admin_token --key-stdin --profile ${name}\`, or pass --admin-token`,
      };
    }
    const named = Boolean(this.flags.dataDir || this.env.PASARELA_DATA_DIR || this.profile().data_dir);
    const file = join(this.dataDir(), ADMIN_TOKEN_FILE);
    const ways = 'pass --admin-token, set PASARELA_ADMIN_TOKEN, or save one with `pasarela config set admin_token --key-stdin`';
    if (!named && !isLoopback(this.url())) {
      throw new CliError(
        `no operator token: ${ways} (${file} belongs to a server on this machine, and ${this.url()} is not one; --data-dir DIR reads DIR/${ADMIN_TOKEN_FILE} for any server)`,
        EXIT.AUTH,
      );
    }
    let token: string;
    try {
      token = readFileSync(file, 'utf8').trim();
    } catch {
      throw new CliError(`no operator token: ${ways}, or run where ${file} is readable`, EXIT.AUTH);
    }
    return { token, from: `read from ${file}; is that file from this server? pass --admin-token or PASARELA_ADMIN_TOKEN` };
  }

  /** The operator token; on the server's own machine the data directory's admin-token file works too. */
  adminToken(): string {
    return this.adminCredential().token;
  }

  /** A client of the service at `url` (the resolved --url / profile URL unless given). */
  client(url: string = this.url()): ApiClient {
    // A refused API key (401) names where it came from; an operator token says so in operatorCall.
    return new ApiClient(url, this.http, (key) => {
      if (this.flags.key === key || this.env.PASARELA_KEY === key) return this.keyCredential().from;
      return this.profileKeyFrom(key);
    });
  }

  /** Where `key` came from when it is the saved profile's key (read only if a profile was already opened). */
  private profileKeyFrom(key: string): string | undefined {
    if (!this.settingsCache || this.flags.key || this.env.PASARELA_KEY) return undefined;
    try {
      return this.profile().key === key ? this.keyCredential().from : undefined;
    } catch {
      return undefined;
    }
  }
}
