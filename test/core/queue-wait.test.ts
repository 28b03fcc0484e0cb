import { describe, expect, it } from 'vitest';
import { retryAllowed } from '../../src/core/sending/failure-class.js';
import { whyWaiting, type QueueLine } from '../../src/core/queue/queue-wait.js';

/** Why a queued message waits (core/queue/queue-wait.ts): a pure function of the line, its counts, the page and the time. */
const NOW = Date.UTC(2026, 2, 10, 12, 0, 0);
const S = 1000;
const settings = { tz: 'UTC', gapMinMs: 10 * S, gapMaxMs: 30 * S };
const free = { lease_until: null, proximo_intento_at: null };

function line(over: Partial<QueueLine> = {}, celular: Partial<QueueLine['celular']> = {}): QueueLine {
  return {
    celular: {
      estado: 'activo',
      gateway_instancia: 'inst',
      hora_inicio_permitido: '00:00',
      hora_fin_permitido: '23:59',
      max_envios_por_minuto: 5,
      max_envios_por_hora: 100,
      max_envios_por_dia: null,
      calentamiento: null,
      calentamiento_desde: null,
      ...celular,
    },
    clienteEstado: 'activo',
    counts: [
      { n: 0, oldest: null },
      { n: 0, oldest: null },
    ],
    lastSend: null,
    firstIsHead: true,
    ...over,
  };
}

describe('whyWaiting', () => {
  it('an idle line: the head is due now (listo); each one behind it a mean gap later (en_turno)', () => {
    const r = whyWaiting(line(), [free, free, free], NOW, settings);
    expect(r).toEqual([
      { due_at: NOW, motivo: 'listo' },
      { due_at: NOW + 20 * S, motivo: 'en_turno' },
      { due_at: NOW + 40 * S, motivo: 'en_turno' },
    ]);
  });

  it('just after a send: the head waits out the human gap', () => {
    const r = whyWaiting(line({ lastSend: NOW - 5 * S }), [free], NOW, settings);
    expect(r[0]).toEqual({ due_at: NOW + 15 * S, motivo: 'pausa_humana' });
  });

  it('a claimed head is being sent; the next follows it', () => {
    const r = whyWaiting(line(), [{ lease_until: NOW + 60 * S, proximo_intento_at: null }, free], NOW, settings);
    expect(r[0]).toEqual({ due_at: NOW, motivo: 'enviando' });
    expect(r[1]).toEqual({ due_at: NOW + 20 * S, motivo: 'en_turno' });
  });

  it('a full minute cap: the head waits for its oldest send to leave the window; a full hour says cupo_hora', () => {
    const minute = whyWaiting(
      line({
        counts: [
          { n: 5, oldest: NOW - 50 * S },
          { n: 5, oldest: NOW - 50 * S },
        ],
      }),
      [free],
      NOW,
      settings,
    );
    expect(minute[0]).toEqual({ due_at: NOW + 10 * S, motivo: 'cupo_minuto' });
    const hour = whyWaiting(
      line({
        counts: [
          { n: 0, oldest: null },
          { n: 100, oldest: NOW - 30 * 60 * S },
        ],
      }),
      [free],
      NOW,
      settings,
    );
    expect(hour[0]).toEqual({ due_at: NOW + 30 * 60 * S, motivo: 'cupo_hora' });
  });

  it('the minute cap pushes the ones behind past the window', () => {
    const r = whyWaiting(
      line({
        counts: [
          { n: 4, oldest: NOW - 10 * S },
          { n: 4, oldest: NOW - 10 * S },
        ],
      }),
      [free, free],
      NOW,
      settings,
    );
    expect(r[0]!.motivo).toBe('listo');
    expect(r[1]).toEqual({ due_at: NOW + 50 * S, motivo: 'en_turno' });
  });

  it('outside its hours: the head waits for the window to open', () => {
    const r = whyWaiting(line({}, { hora_inicio_permitido: '13:00', hora_fin_permitido: '14:00' }), [free, free], NOW, settings);
    expect(r[0]).toEqual({ due_at: NOW + 3600 * S, motivo: 'fuera_de_horario' });
    expect(r[1]).toEqual({ due_at: NOW + 3620 * S, motivo: 'en_turno' });
  });

  it('a retry waiting for its next attempt', () => {
    const r = whyWaiting(line(), [{ lease_until: null, proximo_intento_at: NOW + 7 * S }], NOW, settings);
    expect(r[0]).toEqual({ due_at: NOW + 7 * S, motivo: 'reintento' });
  });

  it('a line not active (or its client, or no session): desconectado, no time told', () => {
    for (const l of [line({}, { estado: 'desconectado' }), line({}, { gateway_instancia: null }), line({ clienteEstado: 'suspendido' })]) {
      expect(whyWaiting(l, [free, free], NOW, settings)).toEqual([
        { due_at: null, motivo: 'desconectado' },
        { due_at: null, motivo: 'en_turno' },
      ]);
    }
  });

  it('a page that does not start at the head: its first is behind others', () => {
    const r = whyWaiting(line({ firstIsHead: false }), [free], NOW, settings);
    expect(r[0]!.motivo).toBe('en_turno');
  });
});

describe('retryAllowed', () => {
  it('never sent, cancelled, or failed after the network took it: yes; refused for good, uncertain, unclassified: no', () => {
    expect(['no_enviado', 'cancelado', 'fallido'].map((c) => retryAllowed(c as never))).toEqual([true, true, true]);
    expect(['rechazado', 'incierto', null].map((c) => retryAllowed(c as never))).toEqual([false, false, false]);
  });
});
