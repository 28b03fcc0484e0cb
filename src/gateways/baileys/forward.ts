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
  private readonly agent = new Agent({ keepAliveTimeout: 30_000, connections: 16 });

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
      const refused = (err as { code?: string }).code === 'ECONNREFUSED';
      throw new GatewayFailure(
        `the node holding ${call.instancia} did not answer (${err instanceof Error ? err.message : String(err)})`,
        'transient',
        undefined,
        call.op === 'send' && !refused,
      );
    }
    const text = await res.body.text().catch(() => '');
    let a: CallAnswer;
    try {
      a = JSON.parse(text) as CallAnswer;
    } catch {
      throw new GatewayFailure(
        `the node holding ${call.instancia} answered ${res.statusCode} without a result`,
        'transient',
        undefined,
        sent && call.op === 'send',
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
