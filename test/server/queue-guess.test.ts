import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock, systemClock } from '../../src/core/time/clock.js';
import { stream } from '../../src/core/nodes/leases.js';
import { GIVE_ALONE_AFTER_MS, KEEP_IDLE_MS, QUEUE_CHANNEL } from '../../src/core/queue/queue-worker.js';
import type { Store } from '../../src/core/ports/store.js';
import type { ServeOptions } from '../../src/server/serve.js';
import { startTestServer, tempDir, type TestServer } from '../helpers/server.js';
import { describeWith, postgres, schemaUrl } from '../helpers/services.js';
import { pgSchema } from '../contract/adapters.js';
import { expectOk } from '../helpers/expect.js';
import { until } from '../helpers/poll.js';
import { linkedLine, mensaje, send, TEXT, uniqueText, waitEstado, type Line } from './send-helpers.js';

/**
 * D-85: the queue worker sends a message accepted on a line with no backlog
 * without reading every line's head (a guess its claim checks), asks for no
 * look after a send that left its line empty, and keeps a line's lease
 * between sends, giving it back with the line's rest once idle. Each case
 * runs on SQLite and on PostgreSQL; the periodic look is an hour away, so
 * every look here is one the worker asked for.
 */
const SENT = ['enviado', 'entregado', 'leido'];
const DEST = '525598765432';
const at = (h: number) => Date.UTC(2026, 3, 6, h);

/** Counts the store calls the worker makes: looks at the lines' heads, guessed claims, lease takes and gives. */
function counted(store: Store) {
  /** gives: leaseGive calls; given: every stream given back and its rest, alone or carried by a take. */
  const n = { looks: 0, guessed: 0, guessMissed: 0, takes: 0, gives: 0, carried: 0, given: new Map<string, number>() };
  const look = store.queueLook.bind(store);
  const claim = store.claimQueued.bind(store);
  const take = store.leaseTake.bind(store);
  const give = store.leaseGive.bind(store);
  store.queueLook = async (now, unread) => (n.looks++, look(now, unread));
  store.claimQueued = async (id, slot, now, onlyHead) => {
    const r = await claim(id, slot, now, onlyHead);
    if (onlyHead) {
      n.guessed++;
      if (!r.ok) n.guessMissed++;
    }
    return r;
  };
  // The queue's streams only: line health and webhooks take leases of their own.
  store.leaseTake = async (node, streams, now, gives = []) => {
    if (streams.some((x) => x.startsWith('cola:'))) n.takes++;
    const r = await take(node, streams, now, gives);
    for (const g of gives) n.given.set(g.stream, g.restMs);
    n.carried += gives.length;
    return r;
  };
  store.leaseGive = async (node, s, rest, now) => {
    if (s.startsWith('cola:')) n.gives++;
    await give(node, s, rest, now);
    n.given.set(s, rest);
  };
  return n;
}

/** The order the gateway was asked to send in. */
function sendOrder(s: TestServer): string[] {
  const order: string[] = [];
  const gw = s.core.gateway;
  const real = gw.send.bind(gw);
  gw.send = async (instancia, msg) => {
    order.push(msg.msgId);
    return real(instancia, msg);
  };
  return order;
}

/** A queued message of the line written straight to the store: no worker is told of it (another node's accept, to this one). */
async function behindTheWorker(s: TestServer, L: Line): Promise<string> {
  const msg_id = randomUUID();
  const r = await s.core.store.acceptMensaje(
    {
      msg_id,
      cliente_id: L.clienteId,
      celular_id: L.celularId,
      destinatario: DEST,
      tipo: 'texto',
      modo: 'cola',
      texto: 'antes',
      media: null,
      payload: { texto: 'antes' },
      expira_at: null,
    },
    { charge: false, maxPending: null },
    s.clock.now(),
  );
  expect(r.ok).toBe(true);
  return msg_id;
}

const dialects: Array<[string, () => Promise<string | undefined>]> = [['sqlite', async () => undefined]];
const schemas: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const d of schemas) await d();
});

