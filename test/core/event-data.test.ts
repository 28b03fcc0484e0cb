import { describe, expect, it } from 'vitest';
import { MESSAGE_STATUS_FIELDS, messageStatusData } from '../../src/core/events/event-data.js';
import type { MensajeRow } from '../../src/core/ports/model.js';

const row: MensajeRow = {
  msg_id: 'M-1',
  cliente_id: 3,
  celular_id: 7,
  destinatario: '5215512345678',
  tipo: 'texto',
  modo: 'cola',
  estado: 'error',
  texto: 'hola',
  media: null,
  gateway_msg_id: 'G-1',
  error: 'no such number',
  error_clase: 'rechazado',
  cobrado: 1,
  cargo: 'celular',
  payload: null,
  intentos: 1,
  proximo_intento_at: null,
  lease_until: null,
  cupo_at: 10,
  expira_at: null,
  created_at: 5,
  enviado_at: 10,
  entregado_at: null,
  leido_at: null,
};

/** The message.status data: the row's columns and the step's two, in the one list's order (the order the journal stores). */
describe('messageStatusData', () => {
  it('holds the list of fields in its order, the row as it is and the step', () => {
    const d = messageStatusData(row, 'pendiente', Date.UTC(2026, 0, 2, 3, 4, 5));
    expect(Object.keys(d)).toEqual([...MESSAGE_STATUS_FIELDS]);
    expect(d).toEqual({
      msg_id: 'M-1',
      celular_id: 7,
      cliente_id: 3,
      destinatario: '5215512345678',
      tipo: 'texto',
      estado: 'error',
      estado_anterior: 'pendiente',
      gateway_msg_id: 'G-1',
      error: 'no such number',
      error_clase: 'rechazado',
      fecha: '2026-01-02T03:04:05.000Z',
    });
  });

  it('a first step has no estado_anterior, and a row without an error says so', () => {
    const d = messageStatusData({ ...row, estado: 'pendiente', error: null, error_clase: null, gateway_msg_id: null }, null, 0);
    expect(d).toMatchObject({ estado: 'pendiente', estado_anterior: null, error: null, error_clase: null, gateway_msg_id: null });
  });
});
