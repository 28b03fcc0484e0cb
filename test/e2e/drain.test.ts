import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { api, type ApiResponse } from '../helpers/server.js';
import { until } from '../helpers/poll.js';
import { killAllServeChildren, startServeChild } from '../helpers/serve-child.js';

/**
 * A graceful stop of the real binary: on SIGTERM /ready turns 503 (draining)
 * first while /health still answers, for --drain-delay; then the node stops
 * and exits 0.
 */
const dirs: string[] = [];
afterAll(() => {
  killAllServeChildren();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe('serve --drain-delay', () => {
  it('on SIGTERM answers /ready 503 draining while /health answers, then exits 0', async () => {
    const root = mkdtempSync(join(tmpdir(), 'pasarela-drain-'));
    dirs.push(root);
    const s = await startServeChild(join(root, 'data'), ['--drain-delay', '8s']);
    const before = await api(s.url, 'GET', '/ready');
    expect(before.status, before.text).toBe(200);
    expect(before.body).toMatchObject({ ok: true, listo: true, draining: false, motivos: [] });

    // Straight to the process: execa's kill() would follow with SIGKILL after 5 s, inside the drain delay.
    process.kill(s.child.pid!, 'SIGTERM');
    let last: ApiResponse | undefined;
    const ready = await until(async () => (last = await api(s.url, 'GET', '/ready')).status === 503 && last, {
      what: () => `/ready 503 (last: ${last?.status} ${last?.text})`,
      timeoutMs: 8000,
      stepMs: 50,
    });
    expect(ready.status, ready.text).toBe(503);
    expect(ready.body).toMatchObject({ ok: false, listo: false, draining: true });
    expect(ready.body.motivos).toEqual([{ codigo: 'draining', detalle: 'the node got SIGTERM and is stopping' }]);
    // Liveness is not readiness: the process still answers, and so does the API.
    const health = await api(s.url, 'GET', '/health');
    expect(health.status, health.text).toBe(200);
    expect(health.body.status).toBe('ok');

    const r = await s.child;
    expect(r.exitCode, `${String(r.signal)} ${String(r.stderr)}`).toBe(0);
    expect(String(r.stderr)).toContain('SIGTERM: not ready (draining) for 8s');
    expect(String(r.stderr)).toContain('pasarela stopped');
  });
});
