import { request, type IncomingMessage } from 'node:http';
import { until } from '../helpers/poll.js';

/**
 * A Server-Sent Events client over a real socket, for the event stream's
 * suites: parses `id:`/`event:`/`data:` frames and `:` comments as they
 * arrive, and can stop reading (pause) to play a slow reader.
 */
export interface SseEvent {
  id: string;
  event: string;
  data: string;
}

export interface SseStream {
  status: number;
  headers: IncomingMessage['headers'];
  events: SseEvent[];
  comments: string[];
  /** The body as JSON, for an answer that is not a stream (an error). */
  json(): Promise<any>;
  /** Resolves when the server ended or dropped the stream. */
  ended: Promise<'end' | 'cut'>;
  isEnded(): boolean;
  /** Waits until `n` events arrived; returns them. */
  waitEvents(n: number, ms?: number): Promise<SseEvent[]>;
  /** Stops reading the socket / reads again. */
  pause(): void;
  resume(): void;
  close(): void;
}

export function openStream(base: string, path: string, key: string | null, headers: Record<string, string> = {}): Promise<SseStream> {
  return new Promise((resolve, reject) => {
    const req = request(base + path, { headers: { ...headers, ...(key ? { authorization: `Bearer ${key}` } : {}) } }, (res) => {
      const events: SseEvent[] = [];
      const comments: string[] = [];
      let buf = '';
      let raw = '';
      let done = false;
      let endedResolve!: (how: 'end' | 'cut') => void;
      const ended = new Promise<'end' | 'cut'>((r) => (endedResolve = r));
      const finish = (how: 'end' | 'cut') => {
        if (done) return;
        done = true;
        endedResolve(how);
      };
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        raw += res.statusCode === 200 ? '' : chunk;
        buf += chunk;
        let i: number;
        while ((i = buf.indexOf('\n\n')) >= 0) {
          const frame = buf.slice(0, i);
          buf = buf.slice(i + 2);
          const ev: Partial<SseEvent> = {};
          for (const line of frame.split('\n')) {
            if (line.startsWith(':')) comments.push(line.slice(1).trim());
            else if (line.startsWith('id: ')) ev.id = line.slice(4);
            else if (line.startsWith('event: ')) ev.event = line.slice(7);
            else if (line.startsWith('data: ')) ev.data = line.slice(6);
          }
          if (ev.id !== undefined) events.push(ev as SseEvent);
        }
      });
      res.on('end', () => finish('end'));
      res.on('aborted', () => finish('cut'));
      res.on('error', () => finish('cut'));
      res.on('close', () => finish(res.complete ? 'end' : 'cut'));
      resolve({
        status: res.statusCode ?? 0,
        headers: res.headers,
        events,
        comments,
        json: async () => {
          await ended;
          return JSON.parse(raw);
        },
        ended,
        isEnded: () => done,
        waitEvents: (n, ms = 10_000) => until(() => events.length >= n && events.slice(0, n), { what: `${n} events (have ${events.length})`, timeoutMs: ms }),
        pause: () => res.pause(),
        resume: () => res.resume(),
        close: () => req.destroy(),
      });
    });
    req.on('error', reject);
    req.end();
  });
}
