import { homedir, platform } from 'node:os';
import { join } from 'node:path';

/**
 * Where `serve` keeps its data unless told otherwise: the per-user data folder
 * of the platform. `--data-dir` beats `PASARELA_DATA_DIR` beats this.
 */
export function defaultDataDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.PASARELA_DATA_DIR) return env.PASARELA_DATA_DIR;
  const home = env.HOME || homedir();
  if (platform() === 'win32') return join(env.LOCALAPPDATA || join(home, 'AppData', 'Local'), 'pasarela');
  if (platform() === 'darwin') return join(home, 'Library', 'Application Support', 'pasarela');
  return join(env.XDG_DATA_HOME || join(home, '.local', 'share'), 'pasarela');
}

export const ADMIN_TOKEN_FILE = 'admin-token';
export const DB_FILE = 'pasarela.db';
export const GATEWAY_SECRET_FILE = 'gateway-secret';
