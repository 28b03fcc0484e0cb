import { readFileSync } from 'node:fs';
import { createServer, request, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startEvolutionFake, type EvolutionFake } from '../fakes/evolution.js';
import { pgSchema } from '../contract/adapters.js';
import { api, tempDir } from '../helpers/server.js';
import { killAllServeChildren, startServeChild, type ServeChild } from '../helpers/serve-child.js';
import { describeWith, dropRedisPrefix, postgres, redis, REDIS_URL, uniqueNamespace, schemaUrl } from '../helpers/services.js';
import { numeroNuevo } from '../server/send-helpers.js';

/**
 * Evolution posts a line's session statuses without waiting for each answer,
 * so behind a load balancer `connecting` and `open` land on different nodes
 * at once, or the older one after the newer. Three `serve` processes on one
 * PostgreSQL and one Redis link 16 lines; a balancer in front of them (the
 * nodes' gateway callback URL) holds each line's `connecting` and QR events
 * and, when `open` comes, hands all three to three different nodes: at once
 * for half the lines, `open` first and the older two after its answer for the
 * other half. Every line must be `activo` and `connected` on every node once
 * the nodes have answered.
 */
const LINES = 16;

interface Held {
  path: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
  event: string;
}

let fake: EvolutionFake;
let balancer: Server;
let dropSchema: () => Promise<void>;
let prefix: string;
const nodes: ServeChild[] = [];
let token = '';
/** Per instance, the events held until its `open`. */
const held = new Map<string, Held[]>();
/** Every forward to a node and the status it answered. */
const forwards: Array<Promise<{ event: string; node: number; status: number }>> = [];
let reversed = (_instancia: string) => false;

function forward(h: Held, node: number): Promise<{ event: string; node: number; status: number }> {
  const target = new URL(h.path, nodes[node]!.url);
  const headers = { ...h.headers, host: target.host, 'content-length': String(h.body.length) };
  return new Promise((resolve, reject) => {
    const req = request(target, { method: 'POST', headers }, (res) => {
      res.resume();
      res.on('end', () => resolve({ event: h.event, node, status: res.statusCode ?? 0 }));
    });
    req.on('error', reject);
    req.end(h.body);
  });
}

/** `open` to one node and the held events to the two others: together, or after `open` is answered. */
function release(instancia: string, open: Held): void {
  const earlier = held.get(instancia) ?? [];
  held.delete(instancia);
  const k = Number(instancia.replace(/\D/g, ''));
  const node = (i: number) => (k + i) % nodes.length;
  if (reversed(instancia)) {
    const first = forward(open, node(0));
    forwards.push(first);
    forwards.push(...earlier.map((h, i) => first.then(() => forward(h, node(i + 1)))));
  } else {
    forwards.push(forward(open, node(0)), ...earlier.map((h, i) => forward(h, node(i + 1))));
  }
}

afterAll(async () => {
  killAllServeChildren();
  await dropSchema?.().catch(() => undefined);
  if (prefix) await dropRedisPrefix(prefix).catch(() => undefined);
  await new Promise((r) => (balancer ? balancer.close(r) : r(undefined)));
  await fake?.close();
});

describeWith(postgres, 'session statuses on three nodes (PostgreSQL)', () => {
  describeWith(redis, 'and Redis', () => {
    beforeAll(async () => {
      fake = await startEvolutionFake({ apiKey: 'session-order-key-0123456789' });
      // The fake waits for each post's answer before the next: the balancer answers at once, as a load balancer's queue would not.
      balancer = createServer((req, res) => {
        const chunks: Buffer[] = [];
        req.on('data', (c: Buffer) => chunks.push(c));
        req.on('end', () => {
          const body = Buffer.concat(chunks);
          const parsed = JSON.parse(body.toString('utf8')) as { event: string; instance: string; data: { state?: string } };
          const h: Held = { path: req.url ?? '/', headers: req.headers, body, event: `${parsed.event}:${parsed.data.state ?? ''}` };
          if (parsed.event === 'connection.update' && parsed.data.state === 'open') release(parsed.instance, h);
          else held.set(parsed.instance, [...(held.get(parsed.instance) ?? []), h]);
          res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
        });
      });
      await new Promise<void>((r) => balancer.listen(0, '127.0.0.1', r));
      const callback = `http://127.0.0.1:${(balancer.address() as AddressInfo).port}`;
      const s = await pgSchema();
      dropSchema = s.drop;
      const u = new URL(schemaUrl(s.schema));
      prefix = uniqueNamespace('redis');
      const args = [
        ...['--store', u.toString(), '--counters', REDIS_URL, '--counters-prefix', prefix],
        ...['--gateway', 'evolution', '--gateway-url', fake.url, '--gateway-key', fake.apiKey, '--allow-private-urls'],
        ...['--gateway-callback-url', callback, '--gateway-timeout', '5s', '--health-interval', '0'],
      ];
      const dirs = [tempDir(), tempDir(), tempDir()];
      for (const d of dirs) nodes.push(await startServeChild(d, args, 300_000));
      token = readFileSync(join(dirs[0]!, 'admin-token'), 'utf8').trim();
    }, 60_000);

    it('links 16 lines whose connecting, QR and open events reach different nodes at once or in reverse: all activo on every node', async () => {
      const r = await api(nodes[0]!.url, 'POST', '/admin/clientes', {
        key: token,
        json: { nombre: 'Orden', email: `orden.${Date.now()}@example.com`, saldo: 10 },
      });
      expect(r.status, r.text).toBe(201);
      const key = r.body.api_key as string;
      const ids: number[] = [];
      for (let i = 0; i < LINES; i++) {
        const cel = await api(nodes[i % 3]!.url, 'POST', '/api/celular_crear.php', { key, json: { numero: numeroNuevo() } });
        expect(cel.status, cel.text).toBe(201);
        ids.push(cel.body.celular_id as number);
      }
      const odd = new Set(ids.filter((_, i) => i % 2 === 1).map((id) => `pasarela-${id}`));
      reversed = (instancia) => odd.has(instancia);
      for (const [i, id] of ids.entries()) {
        const qr = await api(nodes[(i + 1) % 3]!.url, 'POST', `/api/celular_qr.php?id=${id}`, { key });
        expect(qr.status, qr.text).toBe(200);
        expect(qr.body.qr).not.toBe('');
      }
      // Every line's connecting and QR are held by now (the fake posts them in order, each answered at once).
      await fake.settle();
      for (const id of ids) expect(held.get(`pasarela-${id}`)?.length, `events held for pasarela-${id}`).toBeGreaterThanOrEqual(2);
      await Promise.all(ids.map((id) => fake.scan(`pasarela-${id}`)));
      await fake.settle();
      const answered = await Promise.all(forwards);
      expect(answered.filter((a) => a.status !== 200)).toEqual([]);
      expect(new Set(answered.map((a) => a.node)).size).toBe(3);
      // Each node answered only once its event was applied: the lines are linked now, on every node.
      for (const n of nodes) {
        const list = await api(n.url, 'GET', '/api/celulares.php', { key });
        expect(list.status, list.text).toBe(200);
        const lines = (list.body.celulares as Array<{ id: number; estado: string; last_status: string }>).map((c) => `${c.id} ${c.estado} ${c.last_status}`);
        expect(lines.sort()).toEqual(ids.map((id) => `${id} activo connected`).sort());
      }
    }, 120_000);
  });
});
