import { describe, expect, it } from 'vitest';
import { pickServer } from '../../src/core/accounts/gateway-servers.js';
import { ADAPTERS, celular, newCliente, storeEachTest } from './adapters.js';

/** The gateway servers table: adding, the `--gateway-url` upsert, drain, loads, assigning and adopting lines; and a restart keeps them. */
for (const adapter of ADAPTERS) {
  describe(`${adapter.name}: GatewayServersStore contract`, () => {
    const ctx = storeEachTest(adapter);
    const server = (nombre: string, max_lineas: number | null = null) => ({
      nombre,
      tipo: 'evolution',
      url: `http://${nombre}.example`,
      key: `key-${nombre}`,
      max_lineas,
    });
    const line = async (clienteId: number, n: number) => {
      const r = await ctx.store.insertCelular(celular(clienteId, `52551234${String(n).padStart(4, '0')}`), 1000);
      if (!r.ok) throw new Error('insert');
      return r.celular;
    };

    it('adds a server once per name; reads it by id and by name', async () => {
      const r = await ctx.store.addGatewayServer(server('a', 10), 1000);
      if (!r.ok) throw new Error('add');
      expect(r.servidor).toMatchObject({
        nombre: 'a',
        tipo: 'evolution',
        url: 'http://a.example',
        key: 'key-a',
        estado: 'activo',
        max_lineas: 10,
        created_at: 1000,
        updated_at: 1000,
      });
      expect(await ctx.store.addGatewayServer(server('a'), 1001)).toEqual({ ok: false, reason: 'taken' });
      expect(await ctx.store.getGatewayServer(r.servidor.id)).toEqual(r.servidor);
      expect(await ctx.store.getGatewayServerByNombre('a')).toEqual(r.servidor);
      expect(await ctx.store.getGatewayServerByNombre('b')).toBeNull();
      expect(await ctx.store.getGatewayServer(9999)).toBeNull();
    });

    it('put makes the server or changes its kind, URL and key, keeping its estado and cap', async () => {
      const first = await ctx.store.putGatewayServer({ nombre: 'default', tipo: 'evolution', url: 'http://one', key: 'k1' }, 1000);
      expect(first).toMatchObject({ nombre: 'default', estado: 'activo', max_lineas: null, url: 'http://one' });
      await ctx.store.setGatewayServerEstado(first.id, 'drenando', 1001);
      const again = await ctx.store.putGatewayServer({ nombre: 'default', tipo: 'waha', url: 'http://two', key: 'k2' }, 1002);
      expect(again).toMatchObject({ id: first.id, tipo: 'waha', url: 'http://two', key: 'k2', estado: 'drenando', created_at: 1000, updated_at: 1002 });
      expect(await ctx.store.listGatewayServers()).toHaveLength(1);
    });

    it('lists every server in id order with its lines; drains and activates', async () => {
      const c = await newCliente(ctx.store);
      const a = await ctx.store.addGatewayServer(server('a'), 1000);
      const b = await ctx.store.addGatewayServer(server('b', 3), 1000);
      if (!a.ok || !b.ok) throw new Error('add');
      const l1 = await line(c.id, 1);
      await line(c.id, 2);
      await ctx.store.updateCelular(l1.id, { servidor_id: b.servidor.id }, 1001);
      expect((await ctx.store.getCelular(l1.id))?.servidor_id).toBe(b.servidor.id);
      expect((await ctx.store.listGatewayServers()).map((s) => [s.nombre, s.lineas])).toEqual([
        ['a', 0],
        ['b', 1],
      ]);
      expect(await ctx.store.setGatewayServerEstado(b.servidor.id, 'drenando', 1002)).toMatchObject({ estado: 'drenando', updated_at: 1002 });
      expect((await ctx.store.listGatewayServers())[1]).toMatchObject({ nombre: 'b', estado: 'drenando', lineas: 1, key: 'key-b' });
      expect(await ctx.store.setGatewayServerEstado(b.servidor.id, 'activo', 1003)).toMatchObject({ estado: 'activo' });
      expect(await ctx.store.setGatewayServerEstado(9999, 'activo', 1003)).toBeNull();
    });

    it('assigns a server to a line only while it has none, with the loads as they are', async () => {
      const c = await newCliente(ctx.store);
      const a = await ctx.store.addGatewayServer(server('a'), 1000);
      const b = await ctx.store.addGatewayServer(server('b'), 1000);
      if (!a.ok || !b.ok) throw new Error('add');
      const seen: number[][] = [];
      const choose = (servers: Array<{ id: number; lineas: number; tipo: string; estado: 'activo' | 'drenando'; max_lineas: number | null }>) => {
        seen.push(servers.map((s) => s.lineas));
        return pickServer(servers as never, 'evolution');
      };
      const ids = [];
      for (let n = 1; n <= 3; n++) ids.push((await line(c.id, n)).id);
      expect(await ctx.store.assignGatewayServer(ids[0]!, choose, 1001)).toBe(a.servidor.id);
      expect(await ctx.store.assignGatewayServer(ids[1]!, choose, 1001)).toBe(b.servidor.id);
      expect(await ctx.store.assignGatewayServer(ids[2]!, choose, 1001)).toBe(a.servidor.id);
      expect(seen).toEqual([
        [0, 0],
        [1, 0],
        [1, 1],
      ]);
      // Already on a server: kept, choose not asked.
      expect(await ctx.store.assignGatewayServer(ids[1]!, choose, 1002)).toBe(b.servidor.id);
      expect(seen).toHaveLength(3);
      expect((await ctx.store.getCelular(ids[1]!))?.servidor_id).toBe(b.servidor.id);
      // None picked, or no such line: null, and nothing changes.
      const l4 = await line(c.id, 4);
      expect(await ctx.store.assignGatewayServer(l4.id, () => null, 1003)).toBeNull();
      expect((await ctx.store.getCelular(l4.id))?.servidor_id).toBeNull();
      expect(await ctx.store.assignGatewayServer(9999, choose, 1003)).toBeNull();
    });

    it('adopts every line without a server, leaving the others; a restart keeps it all', async () => {
      const c = await newCliente(ctx.store);
      const a = await ctx.store.addGatewayServer(server('a'), 1000);
      const d = await ctx.store.putGatewayServer({ nombre: 'default', tipo: 'evolution', url: 'http://d', key: 'kd' }, 1000);
      if (!a.ok) throw new Error('add');
      const l1 = await line(c.id, 1);
      const l2 = await line(c.id, 2);
      const l3 = await line(c.id, 3);
      await ctx.store.updateCelular(l1.id, { servidor_id: a.servidor.id }, 1001);
      expect(await ctx.store.adoptUnassignedLines(d.id, 1002)).toBe(2);
      expect(await ctx.store.adoptUnassignedLines(d.id, 1003)).toBe(0);
      await ctx.reopen();
      expect((await ctx.store.getCelular(l2.id))?.servidor_id).toBe(d.id);
      expect((await ctx.store.getCelular(l3.id))?.servidor_id).toBe(d.id);
      expect((await ctx.store.getCelular(l1.id))?.servidor_id).toBe(a.servidor.id);
      expect((await ctx.store.listGatewayServers()).map((s) => [s.nombre, s.lineas, s.key])).toEqual([
        ['a', 1, 'key-a'],
        ['default', 2, 'kd'],
      ]);
      // Which lines each holds, in id order, as many as asked.
      expect((await ctx.store.celularesOnServer(d.id, 10)).map((l) => l.id)).toEqual([l2.id, l3.id]);
      expect((await ctx.store.celularesOnServer(d.id, 1)).map((l) => l.id)).toEqual([l2.id]);
      expect((await ctx.store.celularesOnServer(a.servidor.id, 10)).map((l) => l.id)).toEqual([l1.id]);
    });
  });
}
