import { InboundRefused, type GatewayEvent, type InboundCall } from '../core/ports/gateway.js';

export type GatewayListener = (event: GatewayEvent) => Promise<void> | void;

/**
 * The listeners of one gateway. `emit` resolves once every listener has made
 * the event durable, so an HTTP-fed adapter answers its gateway only then.
 */
export class GatewayEvents {
  private readonly listeners: GatewayListener[] = [];

  on(listener: GatewayListener): void {
    this.listeners.push(listener);
  }

  async emit(e: GatewayEvent): Promise<void> {
    await Promise.all(this.listeners.map(async (l) => l(e)));
  }

  /** Emits one at a time, in order; resolves to how many. */
  async emitAll(events: GatewayEvent[]): Promise<number> {
    for (const e of events) await this.emit(e);
    return events.length;
  }
}

/** The body of an inbound call as JSON; a body that is not JSON is refused (400). */
export function inboundJson(call: InboundCall): unknown {
  try {
    return JSON.parse(call.rawBody.toString('utf8'));
  } catch {
    throw new InboundRefused(400, 'the body is not JSON');
  }
}
