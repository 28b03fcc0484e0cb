import { API } from '../core/api/api-routes.js';
import { generateSecret, sign } from '../webhooks/sign.js';
import type { Ctx } from './context.js';
import { followEvents } from './event-follow.js';
import { forward, printEvent, type Forwarded } from './webhook-listen.js';

/**
 * `webhook listen --stream` (and a listen whose server cannot reach this
 * machine): no inbound connection. It follows the event stream
 * (`GET /api/eventos.php`, resuming by Last-Event-ID across drops) and, with
 * --forward-to, posts each event to the local app as a delivery does: the
 * same body bytes (the stream's data is the webhook body), the same headers
 * (`webhook-id` the event's id, `webhook-timestamp`, `X-Service-Event`) and
 * both signatures (webhooks/sign.ts), made here with `--secret` (the app's
 * own, so its check passes unchanged) or a new secret shown with
 * --print-secret. Events are forwarded one at a time, in the stream's order.
 */
export interface StreamListenOptions {
  forwardTo?: string;
  eventos: string[];
  secret?: string;
  printSecret: boolean;
}

/** The user agent of a forwarded event: a listen, not the server's delivery. */
const USER_AGENT = 'pasarela-webhook-listen';

export async function listenByStream(ctx: Ctx, o: StreamListenOptions): Promise<void> {
  const secret = o.secret ?? generateSecret();
  const to = o.forwardTo ? `, signed and forwarded to ${o.forwardTo}` : '';
  const shown = o.secret ? '(signed with --secret)' : o.printSecret ? `(secret: ${secret})` : '(secret hidden; --print-secret shows it)';
  ctx.term.err(
    `Ready: following the event stream of ${ctx.url()} (${API.eventos}; no inbound connection)${to} ${shown}. ` +
      'Nothing on the server changes. Ctrl-C stops.',
  );
  let chain = Promise.resolve();
  const each = async (ev: { id: string; evento: string; data: string }) => {
    let parsed: unknown;
    try {
      parsed = JSON.parse(ev.data);
    } catch {
      parsed = ev.data;
    }
    let fwd: Forwarded | undefined;
    if (o.forwardTo) {
      const ts = Math.floor(Date.now() / 1000);
      const headers = {
        'content-type': 'application/json',
        'user-agent': USER_AGENT,
        'x-service-event': ev.evento,
        'webhook-id': ev.id,
        'webhook-timestamp': String(ts),
        ...sign(secret, ev.id, ts, ev.data),
      };
      fwd = await forward(o.forwardTo, headers, Buffer.from(ev.data, 'utf8'));
    }
    printEvent(ctx, { id: ev.id, evento: ev.evento, parsed, note: 'from the stream', forwardTo: o.forwardTo, fwd });
  };
  const eventos = o.eventos.includes('all') ? undefined : o.eventos.join(',');
  await followEvents(ctx, { follow: true, eventos }, (ev) => {
    chain = chain.then(() => each(ev)).catch((err: unknown) => ctx.term.err(`error forwarding ${ev.id}: ${(err as Error).message}`));
  });
  await chain;
  ctx.term.err('Stopped following the event stream.');
}
