import { describe, expect, it } from 'vitest';
import { buildStory, detalleText, nodoCorto, type StoryStep } from '../../src/core/history/message-story.js';
import type { MensajeHechos } from '../../src/core/ports/messages.js';
import type { MensajeRow } from '../../src/core/ports/model.js';
import type { EntregaDeMensaje } from '../../src/core/ports/webhooks.js';

/** A message's story from its rows (core/history/message-story.ts), without a store: order, the facts each step takes, what is missing. */

const T = Date.UTC(2026, 10, 28, 12, 0, 0);
const NODE = '50c4c10e-19ee-437a-acd8-2c1cc1f58183';
const OTHER = '9a8b7c6d-0000-4000-8000-000000000001';

function row(over: Partial<MensajeRow> = {}): MensajeRow {
  return {
    msg_id: 'm1',
    cliente_id: 7,
    celular_id: 3,
    destinatario: '5215512345678',
    tipo: 'texto',
    modo: 'cola',
    estado: 'leido',
    texto: 'hola',
    media: null,
    gateway_msg_id: 'GW1',
    error: null,
    error_clase: null,
    cobrado: 1,
    cargo: 'celular',
    payload: null,
    intentos: 1,
    proximo_intento_at: null,
    lease_until: null,
    cupo_at: T + 2000,
    expira_at: null,
    created_at: T,
    enviado_at: T + 2000,
    entregado_at: T + 3000,
    leido_at: T + 4000,
    ...over,
  };
}

const hechos = (over: Partial<MensajeHechos> = {}): MensajeHechos => ({
  nodo: NODE,
  reclamado_at: T + 1000,
  error_at: null,
  movimientos: [{ fecha: T, monto: -1, saldo_resultante: 9, motivo: 'envio m1', celular_id: 3 }],
  ...over,
});

function entrega(id: string, estado: string, over: Partial<EntregaDeMensaje> = {}): EntregaDeMensaje {
  return {
    id,
    evento: 'message.status',
    data: JSON.stringify({ msg_id: 'm1', estado }),
    fecha: T,
    entrega: 'entregado',
    intentos: 1,
    entregado_at: T + 2500,
    ultimo_status: 200,
    ultima_duracion_ms: 12,
    ultimo_nodo: NODE,
    fallidos: [],
    ...over,
  };
}

const pasos = (t: StoryStep[]) => t.map((s) => s.paso);

