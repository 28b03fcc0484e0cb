import { afterAll, expect, it } from 'vitest';
import { systemClock } from '../../src/core/time/clock.js';
import type { Store } from '../../src/core/ports/store.js';
import type { ServeOptions } from '../../src/server/serve.js';
import { api, startTestServer, tempDir, type TestServer } from '../helpers/server.js';
import { describeWith, postgres, schemaUrl } from '../helpers/services.js';
import { pgSchema } from '../contract/adapters.js';
import { WEBHOOK_CHANNEL } from '../../src/webhooks/dispatcher.js';
import { until } from '../helpers/poll.js';
import { linkedLine } from './send-helpers.js';
import { setWebhook, startReceiver, waitFor, type Receiver } from './webhook-helpers.js';

/**
 * Two nodes on one PostgreSQL store (D-144): a delivery logged on node A
 * while node B holds the client's outbox is signalled to B, whose
 * dispatcher claims and posts it at once. Neither node's safety look
 * (`--webhook-poll`) nor A's retry of its take comes within the test: both
 * are an hour away.
 */
describeWith(postgres, 'a delivery made on a node whose client another node holds (PostgreSQL)', () => {
  const close: Array<() => Promise<void>> = [];
  afterAll(async () => {
    for (const c of close.reverse()) await c().catch(() => undefined);
  });

  /** The ids each store's claims took. */
  const claimsOf = (store: Store): string[] => {
    const ids: string[] = [];
    const claim = store.claimEntregas.bind(store);
    store.claimEntregas = async (...args) => {
      const rows = await claim(...args);
      ids.push(...rows.map((r) => r.id));
      return rows;
    };
    const both = store.recordAndClaim.bind(store);
    store.recordAndClaim = async (...args) => {
      const r = await both(...args);
      ids.push(...r.claimed.map((x) => x.id));
      return r;
    };
    return ids;
  };

  /**
   * Nodes A and B on a fresh schema, their looks an hour away, and a client's webhook on a receiver that leaves the
   * first two requests hanging (the test answers the first) and answers the rest. `beforeLine` runs before the line.
   */
  async function twoNodes(beforeLine: (a: TestServer, b: TestServer) => void) {
    const schema = await pgSchema();
    close.push(schema.drop);
    let n = 0;
    const R: Receiver = await startReceiver(() => (++n <= 2 ? 'hang' : 200));
    close.push(() => R.close());
    const hour = 3_600_000;
    const over: Partial<ServeOptions> = {
      store: schemaUrl(schema.schema),
      clock: systemClock,
      allowPrivateUrls: true,
      webhookPollMs: hour,
      webhookHeldRetryMs: hour,
    };
    const a: TestServer = await startTestServer(over);
    close.push(() => a.stop());
    const b: TestServer = await startTestServer({ ...over, dataDir: tempDir() });
    close.push(() => b.stop());
    beforeLine(a, b);
    const L = await linkedLine(a);
    expect((await setWebhook(a, L.clientKey, { url: R.url })).status).toBe(200);
    const testEvent = async (s: TestServer) => {
      const r = await api(s.url, 'POST', '/api/webhook_test.php', { key: L.clientKey });
      expect(r.status, r.text).toBe(200);
      return r.body.id as string;
    };
    return { a, b, R, testEvent };
  }

  it('is claimed and sent by the holder when it hears, while its own delivery still hangs: no look of either node', async () => {
    let byA: string[] = [];
    let byB: string[] = [];
    const { R, testEvent, a, b } = await twoNodes((a, b) => {
      byA = claimsOf(a.core.store);
      byB = claimsOf(b.core.store);
    });

    // Two events through B. The first hangs (B holds the outbox, one in flight) while the second is logged; answered, it
    // lets B claim the second, which hangs: B still holds the outbox, with a claim that was not full (one more may start).
    const first = await testEvent(b);
    await waitFor(() => R.hanging.length === 1, 'the first delivery hanging on B');
    const second = await testEvent(b);
    R.hanging[0]!.writeHead(200).end('ok');
    await waitFor(() => R.hanging.length === 2, 'the second delivery hanging on B');
    expect(byB).toEqual([first, second]);

    // An event through A: A's take is refused, it signals the client, and B claims and posts it beside the hanging one.
    const third = await testEvent(a);
    await R.wait((h) => h.headers['webhook-id'] === third, 5000, 'the event made on A, posted by B');
    expect(byB).toContain(third);
    expect(byA).not.toContain(third);
    expect(R.hanging[1]!.writableEnded).toBe(false);
  });

  it('a burst of events on the node that does not hold the outbox: every one posted with no look, on fewer signals than events (D-152)', async () => {
    const signals: string[] = [];
    const { R, testEvent, b, a } = await twoNodes((a) => {
      const publish = a.core.signals.publish.bind(a.core.signals);
      a.core.signals.publish = async (channel, payload) => {
        if (channel === WEBHOOK_CHANNEL) signals.push(payload);
        return publish(channel, payload);
      };
    });
    // As above: B holds the outbox with one delivery hanging and room for more.
    await testEvent(b);
    await waitFor(() => R.hanging.length === 1, 'the first delivery hanging on B');
    await testEvent(b);
    R.hanging[0]!.writeHead(200).end('ok');
    await waitFor(() => R.hanging.length === 2, 'the second delivery hanging on B');
    // Twenty events through A at once: each tells B, but no more than once a claim gap; none waits for a look.
    const ids = await Promise.all(Array.from({ length: 20 }, () => testEvent(a)));
    await until(() => ids.every((id) => R.of(id).length === 1), {
      what: () => `every event made on A, posted by B (${ids.filter((id) => R.of(id).length > 0).length} of 20 posted, ${signals.length} signals)`,
      timeoutMs: 5000,
    });
    expect(signals.length).toBeGreaterThan(0);
    expect(signals.length).toBeLessThan(ids.length);
  });
});