for (const [name, storeOf] of dialects) {
  describe(`${name}: the accepted head sent without a look`, () => cases(storeOf));
}
/** A fresh schema's URL, dropped after the file. */
async function pgStore(): Promise<string> {
  const s = await pgSchema();
  schemas.push(s.drop);
  return schemaUrl(s.schema);
}
describeWith(postgres, 'postgres: the accepted head sent without a look', () => cases(pgStore));

/** A server on the manual clock at noon UTC, its periodic look an hour away, a fixed gap `gapMs` after each send. */
async function startCounted(storeOf: () => Promise<string | undefined>, gapMs: number, over: Partial<ServeOptions> = {}): Promise<TestServer> {
  const store = await storeOf();
  return startTestServer({
    tz: 'UTC',
    clock: new ManualClock(at(12)),
    random: () => 0.5,
    queuePollMs: 3_600_000,
    queue: { gapMinMs: gapMs, gapMaxMs: gapMs },
    ...over,
    ...(store ? { store } : {}),
  });
}

function cases(storeOf: () => Promise<string | undefined>): void {
  let s: TestServer;
  let n: ReturnType<typeof counted>;
  let order: string[];
  const clock = () => s.clock as ManualClock;
  beforeAll(async () => {
    s = await startCounted(storeOf, 0, { simDeliveryMs: 20, simReadMs: 40 });
    n = counted(s.core.store);
    order = sendOrder(s);
    await s.stepQueue();
  });
  afterAll(async () => {
    await s?.stop();
  });

  it('a message accepted on an idle line is sent with no look at the heads; the next one on it reuses the kept lease', async () => {
    const L = await linkedLine(s);
    const before = { ...n };
    const a = await send(s, L, TEXT, { destinatario: DEST, mensaje: uniqueText('a') });
    expectOk(a, { modo: 'cola' });
    await waitEstado(s, a.body.msg_id, SENT);
    await s.queue!.idle();
    expect(n.looks - before.looks).toBe(0);
    expect(n.guessed - before.guessed).toBe(1);
    expect(n.takes - before.takes).toBe(1);
    expect(n.gives - before.gives).toBe(0);
    const b = await send(s, L, TEXT, { destinatario: DEST, mensaje: uniqueText('b') });
    await waitEstado(s, b.body.msg_id, SENT);
    await s.queue!.idle();
    expect(n.looks - before.looks).toBe(0);
    expect(n.takes - before.takes).toBe(1);
    expect(order.slice(-2)).toEqual([a.body.msg_id, b.body.msg_id]);
  });

  it('a wrong guess (an older message the worker was not told of) costs a look, and the older one goes first', async () => {
    const L = await linkedLine(s);
    const older = await behindTheWorker(s, L);
    const before = { ...n };
    const b = await send(s, L, TEXT, { destinatario: DEST, mensaje: uniqueText('b') });
    expectOk(b, { modo: 'cola' });
    await waitEstado(s, b.body.msg_id, SENT);
    expect((await mensaje(s, older)).estado).not.toBe('pendiente');
    expect(n.guessMissed - before.guessMissed).toBe(1);
    expect(n.looks - before.looks).toBeGreaterThanOrEqual(1);
    expect(order.indexOf(older)).toBeGreaterThanOrEqual(0);
    expect(order.indexOf(older)).toBeLessThan(order.indexOf(b.body.msg_id));
  });

  it("a head waiting for its retry holds back its recipient's messages only (D-162): one to another recipient goes, then both in order", async () => {
    const L = await linkedLine(s);
    const older = await behindTheWorker(s, L);
    await s.core.store.retryLater(older, s.clock.now() + 5_000, 'gateway timeout');
    const b = await send(s, L, TEXT, { destinatario: DEST, mensaje: uniqueText('b') });
    expectOk(b, { modo: 'cola' });
    await s.queue!.idle();
    await s.stepQueue();
    expect((await mensaje(s, b.body.msg_id)).estado).toBe('pendiente');
    expect((await mensaje(s, older)).estado).toBe('pendiente');
    // Another recipient: sent at once (a guess its claim checks).
    const guessed = n.guessed;
    const other = await send(s, L, TEXT, { destinatario: '525598765433', mensaje: uniqueText('otro') });
    await waitEstado(s, other.body.msg_id, SENT);
    await s.queue!.idle();
    expect(n.guessed - guessed).toBe(1);
    const c = await send(s, L, TEXT, { destinatario: DEST, mensaje: uniqueText('c') });
    await s.queue!.idle();
    expect((await mensaje(s, c.body.msg_id)).estado).toBe('pendiente');
    clock().advance(5_000);
    await s.stepQueue();
    await waitEstado(s, c.body.msg_id, SENT);
    expect(order.filter((id) => [older, b.body.msg_id, c.body.msg_id].includes(id))).toEqual([older, b.body.msg_id, c.body.msg_id]);
  });

  it('accepts to the recipient of a head waiting for its retry: one guess and one look at most, however many; the look when it is due sends them all in order', async () => {
    const L = await linkedLine(s);
    const older = await behindTheWorker(s, L);
    await s.core.store.retryLater(older, s.clock.now() + 60_000, 'gateway timeout');
    // The look that finds nothing due: from then on an accept on the line is guessed, its claim checking its recipient.
    await s.stepQueue();
    const before = { ...n };
    const behind: string[] = [];
    for (let i = 0; i < 5; i++) behind.push((await send(s, L, TEXT, { destinatario: DEST, mensaje: uniqueText(`d${i}`) })).body.msg_id);
    await s.queue!.idle();
    expect(n.looks - before.looks).toBeLessThanOrEqual(1);
    expect(n.guessed - before.guessed).toBeLessThanOrEqual(1);
    for (const id of behind) expect((await mensaje(s, id)).estado).toBe('pendiente');
    clock().advance(60_000);
    await s.stepQueue();
    await waitEstado(s, behind[behind.length - 1]!, SENT);
    expect(order.filter((id) => [older, ...behind].includes(id))).toEqual([older, ...behind]);
  });

  it('a guess on a line another node holds waits for it with no look; once the line is free, a look sends the message', async () => {
    const L = await linkedLine(s);
    const other = `other-${randomUUID()}`;
    const line = [stream.cola(L.celularId)];
    await s.core.store.nodeBeat({ id: other, label: 'another node', staleMs: 60_000, marginMs: 10_000, engineUrl: null }, s.clock.now());
    expect((await s.core.store.leaseTake(other, line, s.clock.now()))[0]).toMatchObject({ taken: true });
    const before = { ...n };
    const b = await send(s, L, TEXT, { destinatario: DEST, mensaje: uniqueText('b') });
    expectOk(b, { modo: 'cola' });
    await s.queue!.idle();
    expect(n.takes - before.takes).toBe(1);
    expect(n.looks - before.looks).toBe(0);
    expect(n.guessed - before.guessed).toBe(0);
    expect((await mensaje(s, b.body.msg_id)).estado).toBe('pendiente');
    await s.core.store.leaseGive(other, line[0]!, 0, s.clock.now());
    await s.core.store.nodeLeave(other);
    clock().advance(s.core.config.queue.recheckMs);
    await s.stepQueue();
    await waitEstado(s, b.body.msg_id, SENT);
  });

  it('a kept lease is given back by a look once its line has been idle for KEEP_IDLE_MS and a poll; another node may then take it', async () => {
    const L = await linkedLine(s);
    const a = await send(s, L, TEXT, { destinatario: DEST, mensaje: uniqueText('a') });
    await waitEstado(s, a.body.msg_id, SENT);
    await s.queue!.idle();
    const other = `other-${randomUUID()}`;
    await s.core.store.nodeBeat({ id: other, label: 'another node', staleMs: 60_000, marginMs: 10_000, engineUrl: null }, s.clock.now());
    // Kept: another node may not take the line.
    expect((await s.core.store.leaseTake(other, [stream.cola(L.celularId)], s.clock.now()))[0]).toMatchObject({ taken: false });
    // With no take to carry it, a look gives it back alone once idle for KEEP_IDLE_MS and a poll.
    clock().advance(KEEP_IDLE_MS + 3_600_000);
    await s.stepQueue();
    await until(() => n.given.has(stream.cola(L.celularId)), { what: 'the idle line’s lease given back' });
    const t = await s.core.store.leaseTake(other, [stream.cola(L.celularId)], s.clock.now());
    expect(t[0]).toMatchObject({ taken: true });
    await s.core.store.nodeLeave(other);
  });

  it("a due line's kept lease past its give time times no look: a node that cannot beat looks again after recheckMs, not every millisecond", async () => {
    const L = await linkedLine(s);
    const a = await send(s, L, TEXT, { destinatario: DEST, mensaje: uniqueText('a') });
    await waitEstado(s, a.body.msg_id, SENT);
    await s.queue!.idle();
    // The worker's own node and loop (what the test drives): the node cannot beat; the loop's next look is read off its timer.
    const worker = s.queue as unknown as { node: { fresh: () => boolean }; runner: { timerAt: number } };
    const fresh = worker.node.fresh;
    worker.node.fresh = () => false;
    let behind: string;
    try {
      // A head due on the line, its lease kept and idle past its give time: kept for the send, which the node may not start.
      behind = await behindTheWorker(s, L);
      clock().advance(KEEP_IDLE_MS + GIVE_ALONE_AFTER_MS + 1);
      const looks = n.looks;
      await s.stepQueue();
      expect(n.looks - looks).toBe(1);
      // Timed for the recheck (the node may have beaten by then): before, for the give the due line passed over, 1 ms on.
      expect(worker.runner.timerAt - performance.now()).toBeGreaterThan(100);
    } finally {
      worker.node.fresh = fresh;
    }
    await s.stepQueue();
    await waitEstado(s, behind, SENT);
  });
}

