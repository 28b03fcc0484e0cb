import { readFileSync } from 'node:fs';
import { ManualClock } from '../../src/core/time/clock.js';
import type { OutboundMessage } from '../../src/core/ports/gateway.js';
import { SimGateway } from '../../src/gateways/sim.js';
import { openSqliteStore } from '../../src/store/sqlite/store.js';
import type { GatewayHarness, SentRecord } from './harness.js';

const QR_MS = 20_000;

/** The simulator behind the contract suite's harness: its controls are the sim's own. */
export async function startSimHarness(): Promise<GatewayHarness & { sim: SimGateway }> {
  const store = openSqliteStore(':memory:');
  const clock = new ManualClock(Date.UTC(2026, 5, 1));
  // Receipts only on demand (ack), so the suite decides when they come.
  const sim = new SimGateway(store, clock, { qrRotateMs: QR_MS, deliveryMs: 1e9, readMs: 1e9 });
  const sent: SentRecord[] = [];
  // What reached the network is recorded around send: the simulator keeps no message contents.
  const send = sim.send.bind(sim);
  sim.send = async (instancia: string, msg: OutboundMessage) => {
    const bytes = msg.filePath ? readFileSync(msg.filePath) : undefined;
    const r = await send(instancia, msg);
    sent.push({
      instancia,
      to: msg.destinatario,
      tipo: msg.tipo,
      text: msg.texto ?? msg.caption,
      url: msg.url,
      bytes,
      filename: msg.filename,
      mime: msg.mime,
      ptt: msg.ptt,
      gatewayMsgId: r.gatewayMsgId,
    });
    return r;
  };
  return {
    name: 'sim',
    gateway: sim,
    sim,
    scan: (i) => sim.scan(i),
    enterCode: (i, code) => sim.scan(i, undefined, code),
    rotateQr: async () => clock.advance(QR_MS),
    phoneLogout: (i) => sim.phoneLogout(i),
    receive: async (i, from, text) => (await sim.receive(i, from, text)).gatewayMsgId,
    ack: (i, id, estado) => sim.receiptNow(i, id, estado),
    sent: () => sent,
    notOnNetwork: (n) => sim.failNumber(n, `${n} is not on the network`),
    rateLimitNext: (n) => sim.rateLimitNext(n),
    down: async () => sim.setOutage(true),
    up: async () => sim.setOutage(false),
    close: async () => {
      await sim.close();
      await store.close();
    },
  };
}
