import { describe, expect, it } from 'vitest';
import { LineReads } from '../../src/core/accounts/line-reads.js';
import { LocalSignals } from '../../src/core/nodes/signals-local.js';
import { CREDENTIALS_CHANNEL, targetPayload } from '../../src/core/auth/credential-cache.js';
import type { CelularRow, ClienteRow } from '../../src/core/ports/model.js';
import type { GrupoRow } from '../../src/core/ports/grupos.js';

/** A store of one client and its lines that counts its reads. */
function fakeStore(shared: boolean) {
  const reads = { celular: 0, instancia: 0, cliente: 0, grupo: 0 };
  const lines = new Map<number, Partial<CelularRow>>([
    [1, { id: 1, cliente_id: 7, estado: 'activo', gateway_instancia: 'i-1' }],
    [2, { id: 2, cliente_id: 7, estado: 'activo', gateway_instancia: 'i-2' }],
  ]);
  const cliente: Partial<ClienteRow> = { id: 7, estado: 'activo' };
  const grupo = [1, 2];
  return {
    reads,
    lines,
    cliente,
    grupo,
    store: {
      caps: { name: shared ? 'postgres' : 'sqlite', label: '', shared },
      getCelular: async (id: number) => (reads.celular++, (lines.get(id) as CelularRow | undefined) ?? null),
      getCelularByInstancia: async (i: string) => (reads.instancia++, ([...lines.values()].find((l) => l.gateway_instancia === i) as CelularRow) ?? null),
      getCliente: async (id: number) => (reads.cliente++, id === 7 ? ({ ...cliente } as ClienteRow) : null),
      grupoByNombre: async (clienteId: number, nombre: string) => (
        reads.grupo++,
        clienteId === 7 && nombre === 'otp' ? ({ id: 3, cliente_id: 7, nombre, celulares: [...grupo] } as GrupoRow) : null
      ),
    },
  };
}

describe('LineReads: the worker’s reads of a line and its client', () => {
  it('on a shared store, a read is kept for the TTL (by id and by instance), then read again', async () => {
    const f = fakeStore(true);
    let t = 0;
    const lines = new LineReads(f.store, () => t, 1000);
    await lines.celular(1);
    await lines.celular(1);
    expect(await lines.byInstancia('i-1')).toMatchObject({ id: 1 });
    await lines.cliente(7);
    await lines.cliente(7);
    expect(f.reads).toEqual({ celular: 1, instancia: 0, cliente: 1, grupo: 0 });
    t = 1000;
    await lines.celular(1);
    await lines.cliente(7);
    expect(f.reads).toEqual({ celular: 2, instancia: 0, cliente: 2, grupo: 0 });
  });

  it('a signal naming the line drops it; one naming the client drops the client and its lines; a gap drops everything', async () => {
    const f = fakeStore(true);
    const signals = new LocalSignals();
    const lines = new LineReads(f.store, () => 0, 1000);
    lines.listen(signals);
    await lines.celular(1);
    await lines.celular(2);
    await lines.cliente(7);
    f.lines.get(1)!.estado = 'suspendido';
    await signals.publish(CREDENTIALS_CHANNEL, targetPayload({ celular: 1 }));
    expect(await lines.celular(1)).toMatchObject({ estado: 'suspendido' });
    expect(f.reads.celular).toBe(3);
    await lines.celular(2);
    expect(f.reads.celular).toBe(3);
    f.cliente.estado = 'suspendido';
    await signals.publish(CREDENTIALS_CHANNEL, targetPayload({ cliente: 7 }));
    expect(await lines.cliente(7)).toMatchObject({ estado: 'suspendido' });
    await lines.celular(2);
    expect(f.reads).toMatchObject({ celular: 4, cliente: 2 });
  });

  it('a read that raced a drop is not kept; a line moved to another instance is not found under the old one', async () => {
    const f = fakeStore(true);
    const lines = new LineReads(f.store, () => 0, 1000);
    const pending = lines.celular(1);
    lines.invalidate({ celular: 1 });
    await pending;
    await lines.celular(1);
    expect(f.reads.celular).toBe(2);
    f.lines.get(1)!.gateway_instancia = 'i-9';
    lines.invalidate({ celular: 1 });
    expect(await lines.byInstancia('i-1')).toBeNull();
    expect(await lines.byInstancia('i-9')).toMatchObject({ id: 1 });
  });

  it("following another thread's count of changes: a move drops everything kept, and a read that raced it is not kept", async () => {
    const f = fakeStore(false);
    let theirs = 0;
    const lines = new LineReads(f.store, () => 0, 1000);
    lines.follow(() => theirs);
    await lines.celular(1);
    await lines.cliente(7);
    await lines.celular(1);
    await lines.cliente(7);
    expect(f.reads).toEqual({ celular: 1, instancia: 0, cliente: 1, grupo: 0 });
    f.lines.get(1)!.estado = 'suspendido';
    theirs += 1;
    expect(await lines.celular(1)).toMatchObject({ estado: 'suspendido' });
    await lines.cliente(7);
    expect(f.reads).toEqual({ celular: 2, instancia: 0, cliente: 2, grupo: 0 });
    const pending = lines.celular(2);
    theirs += 1;
    await pending;
    await lines.celular(2);
    expect(f.reads.celular).toBe(4);
  });
});

