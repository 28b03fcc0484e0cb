import { describe, expect, it } from 'vitest';
import { acceptTurn, type TurnItem, type TurnRead } from '../../src/core/sending/accept-turn.js';
import { Turns } from '../../src/core/queue/turns.js';
import { slotClaim } from '../../src/core/sending/caps.js';

const send = (n: number, celular_id = 1, cliente_id = 1): TurnItem['m'] => ({
  msg_id: `m${n}`,
  cliente_id,
  celular_id,
  destinatario: '14155552671',
  tipo: 'texto',
  modo: 'cola',
  texto: 'x',
  media: null,
  payload: { texto: 'x' },
  expira_at: null,
});
const read = (saldoGlobal: number, lineas: Array<[number, number, number]>, bound: string[] = []): TurnRead => ({
  clientes: new Map([[1, { saldo_global: saldoGlobal }]]),
  celulares: new Map(lineas.map(([id, saldo, pendientes]) => [id, { cliente_id: 1, saldo_actual: saldo, pendientes }])),
  bound: new Set(bound),
});
const idem = (clave: string) => ({ clave, huella: 'h', expira_at: 9, answer: () => ({ status: 200, body: '{}' }) });

describe('acceptTurn: several sends decided in order, as each would be alone', () => {
  it("each send sees the balances and queue the ones before it left: the line's balance first, then the client's, then none", () => {
    const opts = { charge: true, maxPending: null };
    const v = acceptTurn(
      [1, 2, 3, 4].map((n) => ({ m: send(n), opts })),
      read(2, [[1, 1, 0]]),
    );
    expect(v.map((x) => (x.ok ? x.cargo : x.reason))).toEqual(['celular', 'global', 'global', 'saldo']);
    // The ledger row of each charge says the balance it left.
    expect(v.flatMap((x) => (x.ok && x.paid.write ? [x.paid.write.movement.saldo_resultante] : []))).toEqual([0, 1, 0]);
  });

  it("a line's queue fills within the turn; another line's does not", () => {
    const opts = { charge: false, maxPending: 2 };
    const v = acceptTurn(
      [send(1), send(2), send(3, 2), send(4)].map((m) => ({ m, opts })),
      read(0, [
        [1, 0, 1],
        [2, 0, 0],
      ]),
    );
    expect(v.map((x) => (x.ok ? 'ok' : x.reason))).toEqual(['ok', 'cola_llena', 'ok', 'cola_llena']);
  });

  it('a key bound before the turn or earlier in it answers as a repeat; a line of another client, or none, as celular', () => {
    const opts = (clave: string) => ({ charge: false, maxPending: null, idem: idem(clave) });
    const v = acceptTurn(
      [
        { m: send(1), opts: opts('a') },
        { m: send(2), opts: opts('a') },
        { m: send(3), opts: opts('b') },
        { m: send(4, 9), opts: opts('c') },
        { m: send(5, 1, 2), opts: opts('d') },
        { m: send(6), opts: opts('c') },
      ],
      read(0, [[1, 0, 0]], ['1:b']),
    );
    expect(v.map((x) => (x.ok ? 'ok' : x.reason))).toEqual(['ok', 'idempotencia', 'idempotencia', 'celular', 'celular', 'ok']);
  });

  it("a direct send's slot counts for the sends after it on its line: each sees the slots read plus those the turn took before it", () => {
    const caps = { max_envios_por_minuto: 3, max_envios_por_hora: 500, max_envios_por_dia: null };
    const opts = { charge: false, maxPending: null, slot: slotClaim(caps, 100, 30_000) };
    const direct = (n: number, celular_id = 1) => ({ m: { ...send(n, celular_id), modo: 'directo' as const }, opts });
    const turn = read(0, [
      [1, 0, 0],
      [2, 0, 0],
    ]);
    // Line 1 holds 1 slot of its 3 a minute, line 2 none; the refused send takes no slot.
    const counts = (n: number) => [
      { n, oldest: null },
      { n, oldest: null },
    ];
    turn.cupos = new Map([0, 1, 2, 3].map((i) => [i, counts(1)]));
    turn.cupos.set(4, counts(0));
    const v = acceptTurn([direct(1), direct(2), direct(3), direct(4), direct(5, 2)], turn);
    expect(v.map((x) => (x.ok ? 'ok' : x.reason))).toEqual(['ok', 'ok', 'cap', 'cap', 'ok']);
  });
});

describe('Turns: group commit', () => {
  it('a call finding the turn free goes at once; calls made meanwhile go together in the next turn, up to max; each gets its own outcome', async () => {
    const seen: number[][] = [];
    let release: () => void = () => {};
    const gate = new Promise<void>((r) => (release = r));
    const turns = new Turns<number, number>(
      async (items) => {
        seen.push(items);
        if (seen.length === 1) await gate;
        return items.map((i) => (i % 5 === 0 ? { status: 'rejected', reason: new Error(`bad ${i}`) } : { status: 'fulfilled', value: i * 10 }));
      },
      { max: 3, concurrent: 1 },
    );
    const out = [1, 2, 3, 4, 5, 6].map((i) => turns.add(i).catch((e: Error) => e.message));
    release();
    expect(await Promise.all(out)).toEqual([10, 20, 30, 40, 'bad 5', 60]);
    expect(seen).toEqual([[1], [2, 3, 4], [5, 6]]);
  });

  it('a turn that throws fails each of its calls, and the next turn still runs', async () => {
    let n = 0;
    const turns = new Turns<number, number>(
      async (items) => {
        if (n++ === 0) throw new Error('down');
        return items.map((value) => ({ status: 'fulfilled', value }));
      },
      { max: 10, concurrent: 1 },
    );
    const first = turns.add(1).catch((e: Error) => e.message);
    const second = turns.add(2);
    expect(await first).toBe('down');
    expect(await second).toBe(2);
  });
});