describe('buildStory', () => {
  it('a queued message to leido: every step in time order, the claim and the send with their node, the charge with the balance after it', () => {
    const { timeline, timeline_omitidos } = buildStory(row(), hechos(), []);
    expect(pasos(timeline)).toEqual(['aceptado', 'cobro', 'encolado', 'reclamado', 'enviado', 'entregado', 'leido']);
    expect(timeline[0]).toEqual({
      paso: 'aceptado',
      at: new Date(T).toISOString(),
      nodo: null,
      detalle: { modo: 'cola', tipo: 'texto', destinatario: '5215512345678' },
    });
    expect(timeline[1]!.detalle).toEqual({ monto: -1, saldo: 9, balance: 'celular' });
    expect(timeline[3]).toMatchObject({ paso: 'reclamado', nodo: NODE, at: new Date(T + 1000).toISOString() });
    expect(timeline[4]).toMatchObject({ paso: 'enviado', nodo: NODE, detalle: { gateway_msg_id: 'GW1', intentos: 1 } });
    expect(timeline_omitidos).toBe(0);
  });

  it('webhook attempts: the failed rows, then the delivering one from its event row, each with its node, among the other steps by time', () => {
    const first = entrega('evt_1', 'enviado', {
      intentos: 2,
      entregado_at: T + 2600,
      ultimo_nodo: OTHER,
      fallidos: [{ n: 1, fecha: T + 2100, status: 500, duracion_ms: 30, error: 'HTTP 500', nodo: NODE }],
    });
    const { timeline } = buildStory(row(), hechos(), [first, entrega('evt_2', 'leido', { entregado_at: T + 4100 })]);
    expect(pasos(timeline)).toEqual(['aceptado', 'cobro', 'encolado', 'reclamado', 'enviado', 'webhook', 'webhook', 'entregado', 'leido', 'webhook']);
    const hooks = timeline.filter((s) => s.paso === 'webhook');
    expect(hooks.map((h) => [h.detalle.entrega, h.detalle.intento, h.detalle.status, h.nodo])).toEqual([
      ['evt_1', 1, 500, NODE],
      ['evt_1', 2, 200, OTHER],
      ['evt_2', 1, 200, NODE],
    ]);
    expect(hooks[0]!.detalle).toMatchObject({ evento: 'message.status', estado: 'enviado', duracion_ms: 30, error: 'HTTP 500' });
  });

  it('a failed message: the error with its class and time, then its refund; a direct send names no node', () => {
    const m = row({
      modo: 'directo',
      estado: 'error',
      error: 'not on the network',
      error_clase: 'rechazado',
      enviado_at: null,
      entregado_at: null,
      leido_at: null,
    });
    const { timeline } = buildStory(
      m,
      hechos({
        nodo: null,
        reclamado_at: null,
        error_at: T + 500,
        movimientos: [
          { fecha: T, monto: -1, saldo_resultante: 9, motivo: 'envio m1', celular_id: null },
          { fecha: T + 500, monto: 1, saldo_resultante: 10, motivo: 'reembolso m1', celular_id: null },
        ],
      }),
      [],
    );
    expect(pasos(timeline)).toEqual(['aceptado', 'cobro', 'error', 'reembolso']);
    expect(timeline[2]).toMatchObject({ at: new Date(T + 500).toISOString(), detalle: { error_clase: 'rechazado', error: 'not on the network' } });
    expect(timeline[3]!.detalle).toEqual({ monto: 1, saldo: 10, balance: 'global' });
    expect(timeline.every((s) => s.nodo === null)).toBe(true);
  });

  it('a message recorded before its facts were kept: what is known, a step whose time is unknown last', () => {
    const m = row({ estado: 'error', error: 'x', error_clase: 'incierto', entregado_at: null, leido_at: null });
    const { timeline } = buildStory(m, hechos({ nodo: null, reclamado_at: null, error_at: null, movimientos: [] }), []);
    expect(pasos(timeline)).toEqual(['aceptado', 'encolado', 'enviado', 'error']);
    expect(timeline[2]!.nodo).toBeNull();
    expect(timeline[3]!.at).toBeNull();
    // No facts at all (a row the story could not read): the record's own steps.
    expect(pasos(buildStory(row(), null, []).timeline)).toEqual(['aceptado', 'encolado', 'enviado', 'entregado', 'leido']);
  });

  it('bounded: deliveries past the bound and attempts not listed are counted, not shown', () => {
    const many = entrega('evt_1', 'enviado', { entrega: 'pendiente', entregado_at: null, intentos: 14, fallidos: [] });
    many.fallidos = Array.from({ length: 10 }, (_, i) => ({ n: i + 1, fecha: T + 2100 + i, status: 500, duracion_ms: 1, error: 'HTTP 500', nodo: NODE }));
    const extra = entrega('evt_9', 'leido', { intentos: 3 });
    const { timeline, timeline_omitidos } = buildStory(row(), hechos(), [many, extra], { entregas: 1 });
    expect(timeline.filter((s) => s.paso === 'webhook')).toHaveLength(10);
    expect(timeline_omitidos).toBe(4 + 3);
  });
});

describe('detalleText', () => {
  it('says each step in words', () => {
    const { timeline } = buildStory(row(), hechos(), [
      entrega('evt_1', 'leido', {
        ultimo_status: null,
        entregado_at: null,
        entrega: 'fallido',
        fallidos: [{ n: 1, fecha: T + 5000, status: null, duracion_ms: 10000, error: 'timeout', nodo: NODE }],
      }),
    ]);
    expect(timeline.map(detalleText)).toEqual([
      'texto to 5215512345678 (queued)',
      '-1 on the celular balance, now 9',
      "in its line's queue",
      'by the queue worker',
      'gateway id GW1',
      'delivery receipt',
      'read receipt',
      'message.status (leido) attempt 1: failed: timeout in 10000 ms',
    ]);
    expect(nodoCorto(NODE)).toBe('50c4c10e');
  });
});
