import { createHmac, timingSafeEqual } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { Readable } from 'node:stream';
import { Agent, request } from 'undici';
import { GatewayFailure, type FailureKind } from '../../core/ports/gateway.js';

/**
 * A call to the engine of the node that holds a line (D-136): `POST
 * <its engine URL>/interno/motor`, authenticated by a key every node of the
 * store derives from the secret they share. The body is the call as JSON,
 * its length in a header, followed by a send's media bytes when it has a
 * local file. The holder answers the call's result or its GatewayFailure,
 * so the caller cannot tell the line was elsewhere.
 */
export const FORWARD_PATH = '/interno/motor';
export const FORWARD_TYPE = 'application/x-pasarela-motor';
export const CALL_BYTES_HEADER = 'x-pasarela-llamada-bytes';
/** A call's JSON (a message's text and fields): bounded, whatever follows it. */
export const MAX_CALL_BYTES = 256 * 1024;

/** The key between nodes: derived, so the shared secret itself never travels. */
export function nodeKey(sharedSecret: string): string {
  return createHmac('sha256', sharedSecret).update('pasarela: calls between the engines of one store').digest('base64url');
}

export function nodeKeyMatches(expected: string, authorization: string | undefined): boolean {
  const got = Buffer.from(/^Bearer (.+)$/.exec(authorization ?? '')?.[1] ?? '');
  const want = Buffer.from(expected);
  return got.length === want.length && timingSafeEqual(got, want);
}

export interface EngineCall {
  op: 'connect' | 'pairingCode' | 'status' | 'logout' | 'restart' | 'profile' | 'deleteInstance' | 'send';
  instancia: string;
  args: unknown[];
}

export type CallAnswer =
  { ok: true; value: unknown } | { ok: false; error: { message: string; kind: FailureKind; retryAfterMs?: number; mayHaveSent?: boolean; moved?: boolean } };

/** Errors of a call that never reached the holder: nothing was sent. */
const NOT_REACHED = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'UND_ERR_CONNECT_TIMEOUT']);

/** The holder's answer, or null when the body is something else. */
function answerIn(text: string): CallAnswer | null {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return null;
  }
  if (typeof v !== 'object' || v === null || !('ok' in v)) return null;
  if (v.ok === true) return { ok: true, value: 'value' in v ? v.value : null };
  if (v.ok !== false || !('error' in v) || typeof v.error !== 'object' || v.error === null) return null;
  const e = v.error as Record<string, unknown>;
  if (typeof e.message !== 'string' || (e.kind !== 'permanent' && e.kind !== 'transient' && e.kind !== 'rate_limited')) return null;
  return {
    ok: false,
    error: {
      message: e.message,
      kind: e.kind,
      retryAfterMs: typeof e.retryAfterMs === 'number' ? e.retryAfterMs : undefined,
      mayHaveSent: e.mayHaveSent === true,
      moved: e.moved === true,
    },
  };
}

/** The holder no longer holds the line: the caller looks again. */
export class LineMoved extends Error {}

export function answerOf(err: unknown, op: EngineCall['op']): CallAnswer {
  if (err instanceof LineMoved) return { ok: false, error: { message: err.message, kind: 'transient', moved: true } };
  if (err instanceof GatewayFailure)
    return { ok: false, error: { message: err.message, kind: err.kind, retryAfterMs: err.retryAfterMs, mayHaveSent: err.mayHaveSent } };
  // Unexpected: a send may have gone before it threw.
  return { ok: false, error: { message: err instanceof Error ? err.message : String(err), kind: 'transient', mayHaveSent: op === 'send' } };
}

export class NodeForwarder {
  // No cap on connections: a call waiting in the pool would spend its deadline unsent and be taken for "may have sent".
  private readonly agent = new Agent({ keepAliveTimeout: 30_000 });

  constructor(private readonly key: string) {}

  /**
   * Makes the call on the holder within `deadlineMs`. Not reached: a
   * transient failure (nothing sent). No answer in time, or a connection lost
   * after the call went: the send's outcome is unknown (mayHaveSent).
   */
  async call(url: string, call: EngineCall, deadlineMs: number, file?: string): Promise<unknown> {
    const head = Buffer.from(JSON.stringify(call));
    const body = file ? Readable.from(concatStreams(head, file)) : head;
    let sent = false;
    let res;
    try {
      res = await request(new URL(FORWARD_PATH, url), {
        method: 'POST',
        dispatcher: this.agent,
        headers: { authorization: `Bearer ${this.key}`, 'content-type': FORWARD_TYPE, [CALL_BYTES_HEADER]: String(head.length) },
        body,
        headersTimeout: deadlineMs,
        bodyTimeout: deadlineMs,
        signal: AbortSignal.timeout(deadlineMs),
      });
      sent = true;
    } catch (err) {
      const code = (err as { code?: string }).code ?? '';
      throw new GatewayFailure(
        `pasarela could not reach the node holding ${call.instancia} (${err instanceof Error ? err.message : String(err)})`,
        'transient',
        undefined,
        call.op === 'send' && !NOT_REACHED.has(code),
      );
    }
    const text = await res.body.text().catch(() => '');
    const a = answerIn(text);
    if (!a) {
      // Not the holder's answer (a proxy's, a node without the route, a crash mid-call): a 4xx was refused before the call ran.
      const ran = sent && res.statusCode >= 500;
      throw new GatewayFailure(
        `the node holding ${call.instancia} answered ${res.statusCode} without a result`,
        'transient',
        undefined,
        ran && call.op === 'send',
      );
    }
    if (a.ok) return a.value;
    if (a.error.moved) throw new LineMoved(a.error.message);
    throw new GatewayFailure(a.error.message, a.error.kind, a.error.retryAfterMs, a.error.mayHaveSent === true);
  }

  close(): Promise<void> {
    return this.agent.close();
  }
}

async function* concatStreams(head: Buffer, file: string): AsyncGenerator<Buffer> {
  yield head;
  for await (const chunk of createReadStream(file)) yield chunk as Buffer;
}
