import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { slotClaim } from '../../src/core/sending/caps.js';
import type { ManualClock } from '../../src/core/time/clock.js';
import { REASON_NOT_SENT, REASON_UNKNOWN } from '../../src/core/sending/direct-recovery.js';
import { newMsgId } from '../../src/core/sending/ids.js';
import { outbound } from '../../src/core/sending/outbound.js';
import type { SimGateway } from '../../src/gateways/sim.js';
import { startTestServer, tempDir, type TestServer } from '../helpers/server.js';
import { linkedLine, numeroNuevo, saldos, waitEstado, type Line } from './send-helpers.js';

/**
 * Direct sends a crash left `pendiente` (accepted and charged, the request
 * gone): at start-up and periodically each is resolved from what the gateway
 * knows, or ended with a clear reason and its refund. The crash itself is
 * exercised with kill -9 in test/e2e/crash-direct.test.ts; here the state a
 * crash leaves is made by hand, so every path runs every time.
 */

const servers: TestServer[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await s.stop();
});

const OPTS = { simDeliveryMs: 10, simReadMs: 20 };

async function start(dataDir?: string): Promise<TestServer> {
  const s = await startTestServer({ ...OPTS, ...(dataDir ? { dataDir } : {}) });
  servers.push(s);
  return s;
}

/** What a crash mid-send leaves: the message accepted and charged; with `sent`, also taken by the network. */
async function strand(s: TestServer, line: Line, sent: boolean): Promise<string> {
  const cel = (await s.core.store.getCelular(line.celularId))!;
  const msgId = newMsgId();
  const destinatario = numeroNuevo();
  const now = s.clock.now();
  const payload = { texto: `código ${msgId}` };
  const res = await s.core.store.acceptMensaje(
    {
      msg_id: msgId,
      cliente_id: line.clienteId,
      celular_id: cel.id,
      destinatario,
      tipo: 'texto',
      modo: 'directo',
      texto: payload.texto,
      media: null,
      payload,
      expira_at: null,
    },
    { charge: true, maxPending: null, slot: slotClaim(cel, now, s.core.config.queue.leaseMs) },
    now,
  );
  expect(res.ok).toBe(true);
  if (sent) await s.core.gateway.send(cel.gateway_instancia!, outbound(msgId, 'texto', destinatario, payload));
  return msgId;
}

describe('direct sends a crash left pending', () => {
  it('are resolved at start-up: recorded as sent with their receipts where the network took them, refunded where it did not', async () => {
    const dataDir = tempDir();
    const first = await start(dataDir);
    const line = await linkedLine(first, { saldo: 10 });
    const went = await strand(first, line, true);
    const never = await strand(first, line, false);
    expect(await saldos(first, line)).toMatchObject({ global: 8 });
    const gid = (await (first.core.gateway as SimGateway).sentMessage('x', went))!.gatewayMsgId;
    await first.close();
    servers.splice(servers.indexOf(first), 1);

    const s = await start(dataDir);
    // The receipts the network owed for it were parked or arrive now, and apply.
    const sent = await waitEstado(s, went, 'leido');
    expect(sent.gateway_msg_id).toBe(gid);
    expect(sent.cobrado).toBe(1);
    const failed = await waitEstado(s, never, 'error');
    expect(failed.error).toBe(REASON_NOT_SENT);
    expect(failed.error_clase).toBe('no_enviado');
    expect(failed.cobrado).toBe(0);
    expect(await saldos(s, line)).toMatchObject({ global: 9 });
    // The ledger says the same: two charges, one refund.
    const db = new Database(join(dataDir, 'pasarela.db'), { readonly: true });
    const { total, n } = db.prepare('SELECT SUM(monto) AS total, COUNT(*) AS n FROM movimientos_saldo WHERE cliente_id = ?').get(line.clienteId) as {
      total: number;
      n: number;
    };
    db.close();
    expect(total).toBe(9);
    expect(n).toBe(4);
  });

  it('periodically, once the slot has ended: a gateway that cannot tell ends it in error with its refund', async () => {
    const s = await start();
    const line = await linkedLine(s, { saldo: 5 });
    const msgId = await strand(s, line, true);
    // A gateway that knows nothing of our ids (Evolution, WAHA).
    Object.defineProperty(s.core.gateway, 'sentMessage', { value: undefined, configurable: true });

    // Still within its slot: it may be in flight somewhere, so it is left alone.
    expect(await s.recovery.run()).toEqual({ sent: 0, failed: 0, deferred: 0 });
    expect((await s.core.store.getMensaje(msgId))!.estado).toBe('pendiente');

    (s.clock as ManualClock).advance(2 * s.core.config.queue.leaseMs + 1);
    expect(await s.recovery.run()).toEqual({ sent: 0, failed: 1, deferred: 0 });
    const m = (await s.core.store.getMensaje(msgId))!;
    expect(m).toMatchObject({ estado: 'error', error: REASON_UNKNOWN, error_clase: 'incierto', cobrado: 0 });
    expect(await saldos(s, line)).toMatchObject({ global: 5 });
  });

  it('waits for a gateway that cannot be asked now, and resolves the send once it can', async () => {
    const s = await start();
    const line = await linkedLine(s, { saldo: 5 });
    const msgId = await strand(s, line, true);
    (s.clock as ManualClock).advance(2 * s.core.config.queue.leaseMs + 1);
    const sim = s.core.gateway as SimGateway;
    sim.setOutage(true);
    expect(await s.recovery.run()).toEqual({ sent: 0, failed: 0, deferred: 1 });
    expect((await s.core.store.getMensaje(msgId))!.estado).toBe('pendiente');
    sim.setOutage(false);
    expect(await s.recovery.run()).toEqual({ sent: 1, failed: 0, deferred: 0 });
    expect((await s.core.store.getMensaje(msgId))!.estado).not.toBe('pendiente');
    expect(await saldos(s, line)).toMatchObject({ global: 4 });
  });
});
