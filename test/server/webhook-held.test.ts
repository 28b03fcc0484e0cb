import { randomUUID } from 'node:crypto';
import { expect, it } from 'vitest';
import { stream } from '../../src/core/nodes/leases.js';
import { expectOk } from '../helpers/expect.js';
import { api } from '../helpers/server.js';
import { describeWith, postgres } from '../helpers/services.js';
import { linkedLine } from './send-helpers.js';
import { pgServersWithReceiver, setWebhook, waitFor } from './webhook-helpers.js';

/**
 * Several nodes: a client's webhook outbox is a stream lease one node holds
 * at a time. A node whose take found another holder does not ask again for
 * `webhookHeldRetryMs`, whatever its own events hint meanwhile (before, each
 * of them cost a take: two and more round trips a message on three nodes);
 * the holder, or this node once its wait ends, posts them.
 */
describeWith(postgres, "a client's webhook outbox another node holds (PostgreSQL)", () => {
  const start = pgServersWithReceiver();

  it("a node's events while another node holds the client's outbox cost one take, and are delivered once it is free", async () => {
    const { s, R } = await start({ webhookHeldRetryMs: 2_000 });
    const L = await linkedLine(s);
    expectOk(await setWebhook(s, L.clientKey, { url: R.url }));
    const store = s.core.store;
    // Another node holds the client's outbox.
    const other = `other-${randomUUID()}`;
    const outbox = stream.webhooks(L.clienteId);
    await store.nodeBeat({ id: other, label: 'another node', staleMs: 60_000, marginMs: 10_000, engineUrl: null }, Date.now());
    expect((await store.leaseTake(other, [outbox], Date.now()))[0]).toMatchObject({ taken: true });
    /** When this node asked for the outbox (its own clock, the one its wait is counted on). */
    const takes: number[] = [];
    const take = store.leaseTake.bind(store);
    store.leaseTake = async (node, streams, now, gives) => {
      if (streams.includes(outbox)) takes.push(Date.now());
      return take(node, streams, now, gives);
    };
    const ids: string[] = [];
    for (let i = 0; i < 8; i++) {
      const r = await api(s.url, 'POST', '/api/webhook_test.php', { key: L.clientKey });
      expect(r.status, r.text).toBe(200);
      ids.push(r.body.id as string);
    }
    // Eight events of this node: one take within its wait (a second comes only once the wait has ended).
    expect(takes.length).toBeGreaterThanOrEqual(1);
    expect(takes.filter((t) => t < takes[0]! + 2_000)).toHaveLength(1);
    expect(R.hits).toHaveLength(0);
    // The other node leaves: this node's wait ends and it posts every event, each once.
    await store.leaseGive(other, outbox, 0, Date.now());
    await store.nodeLeave(other);
    await waitFor(() => new Set(R.hits.map((h) => h.json.id as string)).size === ids.length, 'the 8 test events', 15_000);
    expect(R.hits.map((h) => h.json.id as string).sort()).toEqual([...ids].sort());
  });
});
