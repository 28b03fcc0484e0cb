import { rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { openSqliteStore } from '../../src/store/sqlite/store.js';
import { tempDir } from '../helpers/server.js';
import { until } from '../helpers/poll.js';

/**
 * With background checkpoints the writer never copies the WAL back itself
 * (below the backstop): the checkpoint thread does, so the database file
 * grows while the writer only appends, and closing ends the thread.
 */
it('copies the WAL back into the database on its own thread; close ends it', async () => {
  const dir = tempDir('pasarela-ckpt-');
  const file = join(dir, 'p.db');
  const errors: string[] = [];
  const store = openSqliteStore(file, { background: { checkpointMs: 20, onError: (m) => errors.push(m) } });
  try {
    const before = statSync(file).size;
    for (let i = 0; i < 200; i++) await store.kvSet('ns', `k${i}`, 'x'.repeat(2000));
    // 200 rows of 2 KB: about 100 pages, far below the writer's backstop, yet they reach the file.
    await until(() => statSync(file).size > before + 200 * 1000, { what: 'the checkpoint thread', timeoutMs: 15_000 });
    expect(await store.kvGet('ns', 'k199')).toBe('x'.repeat(2000));
    // Idle ticks make no checkpoint (nothing was committed); the next commits are copied back all the same.
    const idle = statSync(file).size;
    await new Promise((r) => setTimeout(r, 100));
    for (let i = 0; i < 200; i++) await store.kvSet('ns', `m${i}`, 'y'.repeat(2000));
    await until(() => statSync(file).size > idle + 200 * 1000, { what: 'the checkpoint after idle ticks', timeoutMs: 15_000 });
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
  expect(errors).toEqual([]);
});
