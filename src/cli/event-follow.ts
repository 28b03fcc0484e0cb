import { StringDecoder } from 'node:string_decoder';
import { API } from '../core/api/api-routes.js';
import type { HttpAnswer } from './client.js';
import type { Ctx } from './context.js';
import { CliError } from './exit-codes.js';
import { EXIT } from '../shared/exit-codes.js';
import { isTransient } from './watch.js';

/**
 * Reads the event stream (`GET /api/eventos.php`, Server-Sent Events) for
 * `pasarela eventos`: each event as it comes, with its id. Following, a
 * dropped connection or a stopping server is ridden out: it connects again
 * with Last-Event-ID, after a pause of 0.25 s doubling to 5 s, and says so
 * once on stderr. It ends on SIGINT/SIGTERM; without following, when the
 * server has sent what its log holds.
 */
export interface StreamedEvent {
  id: string;
  evento: string;
  /** The webhook body, as the server sent it. */
  data: string;
}

export interface FollowOptions {
  follow: boolean;
  eventos?: string;
  celular?: number;
  desdeId?: string;
  /** Called each time the stream is open (what happens from then on will come through it). */
  onOpen?: (stop: () => void) => void | Promise<void>;
  /** Ends the reading when aborted (a --timeout). */
  signal?: AbortSignal;
}

/** The server pings at least every 15 s: a connection silent this long is dead. */
const SILENCE_MS = 45_000;
const MAX_PAUSE_MS = 5_000;

/** Splits SSE frames as bytes arrive; comments (`: ping`) and fields other than id/event/data are skipped. */
export class SseParser {
  private buf = '';
  private readonly decoder = new StringDecoder('utf8');

  push(chunk: Buffer | Uint8Array | string): StreamedEvent[] {
    this.buf += typeof chunk === 'string' ? chunk : this.decoder.write(Buffer.from(chunk));
    const out: StreamedEvent[] = [];
    let i: number;
    while ((i = this.buf.indexOf('\n\n')) >= 0) {
      const frame = this.buf.slice(0, i);
      this.buf = this.buf.slice(i + 2);
      let id: string | undefined;
      let evento = 'message';
      const data: string[] = [];
      for (const line of frame.split('\n')) {
        const colon = line.indexOf(':');
        if (colon === 0) continue;
        const field = colon < 0 ? line : line.slice(0, colon);
        const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
        if (field === 'id') id = value;
        else if (field === 'event') evento = value;
        else if (field === 'data') data.push(value);
      }
      if (id !== undefined && data.length > 0) out.push({ id, evento, data: data.join('\n') });
    }
    return out;
  }
}

/**
 * Calls `each` for every event until the stream ends (not following), a
 * signal or `o.signal` stops it, or `each` (or `o.onOpen`) asks to stop by
 * calling `stop`; the last id seen.
 */
export async function followEvents(ctx: Ctx, o: FollowOptions, each: (ev: StreamedEvent, stop: () => void) => void): Promise<string | undefined> {
  const client = ctx.client();
  const key = ctx.key();
  let last = o.desdeId;
  let stopped = false;
  let current: HttpAnswer['body'] | undefined;
  let wakeUp = () => {};
  const stop = () => {
    stopped = true;
    (current as { destroy?: () => void } | undefined)?.destroy?.();
    wakeUp();
  };
  const off = ctx.term.io.onSignal?.(stop);
  o.signal?.addEventListener('abort', stop, { once: true });
  if (o.signal?.aborted) stop();
  let pause = 250;
  let down = false;
  try {
    while (!stopped) {
      try {
        const res = await client.stream(API.eventos, {
          key,
          query: { eventos: o.eventos, celular_id: o.celular, seguir: o.follow ? undefined : 0 },
          headers: last ? { 'last-event-id': last } : {},
          timeoutMs: SILENCE_MS,
          fields: { eventos: '--eventos', celular_id: '--celular', 'last-event-id': '--desde-id' },
        });
        current = res.body;
        if (stopped) (res.body as { destroy?: () => void }).destroy?.();
        if (down) ctx.term.err(`reconnected; resuming after ${last ?? 'the start'}`);
        down = false;
        pause = 250;
        const parser = new SseParser();
        await o.onOpen?.(stop);
        if (stopped) return last;
        for await (const chunk of res.body) {
          for (const ev of parser.push(chunk)) {
            last = ev.id;
            each(ev, stop);
            if (stopped) return last;
          }
        }
        if (!o.follow || stopped) return last;
        // The server ended the stream (it is stopping): connect again, to it or another node.
        throw new CliError('the server ended the stream', EXIT.UNREACHABLE);
      } catch (err) {
        if (stopped) return last;
        const cut = !(err instanceof CliError);
        if (!o.follow || !(cut || isTransient(err))) {
          if (cut) throw new CliError(`lost the connection to the server while reading events (${(err as Error).message})`, EXIT.UNREACHABLE);
          throw err;
        }
        if (!down) ctx.term.err(`connection lost (${(err as Error).message}); reconnecting…`);
        down = true;
        // A signal during the pause ends it at once.
        await new Promise<void>((r) => {
          const t = setTimeout(r, pause);
          wakeUp = () => {
            clearTimeout(t);
            r();
          };
        });
        pause = Math.min(pause * 2, MAX_PAUSE_MS);
      }
    }
    return last;
  } finally {
    off?.();
    o.signal?.removeEventListener('abort', stop);
  }
}
