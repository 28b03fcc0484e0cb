import { mkdir, readdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { AuthenticationState } from 'baileys';
import type { EngineCipher } from '../../core/engine-key.js';
import { engineLinesAtStart } from '../../core/engine-lines.js';
import type { AccountsStore } from '../../core/ports/accounts.js';
import type { EngineAuthStore } from '../../core/ports/engine-auth.js';
import { storedAuthState } from './auth-state.js';
import type { BaileysLib } from './library.js';

/** One line's authentication state as Baileys wants it, and how to drop it (a logout, a deleted line). */
export interface LineAuth {
  state: AuthenticationState;
  saveCreds: () => Promise<void>;
  clear: () => Promise<void>;
}

/** Where the lines' authentication states are kept. */
export interface EngineAuthSource {
  forLine(lib: BaileysLib, instancia: string): Promise<LineAuth>;
  /** Lines with a stored state: linked before, so they reconnect when the engine starts. */
  instancias(): Promise<string[]>;
  /** Removes a line's state without reading it (one that does not open, replaced by a new link). */
  drop(instancia: string): Promise<void>;
}

/** The lines' states in pasarela's store, sealed with the engine key (auth-state.ts): what `serve` uses. */
export function storeAuthSource(store: EngineAuthStore & Pick<AccountsStore, 'getCelularByInstancia'>, cipher: EngineCipher): EngineAuthSource {
  return {
    forLine: (lib, instancia) => storedAuthState(lib, store, cipher, instancia),
    // A deleted line's leftover state is removed here, not reconnected (core/engine-lines.ts).
    instancias: async () => (await engineLinesAtStart(store)).lines,
    drop: (instancia) => store.clearAuth(instancia),
  };
}

const SAFE = /^[A-Za-z0-9._-]{1,128}$/;

/** Baileys' own multi-file state, one folder per line under `dir` (in the clear): for tests of the engine alone. */
export function fileAuthSource(dir: string): EngineAuthSource {
  const folder = (instancia: string) => {
    if (!SAFE.test(instancia)) throw new Error('an instance name the engine cannot keep a state for');
    return join(dir, instancia);
  };
  return {
    async forLine(lib, instancia) {
      const f = folder(instancia);
      await mkdir(f, { recursive: true, mode: 0o700 });
      const { state, saveCreds } = await lib.useMultiFileAuthState(f);
      return { state, saveCreds, clear: () => rm(f, { recursive: true, force: true }) };
    },
    async instancias() {
      const names = await readdir(dir).catch(() => [] as string[]);
      const linked: string[] = [];
      for (const n of names)
        if (
          await stat(join(dir, n, 'creds.json')).then(
            (s) => s.isFile(),
            () => false,
          )
        )
          linked.push(n);
      return linked;
    },
    drop: (instancia) => rm(folder(instancia), { recursive: true, force: true }),
  };
}
