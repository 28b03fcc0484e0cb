import { afterAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/core/time/clock.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { expectOk } from '../helpers/expect.js';
import { admin, linkedLine } from './send-helpers.js';
import { setWebhook, startReceiver, waitEntrega, waitFor, type Receiver } from './webhook-helpers.js';

/**
 * Ticks that stand still: the client's outbox is never idle long enough to
 * be given back, so its queue (and the window its deliveries grew) stays, and
 * the safety look never comes.
 */
class StillTicks extends ManualClock {
  override ticks(): number {
    return 0;
  }
}

/**
 * A wake that comes while a look awaits a claim (D-152): an event logged a
 * millisecond after the look read the clock pokes its client during the
 * claim. The look's next claim of the client must take it, so it reads the
 * clock itself. With the look's time, that claim found nothing due, cleared
 * the hint, and was not full: nothing woke the dispatcher for the delivery
 * before its safety look (`--webhook-poll`). On SQLite (no claim gap) a
 * full-suite run once waited 5 s so.
 */
describe('a webhook wake during a claim (SQLite, the look driven by the clock)', () => {
  let s: TestServer;
  let R: Receiver;
  afterAll(async () => {
    await s?.stop();
    await R?.close();
  });

  it("an event poked while the look claims its client's deliveries is claimed by that look", async () => {
    R = await startReceiver(200);
    const clock = new StillTicks(Date.now());
    s = await startTestServer({ clock, allowPrivateUrls: true });
    const L = await linkedLine(s);
    expectOk(await setWebhook(s, L.clientKey, { url: R.url, eventos: ['messages.received'] }));
    const receive = async (texto: string) => expectOk(await admin(s, 'POST', '/admin/sim/receive', { celular_id: L.celularId, de: '525511112222', texto }));
    // Delivered and recorded: the client's window is 2, so a claim that takes one is not full (the dispatcher reads no more).
    await receive('first');
    const first = await R.wait();
    await waitEntrega(s, L.clientKey, first.json.id as string, (e) => e.estado === 'entregado', 'the first delivery recorded');

    // During the next claim of the client: a millisecond on, another event, whose poke finds the look in progress.
    const store = s.core.store;
    const claim = store.claimEntregas.bind(store);
    let late: Promise<void> | null = null;
    store.claimEntregas = async (...args) => {
      if (late === null && args[0] === L.clienteId) {
        late = (async () => {
          clock.advance(1);
          await receive('late');
        })();
        await late;
      }
      return claim(...args);
    };
    await receive('on time');
    await waitFor(() => R.hits.length >= 3, 'both deliveries, with no safety look');
    expect(R.hits.map((h) => (h.json as { data: { texto: string } }).data.texto)).toEqual(['first', 'on time', 'late']);
  });
});
