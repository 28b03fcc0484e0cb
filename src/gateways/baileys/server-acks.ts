import type { BinaryNode } from 'baileys';
import { GatewayFailure } from '../../core/ports/gateway.js';

/**
 * The network's ack of each message stanza one socket sent (docs/decisions.md
 * D-194). Baileys' sendMessage resolves once the stanza is written to the
 * socket, not once the network has it: a socket that ends in between (a
 * hand-over, a dropped connection) loses it, and a send recorded on the write
 * alone would be `enviado` with nothing sent. A send is taken once its ack
 * comes; a socket that ends first leaves its outcome unknown.
 */
export class ServerAcks {
  private readonly waiting = new Map<string, { ok: () => void; fail: (err: GatewayFailure) => void }>();
  private ended = false;

  /** Registered before the stanza is written (the ack can beat sendMessage's own return); settles once. */
  expect(id: string): Promise<void> {
    if (this.ended) return Promise.reject(closedFailure());
    return new Promise((ok, fail) => this.waiting.set(id, { ok, fail }));
  }

  /** A send that failed or gave up: its wait is dropped, not settled. */
  forget(id: string): void {
    this.waiting.delete(id);
  }

  /** An `<ack class="message">` from the network: taken, or refused with an error code. */
  onAck(node: BinaryNode): void {
    const id = node.attrs.id ?? '';
    const w = this.waiting.get(id);
    if (!w) return;
    this.waiting.delete(id);
    const error = node.attrs.error;
    // Refused: the network holds no copy to deliver. Some refusals pass (Baileys repairs a missing privacy token), so a queued send tries again.
    if (error) w.fail(new GatewayFailure(`the network refused the message (error ${error})`, 'transient'));
    else w.ok();
  }

  /** The socket ended: every send still waiting may or may not have reached the network. */
  close(): void {
    this.ended = true;
    for (const w of this.waiting.values()) w.fail(closedFailure());
    this.waiting.clear();
  }
}

const closedFailure = () => new GatewayFailure('the connection ended before the network acknowledged the message', 'transient', undefined, true);
