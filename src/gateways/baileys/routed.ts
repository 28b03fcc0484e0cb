import type { EngineKeeper } from '../../core/engine/engine-keeper.js';
import type { EngineHoldsStore } from '../../core/ports/engine-holds.js';
import {
  GatewayFailure,
  type Gateway,
  type GatewayEvent,
  type OutboundMessage,
  type PairingResult,
  type QrResult,
  type SessionProfile,
} from '../../core/ports/gateway.js';
import type { SessionStatus } from '../../core/ports/model.js';
import type { BaileysGateway } from './adapter.js';
import { LineMoved, type EngineCall, type NodeForwarder } from './forward.js';

/** A call that starts a session takes the line for this node when nobody holds it. */
const STARTS: ReadonlySet<EngineCall['op']> = new Set(['connect', 'pairingCode', 'restart']);

/**
 * The engine as the core sees it on every node (D-136): a line's call runs
 * here when this node holds the line's session, and on its holder otherwise
 * (forward.ts), answered the same either way. A call that starts a session
 * (a QR, a pairing code, a restart) on a line nobody holds takes it for this
 * node first. Events come from this node's own sockets only, so each
 * receipt and message is reported once, by the line's holder.
 */
export class RoutedEngine implements Gateway {
  readonly name = 'baileys';
  readonly simulated = false;
  readonly capabilities;
  private keeper: EngineKeeper | undefined;

  constructor(
    private readonly engine: BaileysGateway,
    private readonly store: Pick<EngineHoldsStore, 'holdOf'>,
    private readonly forwarder: NodeForwarder,
    private readonly deadlines: { timeoutMs: number; sendTimeoutMs: number; now: () => number },
  ) {
    this.capabilities = engine.capabilities;
  }

  /** The engine's sockets, for the keeper that hands it this node's lines. */
  get sockets(): BaileysGateway {
    return this.engine;
  }

  /** Set once the node beats and its keeper has made its first pass (serve.ts); until then every call is local. */
  bind(keeper: EngineKeeper): void {
    this.keeper = keeper;
  }

  onEvent(listener: (event: GatewayEvent) => Promise<void> | void): void {
    this.engine.onEvent(listener);
  }

  start(): Promise<void> {
    return this.engine.start();
  }

  async close(): Promise<void> {
    await this.engine.close();
    await this.forwarder.close();
  }

  ensureInstance(): Promise<void> {
    return Promise.resolve();
  }

  /** The call as the holder runs it: here (the internal route calls this once it checked it holds the line). */
  async local(call: EngineCall, file?: string): Promise<unknown> {
    const { instancia, args } = call;
    const e = this.engine;
    switch (call.op) {
      case 'connect':
        return e.connect(instancia, String(args[0]), args[1] as { repair?: boolean } | undefined);
      case 'pairingCode':
        return e.pairingCode(instancia, String(args[0]));
      case 'status':
        return e.status(instancia);
      case 'restart':
        return e.restart(instancia);
      case 'profile':
        return e.profile(instancia);
      case 'send': {
        const msg = args[0] as OutboundMessage;
        return e.send(instancia, file ? { ...msg, filePath: file } : msg);
      }
      case 'logout':
      case 'deleteInstance':
        await (call.op === 'logout' ? e.logout(instancia) : e.deleteInstance(instancia));
        await this.keeper?.forget(instancia);
        return undefined;
    }
  }

  /** Runs the call where the line's session is; a line that moved meanwhile is looked up once more. */
  private async route(call: EngineCall, file?: string): Promise<unknown> {
    for (let attempt = 0; ; attempt++) {
      const k = this.keeper;
      if (!k || k.holdsHere(call.instancia)) return this.local(call, file);
      const h = await this.store.holdOf(call.instancia, this.deadlines.now());
      if (h?.nodo && h.nodo !== k.me && h.presente) {
        if (!h.url) throw new GatewayFailure(`the node holding ${call.instancia} is starting: try again in a moment`, 'transient');
        // The holder's whole call: a send's number check, media fetch and send; a code's wait for the QR and the code.
        const { timeoutMs, sendTimeoutMs } = this.deadlines;
        const deadline = (call.op === 'send' ? timeoutMs + 2 * sendTimeoutMs : 2 * timeoutMs) + 5000;
        try {
          return await this.forwarder.call(h.url, call, deadline, file);
        } catch (err) {
          if (err instanceof LineMoved && attempt === 0) continue;
          if (err instanceof LineMoved)
            throw new GatewayFailure(`the session of ${call.instancia} is moving between nodes: try again in a moment`, 'transient');
          throw err;
        }
      }
      // Nobody holds it (or its holder is gone): a session starts here; anything else answers as a line with no socket.
      if (STARTS.has(call.op) && (await k.take([call.instancia])).length === 0) {
        if (attempt === 0) continue;
        throw new GatewayFailure(`the session of ${call.instancia} is being taken by another node: try again in a moment`, 'transient');
      }
      return this.local(call, file);
    }
  }

  connect(instancia: string, numero: string, opts?: { repair?: boolean }): Promise<QrResult> {
    return this.route({ op: 'connect', instancia, args: [numero, opts] }) as Promise<QrResult>;
  }

  pairingCode(instancia: string, numero: string): Promise<PairingResult> {
    return this.route({ op: 'pairingCode', instancia, args: [numero] }) as Promise<PairingResult>;
  }

  status(instancia: string): Promise<SessionStatus> {
    return this.route({ op: 'status', instancia, args: [] }) as Promise<SessionStatus>;
  }

  async logout(instancia: string): Promise<void> {
    await this.route({ op: 'logout', instancia, args: [] });
  }

  restart(instancia: string): Promise<SessionStatus> {
    return this.route({ op: 'restart', instancia, args: [] }) as Promise<SessionStatus>;
  }

  profile(instancia: string): Promise<SessionProfile | null> {
    return this.route({ op: 'profile', instancia, args: [] }) as Promise<SessionProfile | null>;
  }

  async deleteInstance(instancia: string): Promise<void> {
    await this.route({ op: 'deleteInstance', instancia, args: [] });
  }

  send(instancia: string, msg: OutboundMessage): Promise<{ gatewayMsgId: string }> {
    const { filePath, ...rest } = msg;
    return this.route({ op: 'send', instancia, args: [rest] }, filePath) as Promise<{ gatewayMsgId: string }>;
  }
}
