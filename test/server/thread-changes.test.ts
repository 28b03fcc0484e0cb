import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applySessionStatus } from '../../src/core/accounts/celulares.js';
import { LineReads } from '../../src/core/accounts/line-reads.js';
import type { Core } from '../../src/core/context.js';
import { EventBus } from '../../src/core/events/events.js';
import { MemoryCounters } from '../../src/core/nodes/counters-memory.js';
import { BACKGROUND_THREAD, newChangesBuffer, REQUEST_THREAD, shareChanges } from '../../src/server/background/changes.js';
import { makeCore } from '../../src/server/make-core.js';
import { openSqliteStore, type SqliteStore } from '../../src/store/sqlite/store.js';
import { expectError, expectOk, numeroNuevo } from '../helpers/expect.js';
import { api, startTestServer, type TestServer } from '../helpers/server.js';
import { editCelular, linkedLine, TEXT, uniqueText, type Line } from './send-helpers.js';

/**
 * On SQLite, serve's request thread and background thread each keep lines
 * and credentials (D-141), and each one's signals hear only its own writes:
 * each counts its changes where the other's caches look (server/background/
 * changes.ts). Here the other thread is a second core on its own connection
 * to the same file, as the background thread's is: a change it makes is
 * refused or applied by the very next send, as a read through would.
 */

let s: TestServer;
let store: SqliteStore;
let other: Core;

beforeAll(async () => {
  s = await startTestServer();
  store = openSqliteStore(s.storeSource);
  other = makeCore(s.core.config, { store, counters: new MemoryCounters(s.clock), gateway: s.core.gateway, clock: s.clock, bus: new EventBus() });
  const changes = newChangesBuffer();
  shareChanges(s.core, changes, REQUEST_THREAD);
  shareChanges(other, changes, BACKGROUND_THREAD);
});

afterAll(async () => {
  await store?.close();
  await s?.stop();
});

const sendAs = (line: Line, key: string) =>
  api(s.url, 'POST', TEXT, { key, json: { celular_id: line.celularId, destinatario: numeroNuevo(), mensaje: uniqueText('hilo') } });

describe("the other thread's changes of a line", () => {
  it('a line the background thread disconnects is refused by the next send, with a client key and with the line’s own key', async () => {
    const line = await linkedLine(s);
    // Both kept on this thread: the line (client key) and the principal (celular key).
    expectOk(await sendAs(line, line.clientKey));
    expectOk(await sendAs(line, line.celularKey));
    await applySessionStatus(other, line.celularId, 'disconnected');
    expect((await store.getCelular(line.celularId))?.estado).toBe('desconectado');
    expectError(await sendAs(line, line.clientKey), 403, 301);
    expectError(await sendAs(line, line.celularKey), 403, 301);
    // And back: connected again there, sent again here at once.
    await applySessionStatus(other, line.celularId, 'connected');
    expectOk(await sendAs(line, line.clientKey));
    expectOk(await sendAs(line, line.celularKey));
  });

  it('a line this thread changes is read anew by the other thread at its next read; a copy that follows nothing keeps the old row', async () => {
    const line = await linkedLine(s);
    const unfollowed = new LineReads(store, () => s.clock.ticks());
    expect((await other.lines.celular(line.celularId))?.hora_fin_permitido).not.toBe('00:00:01');
    await unfollowed.celular(line.celularId);
    await editCelular(s, line, { hora_fin_permitido: '00:00:01' });
    expect((await other.lines.celular(line.celularId))?.hora_fin_permitido).toBe('00:00:01');
    // The control: without the count, the other thread would go on with the hours it had read.
    expect((await unfollowed.celular(line.celularId))?.hora_fin_permitido).not.toBe('00:00:01');
  });
});
