import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { api } from '../helpers/server.js';
import { killAllServeChildren, startServeChild } from '../helpers/serve-child.js';
import { openStream } from './eventos-helpers.js';

/**
 * SIGTERM to the real binary with event streams open (one read, one whose
 * reader stopped reading) ends them and exits 0, although --stop-timeout
 * would let a stop wait ten minutes for what is in flight: a stream held
 * open would keep the process past the child's own 60 s limit (then killed:
 * not exit 0).
 */
const dirs: string[] = [];
afterAll(() => {
  killAllServeChildren();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe('serve stops with event streams open', () => {
  it('SIGTERM ends every stream and the process exits 0', async () => {
    const root = mkdtempSync(join(tmpdir(), 'pasarela-eventos-stop-'));
    dirs.push(root);
    const dataDir = join(root, 'data');
    const s = await startServeChild(dataDir, ['--stop-timeout', '10m']);
    const token = readFileSync(join(dataDir, 'admin-token'), 'utf8').trim();
    const c = await api(s.url, 'POST', '/admin/clientes', { key: token, json: { nombre: 'Flujo', email: 'flujo@example.com', saldo: 0 } });
    expect(c.status, c.text).toBe(201);
    const reading = await openStream(s.url, '/api/eventos.php', c.body.api_key);
    const idle = await openStream(s.url, '/api/eventos.php', c.body.api_key);
    expect([reading.status, idle.status]).toEqual([200, 200]);
    idle.pause();

    process.kill(s.child.pid!, 'SIGTERM');
    const r = await s.child;
    expect(r.exitCode, String(r.stderr)).toBe(0);
    expect(await reading.ended).toBe('end');
    idle.resume();
    await idle.ended;
  });
});