for (const [name, storeOf] of dialects) describe(`${name}: a kept lease keeps its line's gap`, () => gapCases(storeOf));
describeWith(postgres, "postgres: a kept lease keeps its line's gap", () => gapCases(pgStore));

function gapCases(storeOf: () => Promise<string | undefined>): void {
  let s: TestServer;
  let n: ReturnType<typeof counted>;
  beforeAll(async () => {
    s = await startCounted(storeOf, 10_000);
    n = counted(s.core.store);
    await s.stepQueue();
  });
  afterAll(async () => {
    await s?.stop();
  });

  it('kept through the gap and KEEP_IDLE_MS more (another node is refused meanwhile), then given back by the next take', async () => {
    const L = await linkedLine(s);
    const a = await send(s, L, TEXT, { destinatario: DEST, mensaje: uniqueText('a') });
    await waitEstado(s, a.body.msg_id, SENT);
    await s.queue!.idle();
    const other = `other-${randomUUID()}`;
    await s.core.store.nodeBeat({ id: other, label: 'another node', staleMs: 60_000, marginMs: 10_000, engineUrl: null }, s.clock.now());
    const line = [stream.cola(L.celularId)];
    (s.clock as ManualClock).advance(10_000);
    await s.stepQueue();
    await s.queue!.idle();
    expect(n.given.has(line[0]!)).toBe(false);
    expect((await s.core.store.leaseTake(other, line, s.clock.now()))[0]).toMatchObject({ taken: false, restMs: 0 });
    // Idle past the gap but not past KEEP_IDLE_MS: still kept.
    (s.clock as ManualClock).advance(KEEP_IDLE_MS - 1);
    await s.stepQueue();
    await s.queue!.idle();
    expect(n.given.has(line[0]!)).toBe(false);
    expect((await s.core.store.leaseTake(other, line, s.clock.now()))[0]).toMatchObject({ taken: false, restMs: 0 });
    (s.clock as ManualClock).advance(1);
    await s.stepQueue();
    await s.queue!.idle();
    expect(n.given.has(line[0]!)).toBe(false);
    // The next take (a send on another line) carries it: one round trip for both.
    const { gives, takes } = n;
    const M = await linkedLine(s);
    const b = await send(s, M, TEXT, { destinatario: DEST, mensaje: uniqueText('b') });
    await waitEstado(s, b.body.msg_id, SENT);
    await s.queue!.idle();
    expect(n.given.get(line[0]!)).toBe(0);
    expect(n.takes - takes).toBe(1);
    expect(n.gives - gives).toBe(0);
    expect((await s.core.store.leaseTake(other, line, s.clock.now()))[0]).toMatchObject({ taken: true });
    await s.core.store.leaseGive(other, line[0]!, 0, s.clock.now());
    await s.core.store.nodeLeave(other);
  });

  it("other nodes' signals for a line in its gap whose backlog the worker knows cost no look; the gap's end sends it (D-193)", async () => {
    const L = await linkedLine(s);
    const a = await send(s, L, TEXT, { destinatario: DEST, mensaje: uniqueText('a') });
    await waitEstado(s, a.body.msg_id, SENT);
    await s.queue!.idle();
    // Accepted during the gap: one look at most, which finds the line pausing and times its end.
    const b = await send(s, L, TEXT, { destinatario: DEST, mensaje: uniqueText('b') });
    expectOk(b, { modo: 'cola' });
    // Its look (a poke's starts on the next turn of the event loop) and a step after it ended: no look is under way (a
    // signal during a look pokes another, as the look's read may predate the message).
    await new Promise((r) => setImmediate(r));
    await s.stepQueue();
    const looks = n.looks;
    for (let i = 0; i < 5; i++) await s.core.signals.publish(QUEUE_CHANNEL, String(L.celularId));
    // A poke's look starts on the next turn of the event loop: waited for, so one would be counted.
    await new Promise((r) => setImmediate(r));
    await s.queue!.idle();
    expect(n.looks - looks).toBe(0);
    (s.clock as ManualClock).advance(10_000);
    await s.stepQueue();
    await waitEstado(s, b.body.msg_id, SENT);
  });

  it('a node that stops during a line’s gap gives its kept lease back with what is left of the gap as its rest', async () => {
    const L = await linkedLine(s);
    const a = await send(s, L, TEXT, { destinatario: DEST, mensaje: uniqueText('a') });
    await waitEstado(s, a.body.msg_id, SENT);
    await s.queue!.idle();
    (s.clock as ManualClock).advance(4_000);
    const stopping = s;
    s = undefined as unknown as TestServer;
    await stopping.stop();
    expect(n.given.get(stream.cola(L.celularId))).toBe(6_000);
  });
}

