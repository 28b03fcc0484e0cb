import type { AuthenticationState } from 'baileys';
import type { EngineCipher } from '../../core/engine/engine-key.js';
import type { AccountsStore } from '../../core/ports/accounts.js';
import type { EngineAuthStore } from '../../core/ports/engine-auth.js';
import type { FenceSource } from '../../core/ports/engine-holds.js';
import { storedAuthState } from './auth-state.js';
import type { BaileysLib } from './library.js';

/** One line's authentication state as Baileys wants it, and how to drop it (a logout, a deleted line). */
export interface LineAuth {
  state: AuthenticationState;
  saveCreds: () => Promise<void>;
  clear: () => Promise<void>;
  /** Every value of one kind, by id (the inbound journal's entries: inbound-journal.ts). */
  readKind: (kind: string) => Promise<Map<string, unknown>>;
}

/** Where the lines' authentication states are kept. */
export interface EngineAuthSource {
  /** `fence`: the engine's hold of the line now, carried by each write (core/engine/engine-holds.ts). */
  forLine(lib: BaileysLib, instancia: string, fence?: FenceSource): Promise<LineAuth>;
  /** Removes a line's state without reading it (one that does not open, replaced by a new link). */
  drop(instancia: string): Promise<void>;
}

/** The lines' states in pasarela's store, sealed with the engine key (auth-state.ts): what `serve` uses. */
export function storeAuthSource(store: EngineAuthStore & Pick<AccountsStore, 'getCelularByInstancia'>, cipher: EngineCipher): EngineAuthSource {
  return {
    forLine: (lib, instancia, fence) => storedAuthState(lib, store, cipher, instancia, fence),
    drop: (instancia) => store.clearAuth(instancia),
  };
}