describe('LineReads: a queued pool pick’s guess of a line’s room (D-179)', () => {
  it('reads a line’s room once a second of either clock, counts this node’s sends, and drops it with the line', async () => {
    const f = fakeStore(true);
    const signals = new LocalSignals();
    let t = 0;
    const lines = new LineReads(f.store, () => t, 10_000);
    lines.listen(signals);
    const line = (await lines.celular(1))!;
    let reads = 0;
    const read = async () => (reads++, { window: 10, pendientes: 2 });
    expect(await lines.room(line, 5_000, read)).toMatchObject({ window: 10, pendientes: 2 });
    lines.queued(1, 1);
    expect(await lines.room(line, 5_500, read)).toMatchObject({ window: 10, pendientes: 3 });
    expect(reads).toBe(1);
    // A second of the injected clock (windows slide), or of the monotonic one, reads it again.
    expect(await lines.room(line, 6_000, read)).toMatchObject({ pendientes: 2 });
    expect(reads).toBe(2);
    t = 1_000;
    await lines.room(line, 6_000, read);
    expect(reads).toBe(3);
    // The clock going back is no reason to trust an old read.
    await lines.room(line, 5_900, read);
    expect(reads).toBe(4);
    // A change of the line (its caps, its state), of its client, or a failover's move drops it.
    await signals.publish(CREDENTIALS_CHANNEL, targetPayload({ celular: 1 }));
    await lines.room(line, 5_900, read);
    expect(reads).toBe(5);
    await signals.publish(CREDENTIALS_CHANNEL, targetPayload({ cliente: 7 }));
    await lines.room(line, 5_900, read);
    expect(reads).toBe(6);
    lines.queued(1, null);
    await lines.room(line, 5_900, read);
    expect(reads).toBe(7);
    // A read that a change overtook is answered but not kept.
    lines.queued(1, null);
    const racing = lines.room(line, 5_900, async () => {
      await signals.publish(CREDENTIALS_CHANNEL, targetPayload({ celular: 1 }));
      return read();
    });
    expect(await racing).toMatchObject({ window: 10 });
    await lines.room(line, 5_900, read);
    expect(reads).toBe(9);
  });
});

describe('LineReads: a pool as a send names it (D-183)', () => {
  it('is read once until its client is dropped (a pool written, on any node) or the TTL passes; a missing pool is read each time', async () => {
    const f = fakeStore(true);
    const signals = new LocalSignals();
    let t = 0;
    const lines = new LineReads(f.store, () => t, 1000);
    lines.listen(signals);
    expect(await lines.grupo(7, 'otp')).toMatchObject({ id: 3, celulares: [1, 2] });
    f.grupo.push(5);
    expect(await lines.grupo(7, 'otp')).toMatchObject({ celulares: [1, 2] });
    expect(f.reads.grupo).toBe(1);
    // A line's change is not the pool's: kept.
    await signals.publish(CREDENTIALS_CHANNEL, targetPayload({ celular: 1 }));
    await lines.grupo(7, 'otp');
    expect(f.reads.grupo).toBe(1);
    await signals.publish(CREDENTIALS_CHANNEL, targetPayload({ cliente: 7 }));
    expect(await lines.grupo(7, 'otp')).toMatchObject({ celulares: [1, 2, 5] });
    expect(f.reads.grupo).toBe(2);
    t = 1000;
    await lines.grupo(7, 'otp');
    expect(f.reads.grupo).toBe(3);
    // A pool not found (yet) is never kept: its creation must be seen by the very next send.
    expect(await lines.grupo(7, 'nuevo')).toBeNull();
    expect(await lines.grupo(7, 'nuevo')).toBeNull();
    expect(f.reads.grupo).toBe(5);
    // A read that raced a drop is answered, not kept.
    const racing = lines.grupo(7, 'otp');
    lines.invalidate({ cliente: 7 });
    await racing;
    t = 1500;
    await lines.grupo(7, 'otp');
    expect(f.reads.grupo).toBe(6);
  });
});
