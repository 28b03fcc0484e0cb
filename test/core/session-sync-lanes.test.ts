import { describe, expect, it } from 'vitest';
import type { Core } from '../../src/core/context.js';
import type { GatewayEvent } from '../../src/core/ports/gateway.js';
import { syncGatewayEvents } from '../../src/core/accounts/session-sync.js';

/** A store whose receipts finish only when the test says, recording when each starts and ends. */
function harness() {
  const log: string[] = [];
  const open = new Map<string, () => void>();
  let listener: (e: GatewayEvent) => Promise<void> = async () => {};
  const core = {
    clock: { now: () => 1 },
    bus: { publish: () => {} },
    gateway: { onEvent: (l: typeof listener) => void (listener = l) },
    lines: { byInstancia: async () => ({ id: 7, cliente_id: 1 }) },
    store: {
      receipt: (_line: number, gid: string, estado: string) => {
        const name = `${gid}:${estado}`;
        log.push(`start ${name}`);
        return new Promise((resolve) => open.set(name, () => (log.push(`end ${name}`), resolve(null))));
      },
    },
  } as unknown as Core;
  const sync = syncGatewayEvents(core, (err) => {
    throw err;
  });
  const receipt = (gid: string, estado: 'entregado' | 'leido') => listener({ type: 'receipt', instancia: 'i', gatewayMsgId: gid, estado, at: 1 });
  const finish = (name: string) => open.get(name)!();
  const tick = () => new Promise((r) => setImmediate(r));
  return { log, sync, receipt, finish, tick };
}

describe('syncGatewayEvents: receipts', () => {
  it('those of different gateway ids are applied at once; those of one id one after the other, in the order given', async () => {
    const h = harness();
    const done = [h.receipt('A', 'entregado'), h.receipt('B', 'entregado'), h.receipt('A', 'leido')];
    await h.tick();
    // A's and B's first receipts run together; A's read waits for A's delivery.
    expect(h.log).toEqual(['start A:entregado', 'start B:entregado']);
    h.finish('B:entregado');
    await h.tick();
    expect(h.log).toEqual(['start A:entregado', 'start B:entregado', 'end B:entregado']);
    h.finish('A:entregado');
    await h.tick();
    expect(h.log.slice(3)).toEqual(['end A:entregado', 'start A:leido']);
    let idle = false;
    void h.sync.idle().then(() => (idle = true));
    await h.tick();
    // idle() waits for the receipts in flight.
    expect(idle).toBe(false);
    h.finish('A:leido');
    await Promise.all(done);
    await h.tick();
    expect(idle).toBe(true);
  });
});
