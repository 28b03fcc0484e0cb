import { mkdir, readdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { EngineAuthSource } from '../../src/gateways/baileys/auth.js';

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
      // Baileys' files are named `<kind>-<id>.json` (ids with '/' and ':' replaced), values in its BufferJSON.
      const readKind = async (kind: string) => {
        const out = new Map<string, unknown>();
        for (const name of await readdir(f))
          if (name.startsWith(`${kind}-`) && name.endsWith('.json'))
            out.set(name.slice(kind.length + 1, -5), JSON.parse(await readFile(join(f, name), 'utf8'), lib.BufferJSON.reviver) as unknown);
        return out;
      };
      return { state, saveCreds, clear: () => rm(f, { recursive: true, force: true }), readKind };
    },
    drop: (instancia) => rm(folder(instancia), { recursive: true, force: true }),
  };
}