describeWith(postgres, 'postgres: a message accepted on a node whose line another node holds', () => {
  const servers: TestServer[] = [];
  afterAll(async () => {
    for (const x of servers) await x.stop().catch(() => undefined);
  });

  it('is signalled to the holder, which sends it at once: no periodic look on either node (both an hour away)', async () => {
    const store = await pgStore();
    const over: Partial<ServeOptions> = { store, clock: systemClock, queuePollMs: 3_600_000, queue: { gapMinMs: 0, gapMaxMs: 0 } };
    const a = await startTestServer(over);
    servers.push(a);
    const b = await startTestServer({ ...over, dataDir: tempDir() });
    servers.push(b);
    const claimed = (s: TestServer) => {
      const ids: string[] = [];
      const claim = s.core.store.claimQueued.bind(s.core.store);
      s.core.store.claimQueued = async (id, ...rest) => (ids.push(id), claim(id, ...rest));
      return ids;
    };
    const byA = claimed(a);
    const byB = claimed(b);
    const L = await linkedLine(b);
    // B sends on the line and keeps its lease (KEEP_IDLE_MS past the send).
    const first = await send(b, L, TEXT, { destinatario: DEST, mensaje: uniqueText('b') });
    await waitEstado(b, first.body.msg_id, SENT);
    // Accepted on A: A's take is refused, it signals the line, and B's worker sends it under the lease it keeps.
    const m = await send(a, L, TEXT, { destinatario: DEST, mensaje: uniqueText('a') });
    expectOk(m, { modo: 'cola' });
    await waitEstado(a, m.body.msg_id, SENT);
    expect(byB).toContain(m.body.msg_id);
    expect(byA).not.toContain(m.body.msg_id);
    // Accepted on A again: the line is in A's backlog now, so A looks instead of guessing; its refused look signals the line too.
    const again = await send(a, L, TEXT, { destinatario: DEST, mensaje: uniqueText('a2') });
    expectOk(again, { modo: 'cola' });
    await waitEstado(a, again.body.msg_id, SENT);
    expect(byB).toContain(again.body.msg_id);
    expect(byA).not.toContain(again.body.msg_id);
  });

  it('with three nodes only the holder looks: a node refused the line a moment ago leaves the signal to it (D-151)', async () => {
    const store = await pgStore();
    // A minute's recheck: the holder keeps the line idle that long (KEEP_IDLE_MS or recheckMs), and the others trust their refusal as long.
    const queue = { gapMinMs: 0, gapMaxMs: 0, recheckMs: 60_000 };
    const over: Partial<ServeOptions> = { store, clock: systemClock, queuePollMs: 3_600_000, queue };
    const [a, b, c] = [
      await startTestServer(over),
      await startTestServer({ ...over, dataDir: tempDir() }),
      await startTestServer({ ...over, dataDir: tempDir() }),
    ];
    servers.push(a, b, c);
    const looksOf = (x: TestServer) => {
      const n = { looks: 0 };
      const look = x.core.store.queueLook.bind(x.core.store);
      x.core.store.queueLook = async (now, unread) => (n.looks++, look(now, unread));
      return n;
    };
    const onC = looksOf(c);
    const L = await linkedLine(b);
    const sent = async (x: TestServer, tag: string) => {
      const m = await send(x, L, TEXT, { destinatario: DEST, mensaje: uniqueText(tag) });
      expectOk(m, { modo: 'cola' });
      await waitEstado(x, m.body.msg_id, SENT);
    };
    // B sends on the line and keeps its lease; C's accept is refused it and signalled: C knows B holds the line.
    await sent(b, 'b');
    await sent(c, 'c');
    // A's accepts are signalled too; C hears each signal and leaves it to B, with no look.
    const looks = onC.looks;
    await sent(a, 'a1');
    await sent(a, 'a2');
    expect(onC.looks - looks).toBe(0);
  });
});

