import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { PassThrough } from 'node:stream';
import type { Core } from '../../src/core/context.js';
import { EventStreams, STREAM_TIMING } from '../../src/core/events/event-stream-pump.js';
import { ManualClock, type Clock } from '../../src/core/time/clock.js';
import { procSendQueues } from '../../src/server/send-queues.js';
import { pgSchema } from '../contract/adapters.js';
import { until } from '../helpers/poll.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { describeWith, postgres, schemaUrl } from '../helpers/services.js';
import { openStream, type SseStream } from './eventos-helpers.js';
import { linkedLine, type Line } from './send-helpers.js';

/**
 * Issue 40 item 6: a reader that takes nothing is cut even while the kernel
 * still buffers what it was sent (the adversary's F2: megabytes sat in socket
 * buffers, no write ever said "full", no reader was cut). The server compares
 * what each socket took with what the kernel still holds unacknowledged.
 * The stall is measured on the clock's ticks, driven here: the write-side
 * rule's real timer is set far out (stallMs) so only the new check can cut.
 */

const PATH = '/api/eventos.php';
const STALL_MS = 600_000;
const KIND = 'webhook.test';
const isLinux = procSendQueues(['/proc/net/tcp'])().then((q) => q !== undefined);

/** A clock whose ticks move only when told (its wall time is a ManualClock's). */
class DrivenTicks implements Clock {
  private t = 0;
  private readonly wall = new ManualClock(Date.now());
  now(): number {
    return this.wall.now();
  }
  ticks(): number {
    return this.t;
  }
  advance(ms: number): void {
    this.t += ms;
  }
}

const servers: TestServer[] = [];
const streams: SseStream[] = [];
afterEach(async () => {
  for (const st of streams.splice(0)) st.close();
  for (const s of servers.splice(0)) await s.stop();
});

async function following(srv: TestServer, key: string, headers: Record<string, string> = {}, query = ''): Promise<SseStream> {
  const st = await openStream(srv.url, `${PATH}${query}`, key, headers);
  streams.push(st);
  expect(st.status).toBe(200);
  return st;
}

/** `n` events of about 16 KB for the line's client, straight into the log, then a wake-up. */
async function burst(srv: TestServer, L: Line, n: number, from = 0): Promise<void> {
  const pad = 'k'.repeat(16 * 1024);
  for (let i = from; i < from + n; i++) {
    await srv.core.store.logTestEvent({ evento: KIND, cliente_id: L.clienteId, celular_id: null, data: { n: i, pad }, fecha: srv.clock.now() }, false);
  }
  srv.app.eventStreams.wake(L.clienteId);
}

const statsOf = (srv: TestServer, L: Line) => srv.app.eventStreams.stats().filter((x) => x.clienteId === L.clienteId);
/** Until the kernel's unacknowledged bytes for A's stream read the same twice, 200 ms apart. */
async function steady(srv: TestServer, L: Line): Promise<void> {
  let last = -1;
  await until(
    async () => {
      const now = statsOf(srv, L)[0]?.unacked ?? 0;
      const same = now > 0 && now === last;
      last = now;
      if (!same) await new Promise((r) => setTimeout(r, 200));
      return same;
    },
    { what: 'the kernel settled' },
  );
}

const numbers = (st: SseStream) => st.events.map((e) => (JSON.parse(e.data) as { data: { n: number } }).data.n);

describe('a stalled event-stream reader', () => {
  it('is cut when what it was sent sits in the kernel unread for stallMs, while a reader that keeps up stays', async () => {
    if (!(await isLinux)) return; // the kernel's figures come from /proc/net/tcp
    await stalledIsCut();
  }, 120_000);

  it('a reader that takes a little in every stallMs is not cut, however long it takes in all; one that stops is', async () => {
    // The rule on figures set by hand (a real reader's acknowledgements come when its kernel decides).
    const clock = new DrivenTicks();
    const bus = { subscribe: () => () => undefined };
    const store = { eventsAfter: () => Promise.resolve([]) };
    let accepted = 10_000;
    let unacked = 5000;
    const queues = new Map<string, number>();
    const streams = new EventStreams(
      { store, bus, clock } as unknown as Pick<Core, 'store' | 'bus' | 'clock'>,
      { ...STREAM_TIMING, stallMs: 1000, stallCheckMs: 60_000 },
      () => Promise.resolve(queues.set('1:2', unacked)),
    );
    const out = new PassThrough();
    out.resume();
    let cut = 0;
    const scope = { clienteId: 1, celularId: null, kinds: null };
    streams.open(scope, null, true, { out, below: () => 0, cut: () => (cut += 1), socket: { key: '1:2', accepted: () => accepted } });
    await streams.checkStalls();
    for (let round = 0; round < 6; round++) {
      clock.advance(600);
      // A ping is written and sits unread: the kernel's queue moves, the reader's side does not.
      accepted += 8;
      unacked += 8;
      await streams.checkStalls();
      // Then the reader's side takes 100 bytes.
      unacked -= 100;
      await streams.checkStalls();
      expect(cut, `round ${round}`).toBe(0);
    }
    expect(streams.stats()[0]).toMatchObject({ unacked, taken: accepted - unacked });
    // It stops taking: cut once stallMs passed on the clock since its last take, not before.
    clock.advance(999);
    accepted += 8;
    unacked += 8;
    await streams.checkStalls();
    expect(cut).toBe(0);
    clock.advance(1);
    await streams.checkStalls();
    expect(cut).toBe(1);
    expect(streams.stats()).toHaveLength(0);
    streams.closeAll();
  });
});

