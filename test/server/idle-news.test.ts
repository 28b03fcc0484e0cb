import { expect, it } from 'vitest';
import type { Store } from '../../src/core/ports/store.js';
import { messages } from '../contract/adapters.js';
import { until } from '../helpers/poll.js';
import { describeWith, postgres } from '../helpers/services.js';
import { linkedLine, waitEstado } from './send-helpers.js';
import { pgServersWithReceiver, setWebhook } from './webhook-helpers.js';

/**
 * D-197 on a real server on PostgreSQL: the queue's and the webhooks' safety looks read the store only when the last
 * beat found something for them, and what no signal announced (written straight to the store here, as a node whose
 * signal was lost would leave it) is still found, by the look after the next beat. Polls and beats are short here so
 * the waits are too; nothing is timed, every wait is for a count or a state.
 */
const SENT = ['enviado', 'entregado', 'leido'];

/** Counts the looks' reads and the beats; `silent` makes the beats tell nothing, as a store served alone does. */
function counted(store: Store) {
  const n = { looks: 0, webhookLooks: 0, beats: 0, silent: false };
  const look = store.queueLook.bind(store);
  const webhookLook = store.webhookLook.bind(store);
  const beat = store.nodeBeat.bind(store);
  store.queueLook = async (...a) => (n.looks++, look(...a));
  store.webhookLook = async (...a) => (n.webhookLooks++, webhookLook(...a));
  store.nodeBeat = async (...a) => {
    const news = await beat(...a);
    n.beats++;
    return n.silent ? null : news;
  };
  return n;
}

describeWith(postgres, 'postgres: safety looks that read only what a beat found (D-197)', () => {
  const start = pgServersWithReceiver();
  // A long takeover margin: however slow this machine, the node stays fresh, so its news stays usable.
  const over = { queuePollMs: 200, webhookPollMs: 200, nodeBeatMs: 100, nodeTakeoverMarginMs: 60_000 };

  it('an idle node reads neither the queue nor the outbox at its safety looks; with beats that tell nothing it reads both', async () => {
    const { s } = await start(over);
    const n = counted(s.core.store);
    const beats = async (k: number) => {
      const from = n.beats;
      await until(() => n.beats >= from + k, { what: `${k} beats`, timeoutMs: 30_000 });
    };
    await beats(3);
    const quiet = { ...n };
    // Twenty beats: about ten safety looks of each.
    await beats(20);
    expect(n.looks - quiet.looks).toBe(0);
    expect(n.webhookLooks - quiet.webhookLooks).toBe(0);
    // The control: the same node, its beats telling nothing; its safety looks read again.
    n.silent = true;
    const told = { ...n };
    await until(() => n.looks > told.looks + 2 && n.webhookLooks > told.webhookLooks + 2, { what: 'the safety looks reading', timeoutMs: 30_000 });
    n.silent = false;
  });

  it('a queued message no signal announced is sent once a beat has seen it', async () => {
    const { s } = await start(over);
    const n = counted(s.core.store);
    const L = await linkedLine(s);
    const msg = messages(L.clienteId, L.celularId);
    // Queued straight in the store: no accept on this node, no signal; found by the look after a beat.
    const queued = msg();
    expect(await s.core.store.acceptMensaje(queued, { charge: true, maxPending: null }, s.clock.now())).toMatchObject({ ok: true });
    const sent = await waitEstado(s, queued.msg_id, SENT, 30_000);
    expect(sent.estado).not.toBe('pendiente');
    expect(n.beats).toBeGreaterThan(0);
  });

  it('while a delivery is pending, the safety looks read the outbox at every poll', async () => {
    const { s, R } = await start(over);
    const n = counted(s.core.store);
    const L = await linkedLine(s);
    expect((await setWebhook(s, L.clientKey, { url: R.url, eventos: ['message.status'] })).status).toBe(200);
    // Refused by the receiver: the delivery stays pending, its retry far off.
    R.answer = 500;
    const directo = messages(L.clienteId, L.celularId)('directo');
    expect(await s.core.store.acceptMensaje(directo, { charge: true, maxPending: null }, s.clock.now())).toMatchObject({ ok: true });
    await s.core.store.failMensaje(directo.msg_id, 'refused', 'rechazado', s.clock.now());
    await R.wait((h) => h.body.includes(directo.msg_id), 30_000, "the direct send's failure posted");
    // Its beats say the outbox holds something: the looks go on reading it (an idle node with nothing pending reads none, above).
    const [looks, beats] = [n.webhookLooks, n.beats];
    await until(() => n.beats >= beats + 20, { what: 'twenty beats', timeoutMs: 30_000 });
    expect(n.webhookLooks - looks).toBeGreaterThan(2);
  });
});
