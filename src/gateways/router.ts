import {
  GatewayFailure,
  InboundRefused,
  type Gateway,
  type GatewayCapabilities,
  type GatewayEvent,
  type InboundCall,
  type InstanceSpec,
  type OutboundMessage,
  type PairingResult,
  type QrResult,
  type SessionProfile,
} from '../core/ports/gateway.js';
import type { SessionStatus } from '../core/ports/model.js';

/** One server as the router needs it to build its adapter. */
export interface RoutedServer {
  id: number;
  nombre: string;
  url: string;
  key: string;
}

export interface RouterOptions {
  /** The deployment's kind (`serve --gateway`): every server speaks it. */
  kind: string;
  capabilities: GatewayCapabilities;
  /** Whether the kind's adapter can tell if a message went (Gateway.sentMessage). */
  sentMessage: boolean;
  /** The server a call on this instance goes to (core/accounts/gateway-servers.ts); null when none can take it. */
  serverOf(instancia: string): Promise<number | null>;
  server(id: number): Promise<RoutedServer | null>;
  /** Builds the kind's adapter for one server. */
  make(server: RoutedServer): Gateway;
}

type Listener = (event: GatewayEvent) => Promise<void> | void;

/**
 * The Gateway port over many gateway servers of one kind: each call on an
 * instance goes to the adapter of its line's server, one adapter per server,
 * made on first use (a server added on another node is found in the store).
 * Events of every adapter reach every listener.
 */
export class GatewayRouter implements Gateway {
  readonly name: string;
  readonly simulated = false;
  readonly capabilities: GatewayCapabilities;
  readonly sentMessage?: (instancia: string, msgId: string) => Promise<{ gatewayMsgId: string; at: number } | null>;
  private readonly adapters = new Map<number, Promise<Gateway>>();
  /** Adapters made so far (a listener added later subscribes to these; later ones get it when made). */
  private readonly made: Gateway[] = [];
  private readonly listeners: Listener[] = [];
  private closed = false;

  constructor(private readonly opts: RouterOptions) {
    this.name = opts.kind;
    this.capabilities = opts.capabilities;
    if (opts.sentMessage) this.sentMessage = async (i, id) => (await this.of(i)).sentMessage!(i, id);
  }

  /** The adapter of server `id`, made once. */
  onServer(id: number): Promise<Gateway> {
    let a = this.adapters.get(id);
    if (!a) {
      a = this.opts.server(id).then((s) => {
        if (!s) throw new GatewayFailure(`gateway server ${id} does not exist`, 'transient');
        if (this.closed) throw new GatewayFailure('the gateway is closing', 'transient');
        const gw = this.opts.make(s);
        for (const l of this.listeners) gw.onEvent(l);
        this.made.push(gw);
        return gw;
      });
      // A failed lookup (the store, a missing row) is asked again next time.
      a.catch(() => this.adapters.delete(id));
      this.adapters.set(id, a);
    }
    return a;
  }

  private async of(instancia: string): Promise<Gateway> {
    const id = await this.opts.serverOf(instancia);
    if (id === null) {
      throw new GatewayFailure(`no gateway server can take ${instancia}: every server is draining or full (pasarela admin gateway list)`, 'transient');
    }
    return this.onServer(id);
  }

  async ensureInstance(instancia: string, spec: InstanceSpec): Promise<void> {
    return (await this.of(instancia)).ensureInstance(instancia, spec);
  }

  async connect(instancia: string, numero: string, opts?: { repair?: boolean }): Promise<QrResult> {
    return (await this.of(instancia)).connect(instancia, numero, opts);
  }

  async pairingCode(instancia: string, numero: string): Promise<PairingResult> {
    return (await this.of(instancia)).pairingCode(instancia, numero);
  }

  async status(instancia: string, opts?: { act?: boolean }): Promise<SessionStatus> {
    return (await this.of(instancia)).status(instancia, opts);
  }

  async logout(instancia: string): Promise<void> {
    return (await this.of(instancia)).logout(instancia);
  }

  async restart(instancia: string): Promise<SessionStatus> {
    return (await this.of(instancia)).restart(instancia);
  }

  async profile(instancia: string): Promise<SessionProfile | null> {
    return (await this.of(instancia)).profile(instancia);
  }

  async deleteInstance(instancia: string): Promise<void> {
    return (await this.of(instancia)).deleteInstance(instancia);
  }

  async send(instancia: string, msg: OutboundMessage): Promise<{ gatewayMsgId: string }> {
    return (await this.of(instancia)).send(instancia, msg);
  }

  onEvent(listener: Listener): void {
    this.listeners.push(listener);
    for (const gw of this.made) gw.onEvent(listener);
  }

  async handleInbound(call: InboundCall): Promise<{ eventos: number }> {
    const id = await this.opts.serverOf(call.instancia);
    if (id === null) throw new InboundRefused(400, `no gateway server holds ${call.instancia}`);
    return (await this.onServer(id)).handleInbound!(call);
  }

  async start(): Promise<void> {}

  async close(): Promise<void> {
    this.closed = true;
    await Promise.allSettled(this.adapters.values());
    await Promise.all(this.made.map((gw) => gw.close()));
  }
}