/** The scenario of the first test, on a store of choice. */
async function stalledIsCut(over: { store?: string } = {}): Promise<void> {
  const clock = new DrivenTicks();
  const srv = await startTestServer({ ...over, clock, streamTiming: { pollMs: 50, stallMs: STALL_MS, stallCheckMs: 20, batch: 10 } });
  servers.push(srv);
  const A = await linkedLine(srv);
  const B = await linkedLine(srv);
  // The burst's kind only: on PostgreSQL a stream that starts "now" starts at the settled events, so the lines' own
  // session.status events, committed just before, may still reach it when another transaction holds the horizon back.
  const stalled = await following(srv, A.clientKey, {}, `?eventos=${KIND}`);
  const reading = await following(srv, B.clientKey, {}, `?eventos=${KIND}`);
  stalled.pause();
  // About 1 MB each: far less than loopback sockets buffer (the adversary saw 4.8 MB taken per stream), far more than a paused reader's own buffer.
  const N = 64;
  await Promise.all([burst(srv, A, N), burst(srv, B, N)]);
  await reading.waitEvents(N);
  // Everything was written and the server holds none of it: the kernel does, unacknowledged by the paused reader.
  await until(
    () => {
      const [a] = statsOf(srv, A);
      return a !== undefined && a.sent === N && a.buffered === 0 && !a.blocked && a.unacked > 0;
    },
    { what: () => `the paused reader's bytes held by the kernel, none by the server (its stream: ${JSON.stringify(statsOf(srv, A))})` },
  );
  // Not yet stallMs on the clock: still open, however many checks ran.
  await srv.app.eventStreams.checkStalls();
  expect(statsOf(srv, A)).toHaveLength(1);
  // The kernel may still be settling the last acknowledgements: the check counts from when they stop moving.
  await steady(srv, A);
  await until(
    () => {
      clock.advance(STALL_MS);
      return statsOf(srv, A).length === 0;
    },
    { what: 'the stalled stream cut' },
  );
  // The reader that kept up (nothing owed) is still served after the same time.
  expect(statsOf(srv, B)).toHaveLength(1);
  await burst(srv, B, 1, N);
  await reading.waitEvents(N + 1);
  expect(reading.isEnded()).toBe(false);

  stalled.resume();
  expect(await stalled.ended).toBe('cut');
  // It resumes by id and gets the rest.
  const got = numbers(stalled);
  expect(got).toEqual([...Array(got.length).keys()]);
  const rest = await following(srv, A.clientKey, { 'last-event-id': stalled.events.at(-1)!.id }, `?seguir=0&eventos=${KIND}`);
  await rest.ended;
  expect([...got, ...numbers(rest)]).toEqual([...Array(N).keys()]);
}

describeWith(postgres, 'a stalled event-stream reader on PostgreSQL', () => {
  it('is cut while the kernel buffers (PostgreSQL)', async () => {
    if (!(await isLinux)) return;
    const sch = await pgSchema();
    try {
      await stalledIsCut({ store: new URL(schemaUrl(sch.schema)).toString() });
    } finally {
      for (const s of servers.splice(0)) await s.stop();
      await sch.drop();
    }
  }, 120_000);
});

describe('procSendQueues', () => {
  it("reads established sockets' tx_queue by local and remote port; a missing table is undefined", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'send-queues-'));
    const tcp = join(dir, 'tcp');
    writeFileSync(
      tcp,
      [
        '  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode',
        '   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1',
        '   1: 0100007F:1F90 0100007F:D431 01 0001A000:00000000 00:00000000 00000000     0        0 2 1',
        '   2: 0100007F:1F90 0100007F:D432 01 00000000:00000000 00:00000000 00000000     0        0 3 1',
        '   3: 0100007F:1F90 0200007F:D433 01 00000010:00000000 00:00000000 00000000     0        0 4 1',
        '   4: 0100007F:1F90 0300007F:D433 01 00000020:00000000 00:00000000 00000000     0        0 5 1',
      ].join('\n'),
    );
    const q = await procSendQueues([tcp, join(dir, 'tcp6')])();
    expect(q?.get(`8080:${0xd431}`)).toBe(0x1a000);
    expect(q?.get(`8080:${0xd432}`)).toBe(0);
    // Two sockets with the same ports (other remote addresses): not known rather than a guess.
    expect(q?.has(`8080:${0xd433}`)).toBe(false);
    // Listening sockets are not streams.
    expect(q?.has('8080:0')).toBe(false);
    expect(await procSendQueues([join(dir, 'none')])()).toBeUndefined();
  });
});
