import { describe, expect, it } from 'vitest';
import {
  balanceChange,
  charge,
  inboundForgottenBefore,
  lineCapAllows,
  movementValues,
  openingBalance,
  parkedExpiredBefore,
  parkingAllows,
  queueDelta,
  receiptColumn,
  refund,
  slotOn,
} from '../../src/core/billing/recipes.js';
import { INBOUND_SEEN_TTL_MS, PARKED_PER_LINE, PARKED_TTL_MS } from '../../src/core/billing/ledger.js';
import { entregaOf, eventBody, eventId, eventSeq, loggedEvent } from '../../src/core/events/event-log.js';
import { withDelivered } from '../../src/store/recipe-sql.js';
import { balanceAdd, balanceSet, escuchaInsert, movementInsert, pendingDown, receiptStepUpdate, slotSet, slotTime } from '../../src/store/recipe-sql.js';

/** What the stores write (core/billing/recipes.ts), without a store, and the SQL text both dialects render it with. */
describe('write recipes', () => {
  const m = { msg_id: 'm1', cliente_id: 7, celular_id: 3 };

  it('a charge takes one credit off the balance that pays, with its ledger row', () => {
    expect(charge(m, 'celular', { saldoCelular: 5, saldoGlobal: 9 })).toEqual({
      saldoCelular: 4,
      saldoGlobal: 9,
      write: {
        balance: { table: 'celulares', column: 'saldo_actual', id: 3 },
        saldo: 4,
        movement: { cliente_id: 7, celular_id: 3, monto: -1, saldo_resultante: 4, motivo: 'envio m1', actor: 'sistema' },
      },
    });
    const global = charge(m, 'global', { saldoCelular: 0, saldoGlobal: 9 });
    expect(global.saldoGlobal).toBe(8);
    expect(global.write?.balance).toEqual({ table: 'clientes', column: 'saldo_global', id: 7 });
    expect(global.write?.movement).toMatchObject({ celular_id: null, monto: -1, saldo_resultante: 8 });
    expect(charge(m, null, { saldoCelular: 1, saldoGlobal: 2 })).toEqual({ saldoCelular: 1, saldoGlobal: 2, write: null });
  });

  it('a refund gives one back where it was paid, a deleted line’s to the client, once', () => {
    const paid = { ...m, cobrado: 1, cargo: 'celular' as const };
    const back = refund(paid, true)!;
    expect(back.balance).toEqual({ table: 'celulares', column: 'saldo_actual', id: 3 });
    expect(back.movement(6)).toEqual({ cliente_id: 7, celular_id: 3, monto: 1, saldo_resultante: 6, motivo: 'reembolso m1', actor: 'sistema' });
    const orphan = refund(paid, false)!;
    expect(orphan.balance).toEqual({ table: 'clientes', column: 'saldo_global', id: 7 });
    expect(orphan.movement(2).celular_id).toBeNull();
    expect(refund({ ...paid, cobrado: 0 }, true)).toBeNull();
  });

  it('a manual change moves the named balance and is refused below zero', () => {
    const ch = { cliente_id: 7, celular_id: null, monto: 5, motivo: 'carga', actor: 'admin' };
    expect(balanceChange(ch, 10)).toEqual({
      ok: true,
      balance: { table: 'clientes', column: 'saldo_global', id: 7 },
      saldo: 15,
      movement: { ...ch, saldo_resultante: 15 },
    });
    expect(balanceChange({ ...ch, celular_id: 3, monto: -11 }, 10)).toEqual({ ok: false, reason: 'negativo' });
    expect(balanceChange({ ...ch, celular_id: 3 }, 0)).toMatchObject({ balance: { table: 'celulares', id: 3 }, saldo: 5 });
  });

  it('a new client’s opening credit is in its balance and its ledger', () => {
    const o = openingBalance(2, { monto: 3, motivo: 'alta', actor: 'admin' });
    expect(o.saldo).toBe(5);
    expect(o.movement!(9)).toEqual({ cliente_id: 9, celular_id: null, monto: 3, saldo_resultante: 5, motivo: 'alta', actor: 'admin' });
    expect(openingBalance(2, undefined)).toEqual({ saldo: 2, movement: null });
  });

  it('the line cap', () => {
    expect(lineCapAllows(null, 1000)).toBe(true);
    expect(lineCapAllows(2, 1)).toBe(true);
    expect(lineCapAllows(2, 2)).toBe(false);
  });

  it('slot transitions: claim holds both, retry and release free both, sent counts from now, a failure keeps a send made', () => {
    expect(slotSet(slotOn('claim', 50), '$2')).toBe('lease_until = $2, cupo_at = $2');
    expect(slotTime(slotOn('claim', 50))).toBe(50);
    expect(slotSet(slotOn('retry'), '?')).toBe('lease_until = NULL, cupo_at = NULL');
    expect(slotSet(slotOn('release'), '?')).toBe('lease_until = NULL, cupo_at = NULL');
    expect(slotTime(slotOn('release'))).toBeNull();
    expect(slotSet(slotOn('sent', 9), '@slot')).toBe('lease_until = NULL, cupo_at = @slot');
    expect(slotSet(slotOn('fail'), '?')).toBe('lease_until = NULL, cupo_at = enviado_at');
    expect(() => slotOn('claim')).toThrow();
  });

  it('renders in each dialect’s placeholders, parameters in text order', () => {
    const b = { table: 'clientes', column: 'saldo_global', id: 1 } as const;
    expect(balanceSet(b, () => '?')).toBe('UPDATE clientes SET saldo_global = ? WHERE id = ?');
    expect(balanceAdd(b, (i) => `$${i}`)).toBe('UPDATE clientes SET saldo_global = saldo_global + $1 WHERE id = $2 RETURNING saldo_global AS saldo');
    expect(movementInsert((i) => `$${i}`)).toBe(
      'INSERT INTO movimientos_saldo (fecha, cliente_id, celular_id, monto, saldo_resultante, motivo, actor) VALUES ($1, $2, $3, $4, $5, $6, $7)',
    );
    expect(movementValues({ cliente_id: 1, celular_id: null, monto: -1, saldo_resultante: 0, motivo: 'x', actor: 'sistema' }, 42)).toEqual([
      42,
      1,
      null,
      -1,
      0,
      'x',
      'sistema',
    ]);
  });

  it('the queue counter, receipt columns, parking and inbound bounds', () => {
    expect(queueDelta({ modo: 'cola' })).toBe(1);
    expect(queueDelta({ modo: 'directo' })).toBe(0);
    expect(receiptColumn('entregado')).toBe('entregado_at');
    expect(receiptColumn('leido')).toBe('leido_at');
    expect(parkingAllows(PARKED_PER_LINE - 1)).toBe(true);
    expect(parkingAllows(PARKED_PER_LINE)).toBe(false);
    expect(parkedExpiredBefore(PARKED_TTL_MS + 5)).toBe(5);
    expect(inboundForgottenBefore(INBOUND_SEEN_TTL_MS + 5)).toBe(5);
    expect(pendingDown(() => '?')).toBe('UPDATE celulares SET pendientes = pendientes - 1 WHERE id = ? AND pendientes > 0');
    expect(receiptStepUpdate('leido', (i) => `$${i}`)).toBe('UPDATE mensajes SET estado = $1, leido_at = $2 WHERE msg_id = $3');
    expect(escuchaInsert(() => '?')).toMatch(
      /^INSERT INTO webhook_escuchas \(id, cliente_id, url, secret, eventos, created_at, expira_at\) VALUES \(\?(, \?){6}\)$/,
    );
  });

  it('event ids: 32 hex digits, prefix and sequence, read back only with the same prefix', () => {
    expect(eventId('0badf00d', 1)).toBe('evt_0badf00d000000000000000000000001');
    expect(eventId('0badf00d', 255)).toMatch(/^evt_[0-9a-f]{32}$/);
    expect(eventSeq('0badf00d', eventId('0badf00d', 2 ** 40 + 7))).toBe(2 ** 40 + 7);
    expect(eventSeq('deadbeef', eventId('0badf00d', 9))).toBeNull();
    expect(eventSeq('0badf00d', 'evt_0badf00d00000000000000000000000g')).toBeNull();
    expect(eventSeq('0badf00d', 'evt_0badf00d000000000000000000000000')).toBeNull();
    expect(eventSeq('0badf00d', 'evt_0badf00d1')).toBeNull();
    expect(eventSeq('0badf00d', `evt_0badf00d${'f'.repeat(24)}`)).toBeNull();
  });

  it('an event body: made from the row, the same bytes each time, the client id outside data', () => {
    const row = {
      seq: 3,
      cliente_id: 7,
      celular_id: 9,
      evento: 'message.status',
      data: '{"cliente_id":7,"msg_id":"m","estado":"enviado"}',
      fecha: Date.UTC(2026, 10, 26),
    };
    const ev = loggedEvent('0badf00d', row);
    expect(eventBody(ev)).toBe(
      '{"id":"evt_0badf00d000000000000000000000003","evento":"message.status","fecha":"2026-11-26T00:00:00.000Z","cliente_id":7,"celular_id":9,"data":{"msg_id":"m","estado":"enviado"}}',
    );
    const e = entregaOf('0badf00d', { ...row, entrega: 'entregado', intentos: 2, proximo_intento_at: 5, entregado_at: 6, ultimo_error: null });
    expect(e).toMatchObject({ id: ev.id, body: eventBody(ev), estado: 'entregado', created_at: row.fecha });
    // The delivering attempt, from the row; failed ones keep rows of their own.
    const failed = [{ n: 1, fecha: 4, status: 500, duracion_ms: 3, error: 'HTTP 500' }];
    expect(withDelivered(e, { ultimo_status: 204, ultima_duracion_ms: 11 }, failed)).toEqual([
      ...failed,
      { n: 2, fecha: 6, status: 204, duracion_ms: 11, error: null },
    ]);
    expect(withDelivered({ ...e, estado: 'fallido' }, { ultimo_status: 410, ultima_duracion_ms: 1 }, failed)).toEqual(failed);
  });
});
