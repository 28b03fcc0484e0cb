import type { AuthenticationCreds, AuthenticationState, SignalDataSet, SignalDataTypeMap } from 'baileys';
import { authAad, type EngineCipher, EngineStateUnreadable, SealedValueRefused } from '../../core/engine/engine-key.js';
import type { EngineAuthRow, EngineAuthStore } from '../../core/ports/engine-auth.js';
import { HoldLost, type FenceSource } from '../../core/ports/engine-holds.js';

/** The kind of the credentials' one row (the keys' kinds are Baileys' own: pre-key, session...). */
export const CREDS_KIND = 'creds';
const CREDS_ID = '';

/**
 * A line's Baileys authentication state over pasarela's store, as Baileys'
 * own useMultiFileAuthState keeps it in files (node_modules/baileys/lib/Utils/
 * use-multi-file-auth-state.js): every value JSON with Baileys' BufferJSON,
 * app-state keys revived as protobuf objects. Each value is sealed for its
 * row (core/engine/engine-key.ts) before it reaches the store. `keys.get` is one
 * read; `keys.set` one transaction (Baileys gives many keys at once, a null
 * removes one); `saveCreds` writes the credentials as they are now;
 * `clear` removes the line's whole state (the state in hand is then
 * worthless: the caller drops it); `readKind` opens every value of one kind
 * (the inbound journal's, read whole at a connect: inbound-journal.ts).
 *
 * `baileys` is the module, passed in: it is imported lazily by the engine,
 * so nothing here loads it. A value that does not open (another key, an
 * altered or moved row) rejects with EngineStateUnreadable naming the line.
 */
export async function storedAuthState(
  baileys: typeof import('baileys'),
  store: EngineAuthStore,
  cipher: EngineCipher,
  instancia: string,
  fence?: FenceSource,
): Promise<{
  state: AuthenticationState;
  saveCreds: () => Promise<void>;
  clear: () => Promise<void>;
  readKind: (kind: string) => Promise<Map<string, unknown>>;
}> {
  const { BufferJSON, initAuthCreds, proto } = baileys;
  const seal = (kind: string, id: string, value: unknown): Buffer =>
    cipher.seal(authAad(instancia, kind, id), Buffer.from(JSON.stringify(value, BufferJSON.replacer), 'utf8'));
  const open = (kind: string, id: string, sealed: Buffer): unknown => {
    let plain: Buffer;
    try {
      plain = cipher.open(authAad(instancia, kind, id), sealed);
    } catch (err) {
      if (err instanceof SealedValueRefused) throw new EngineStateUnreadable(instancia, `its ${kind} ${JSON.stringify(id)}: ${err.message}`);
      throw err;
    }
    return JSON.parse(plain.toString('utf8'), BufferJSON.reviver) as unknown;
  };

  // Each write carries the engine's hold of the line; one refused (another node took the session) ends the socket here.
  const write = async (rows: EngineAuthRow[]): Promise<void> => {
    try {
      await store.writeAuth(instancia, rows, fence?.current());
    } catch (err) {
      if (err instanceof HoldLost) fence?.lost(err);
      throw err;
    }
  };

  const stored = (await store.readAuth(instancia, CREDS_KIND, [CREDS_ID])).get(CREDS_ID);
  const creds = stored ? (open(CREDS_KIND, CREDS_ID, stored) as AuthenticationCreds) : initAuthCreds();

  return {
    state: {
      creds,
      keys: {
        async get<T extends keyof SignalDataTypeMap>(type: T, ids: string[]): Promise<{ [id: string]: SignalDataTypeMap[T] }> {
          const found = await store.readAuth(instancia, type, ids);
          const out: { [id: string]: SignalDataTypeMap[T] } = {};
          // Every id asked gets an entry, null when absent (as the files' version does): Baileys' transaction cache then knows it is absent.
          for (const id of ids) {
            const sealed = found.get(id);
            let value: unknown = sealed ? open(type, id, sealed) : null;
            if (type === 'app-state-sync-key' && value) value = proto.Message.AppStateSyncKeyData.fromObject(value);
            out[id] = value as SignalDataTypeMap[T];
          }
          return out;
        },
        async set(data: SignalDataSet): Promise<void> {
          const rows: EngineAuthRow[] = [];
          for (const [kind, values] of Object.entries(data)) {
            for (const [id, value] of Object.entries(values ?? {})) rows.push({ kind, id, value: value ? seal(kind, id, value) : null });
          }
          if (rows.length > 0) await write(rows);
        },
      },
    },
    saveCreds: () => write([{ kind: CREDS_KIND, id: CREDS_ID, value: seal(CREDS_KIND, CREDS_ID, creds) }]),
    clear: () => store.clearAuth(instancia),
    readKind: async (kind) => new Map([...(await store.readAuthKind(instancia, kind))].map(([id, sealed]) => [id, open(kind, id, sealed)])),
  };
}
