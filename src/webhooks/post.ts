import type { Dispatcher } from 'undici';
import type { AttemptDeadline } from './deadline.js';

/** What a webhook POST answered; `status` is set once the answer's headers came (null while none did). */
export interface PostAnswer {
  status: number | null;
  retryAfter: string | undefined;
}

/**
 * One webhook POST through the agent's `dispatch`: the answer read and
 * dropped as it comes, no Response or stream objects (D-155). Resolves when
 * the whole answer came, or at once when it is longer than `limit` bytes (the
 * connection closed, as `body.dump({ limit })` does); rejects when the request
 * fails or the deadline cuts it, headers and body alike (`answer.status` tells
 * whether the headers came first).
 */
export function post(
  agent: Dispatcher,
  url: URL,
  headers: Record<string, string>,
  body: string,
  deadline: AttemptDeadline,
  limit: number,
  answer: PostAnswer,
): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    let abort: ((err: Error) => void) | null = null;
    let read = 0;
    let settled = false;
    const end = (err: Error | null): void => {
      if (settled) return;
      settled = true;
      deadline.onCut = null;
      if (err) reject(err);
      else resolve();
    };
    /** Over the limit: the rest is not read, the connection is closed, and the answer stands. */
    const tooLong = (): void => {
      end(null);
      abort?.(new Error('the answer is longer than the limit'));
    };
    const handler: Dispatcher.DispatchHandler = {
      onConnect(a: (err?: Error) => void) {
        abort = a;
        if (deadline.reason) a(deadline.reason);
      },
      onHeaders(statusCode: number, raw: Buffer[]) {
        // 1xx: informational, the answer comes after.
        if (statusCode < 200) return true;
        answer.status = statusCode;
        for (let i = 0; i + 1 < raw.length; i += 2) {
          const name = raw[i]!;
          if (name.length === 11 && answer.retryAfter === undefined && name.toString('latin1').toLowerCase() === 'retry-after') {
            answer.retryAfter = raw[i + 1]!.toString('latin1');
          } else if (name.length === 14 && name.toString('latin1').toLowerCase() === 'content-length') {
            if (Number(raw[i + 1]!.toString('latin1')) > limit) tooLong();
          }
        }
        return true;
      },
      onData(chunk: Buffer) {
        read += chunk.length;
        if (read > limit) tooLong();
        return true;
      },
      onComplete() {
        end(null);
      },
      onError(err: Error) {
        end(err);
      },
    };
    if (deadline.reason) return end(deadline.reason);
    deadline.onCut = (reason) => {
      end(reason);
      abort?.(reason);
    };
    const path = url.search ? `${url.pathname}${url.search}` : url.pathname;
    agent.dispatch({ origin: url.origin, path, method: 'POST', headers, body }, handler);
  });
}