describeWith(postgres, 'postgres: a message accepted during a look', () => {
  let s: TestServer | undefined;
  afterAll(async () => {
    await s?.stop();
  });

  it("on a line pausing after its send, while a look whose read did not see it is under way: the pause's end is still looked at", async () => {
    const store = await pgStore();
    // The periodic look an hour away: only a look timed for the pause's end sends the message.
    s = await startTestServer({ store, clock: systemClock, queuePollMs: 3_600_000, queue: { gapMinMs: 300, gapMaxMs: 300 } });
    const server = s;
    const L = await linkedLine(server);
    let late: Promise<Awaited<ReturnType<typeof send>>> | undefined;
    let armed = false;
    const look = server.core.store.queueLook.bind(server.core.store);
    server.core.store.queueLook = async (now, unread) => {
      const r = await look(now, unread);
      // The first look that found the line empty once armed: a message is accepted before it ends.
      if (armed && !late && !r.lines.some((l) => l.celular_id === L.celularId))
        late = send(server, L, TEXT, { destinatario: DEST, mensaje: uniqueText('late') });
      await late;
      return r;
    };
    // The first is sent at once; the second, accepted meanwhile, puts the line in the backlog: its looks list the line, and
    // the look after its send finds the line empty.
    const first = await send(server, L, TEXT, { destinatario: DEST, mensaje: uniqueText('first') });
    const second = await send(server, L, TEXT, { destinatario: DEST, mensaje: uniqueText('second') });
    armed = true;
    await waitEstado(server, first.body.msg_id, SENT);
    await waitEstado(server, second.body.msg_id, SENT);
    await until(async () => late !== undefined, { what: 'a look that found the line empty' });
    const m = await late!;
    expectOk(m, { modo: 'cola' });
    await waitEstado(server, m.body.msg_id, SENT);
  });
});
