import { rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { openSqliteStore } from '../../src/store/sqlite/store.js';
import { tempDir } from '../helpers/server.js';
import { until } from '../helpers/poll.js';
import { backgroundGate, mainGate, newGateBuffer } from '../../src/store/write-gate.js';

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

/**
 * The background thread's connection (one that shares writes with the request thread's) leaves checkpoints
 * to the checkpointer too: at SQLite's default it copied the WAL back inside its own COMMITs past 1,000
 * pages, which under a send load was nearly every COMMIT it made.
 */
it("a connection sharing the writes leaves the WAL to the checkpointer, past SQLite's 1,000 pages", async () => {
  const dir = tempDir('pasarela-ckpt-share-');
  const file = join(dir, 'p.db');
  // The served connection, its checkpointer too slow to run during the test.
  const served = openSqliteStore(file, { background: { checkpointMs: 3_600_000, onError: () => {} } });
  const second = openSqliteStore(file);
  try {
    const buffer = newGateBuffer();
    served.shareWrites(mainGate(buffer));
    second.shareWrites(backgroundGate(buffer));
    const before = statSync(file).size;
    // 1,500 rows of 4 KB, one commit each: some 3,000 pages through the second connection.
    for (let i = 0; i < 1500; i++) await second.kvSet('ns', `k${i}`, 'x'.repeat(4000));
    expect(statSync(`${file}-wal`).size).toBeGreaterThan(1500 * 4000);
    expect(statSync(file).size).toBe(before);
    expect(await served.kvGet('ns', 'k1499')).toBe('x'.repeat(4000));
  } finally {
    await second.close();
    await served.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
