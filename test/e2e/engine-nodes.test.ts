import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { pgSchema } from '../contract/adapters.js';
import { startFakeNetwork, type FakeNetwork } from '../fakewa/index.js';
import { numeroNuevo } from '../helpers/expect.js';
import { until } from '../helpers/poll.js';
import { killAllServeChildren, startServeChild, type ServeChild } from '../helpers/serve-child.js';
import { startTcpProxy } from '../helpers/tcp-proxy.js';
import { api, tempDir } from '../helpers/server.js';
import { dataUri, PNG } from '../server/send-helpers.js';
import { describeWith, dropRedisPrefix, postgres, redis, REDIS_URL, schemaUrl, uniqueNamespace } from '../helpers/services.js';

/**
 * Engine sessions across three `serve --gateway baileys` nodes on
 * PostgreSQL + Redis, against the fake network (issue 38, D-136): lines
 * linked on one node spread over the three; a holder killed (SIGKILL) or
 * frozen (SIGSTOP) has its lines connected again on the others from the
 * stored state, no new scan; a node stopped (SIGTERM) hands its lines over
 * first while queued sends go on; the fake network never sees two sockets of
 * one device at once. Each node beats every 2 s and counts as gone after
 * 10 s of silence (serve's defaults).
 */
const LINES = 30;
const MARGIN_MS = 10_000;

let fake: FakeNetwork;
let schema: { schema: string; drop: () => Promise<void> };
let prefix: string;
let db: pg.Client;
const root = tempDir('pasarela-engine-nodes-');
// Made by the first node in its data directory; the others are given it.
const keyFile = join(root, 'node1', 'engine.key');
const nodes: ServeChild[] = [];
let token = '';
let clientKey = '';
const lines: Array<{ id: number; numero: string; instancia: string }> = [];
const CONTACT = numeroNuevo();
let seq = 0;

async function startNode(store = schemaUrl(schema.schema)): Promise<ServeChild> {
  seq += 1;
  const n = await startServeChild(
    join(root, `node${seq}`),
    [
      '--gateway',
      'baileys',
      '--baileys-ws-url',
      fake.wsUrl,
      '--store',
      store,
      '--counters',
      REDIS_URL,
      '--counters-prefix',
      prefix,
      ...(seq === 1 ? [] : ['--engine-key-file', keyFile]),
      '--engine-settle',
      '2s',
      '--drain-delay',
      '0',
      '--gateway-timeout',
      '2s',
      '--queue-gap-ms',
      '0-0',
      // A killed node's queues are taken once its stale time (its longest send plus the margin) is over.
      '--queue-lease',
      '16s',
      '--webhook-timeout',
      '2s',
    ],
    600_000,
    { NODE_OPTIONS: `--import=${fake.preloadFile}`, NODE_EXTRA_CA_CERTS: fake.caFile },
  );
  nodes.push(n);
  return n;
}

const q = async <T extends pg.QueryResultRow>(sql: string, params: unknown[] = []) => (await db.query<T>(sql, params)).rows;
const alive = () => nodes.filter((n) => n.child.exitCode === null && n.child.signalCode === null);
const statusVia = async (n: ServeChild, id: number) =>
  (await api(n.url, 'GET', `/api/celular_status.php?id=${id}`, { key: clientKey })).body.status as string | undefined;
/** Each line's holder as the store records it, and whether that holder beats within its margin. */
const holders = async () =>
  q<{ instancia: string; nodo: string | null; token: string; presente: boolean }>(
    `SELECT s.instancia, s.nodo, s.token, EXISTS (SELECT 1 FROM nodos d WHERE d.id = s.nodo
       AND d.heartbeat_at + d.margen_ms > (EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::bigint) AS presente
     FROM motor_sesiones s ORDER BY s.instancia`,
  );
/** The store's node id of a child, found by its pid in the node's label. */
const nodeIdOf = async (n: ServeChild) => (await q<{ id: string }>('SELECT id FROM nodos WHERE etiqueta LIKE $1', [`%pid ${n.child.pid} %`]))[0]?.id;
const maxConcurrent = () => Math.max(...lines.map((l) => fake.maxConcurrent(l.numero)));

/** Every line held by a present node, none holding more than its share plus one, and connected. */
async function spread(what: string, liveCount: number): Promise<Map<string, number>> {
  return until(
    async () => {
      const h = await holders();
      if (h.length !== LINES || h.some((x) => !x.nodo || !x.presente)) return null;
      const per = new Map<string, number>();
      for (const x of h) per.set(x.nodo!, (per.get(x.nodo!) ?? 0) + 1);
      if (per.size !== liveCount || Math.max(...per.values()) > Math.ceil(LINES / liveCount)) return null;
      const via = alive()[0]!;
      for (const l of lines) if ((await statusVia(via, l.id)) !== 'connected') return null;
      return per;
    },
    { what, timeoutMs: 120_000, stepMs: 500 },
  );
}

describeWith(postgres, 'engine sessions on three nodes (postgres, redis, the fake network)', () => {
  beforeAll(async () => {
    if (!redis.available) return;
    fake = await startFakeNetwork();
    fake.contact(CONTACT);
    schema = await pgSchema();
    prefix = uniqueNamespace('redis');
    db = new pg.Client({ connectionString: schemaUrl(schema.schema) });
    await db.connect();
    // The first node makes the engine key file the others are given.
    await startNode();
    token = readFileSync(join(root, 'node1', 'admin-token'), 'utf8').trim();
    await startNode();
    await startNode();
    const a = nodes[0]!;
    const c = await api(a.url, 'POST', '/admin/clientes', { key: token, json: { nombre: 'Motor', email: `motor.${Date.now()}@example.com`, saldo: 5000 } });
    expect(c.status, c.text).toBe(201);
    clientKey = c.body.api_key as string;
    // Every line linked through node 1: it takes each session as its QR is asked.
    for (let i = 0; i < LINES; i++) {
      const numero = numeroNuevo();
      const cel = await api(a.url, 'POST', '/api/celular_crear.php', { key: clientKey, json: { numero } });
      expect(cel.status, cel.text).toBe(201);
      const id = cel.body.celular_id as number;
      const qr = await api(a.url, 'POST', `/api/celular_qr.php?id=${id}`, { key: clientKey, json: {} });
      expect(qr.status, qr.text).toBe(200);
      await fake.scanQr(qr.body.qr as string, cel.body.celular.numero as string);
      lines.push({ id, numero: cel.body.celular.numero as string, instancia: cel.body.celular.gateway_instancia as string });
    }
  }, 300_000);

  afterAll(async () => {
    killAllServeChildren();
    await db?.end();
    await schema?.drop();
    if (prefix) await dropRedisPrefix(prefix);
    await fake?.close();
  });

  it.skipIf(!redis.available)(
    '30 lines linked on one node spread over the three, each connected, no node over its share',
    async () => {
      const per = await spread('the lines spread over three nodes', 3);
      expect([...per.values()].reduce((a, b) => a + b, 0)).toBe(LINES);
      expect(maxConcurrent()).toBe(1);
    },
    180_000,
  );

  it.skipIf(!redis.available)(
    'SIGKILL of a holder: its lines connect again on the others within 15 s of it counting as gone, with no new scan',
    async () => {
      const victim = nodes[1]!;
      const id = await nodeIdOf(victim);
      const itsLines = (await holders()).filter((h) => h.nodo === id).map((h) => h.instancia);
      expect(itsLines.length).toBeGreaterThan(0);
      const connectionsBefore = new Map(lines.map((l) => [l.numero, fake.connections(l.numero).length]));
      victim.child.kill('SIGKILL');
      await victim.child;
      const killedAt = Date.now();
      await spread('the lines held again by the two survivors', 2);
      // Gone once silent for the margin after its last beat (at most a beat before the kill): taken within 15 s of that.
      expect(Date.now() - killedAt).toBeLessThan(MARGIN_MS + 15_000);
      for (const l of lines.filter((x) => itsLines.includes(x.instancia))) {
        // Connected again from the stored state: a new connection of the same device, no new link.
        expect(fake.connections(l.numero).length).toBeGreaterThan(connectionsBefore.get(l.numero)!);
        expect(new Set(fake.connections(l.numero).map((c) => c.device)).size).toBe(1);
      }
      expect(maxConcurrent()).toBe(1);
    },
    180_000,
  );

  it.skipIf(!redis.available)(
    'SIGSTOP of a holder: its watchdog ends it before another node opens its lines; never two sockets of one device',
    async () => {
      await startNode();
      await spread('three nodes again', 3);
      const victim = alive()[0]!;
      const id = await nodeIdOf(victim);
      const itsLines = (await holders()).filter((h) => h.nodo === id).map((h) => h.instancia);
      expect(itsLines.length).toBeGreaterThan(0);
      victim.child.kill('SIGSTOP');
      const r = await victim.child;
      // The watchdog's SIGKILL ends the frozen process: its sockets close with it.
      expect(r.signal).toBe('SIGKILL');
      await spread('the lines held by the two others', 2);
      expect(maxConcurrent()).toBe(1);
    },
    180_000,
  );

  it.skipIf(!redis.available)(
    'SIGTERM of a node under a steady send load: its lines move first, every queued message is sent once',
    async () => {
      await startNode();
      await spread('three nodes again', 3);
      const [keep, leaving] = alive();
      const sent: string[] = [];
      let sending = true;
      const load = (async () => {
        for (let i = 0; sending; i++) {
          const l = lines[i % LINES]!;
          const r = await api(keep!.url, 'POST', '/api/mensaje_enviar_texto.php', {
            key: clientKey,
            json: { celular_id: l.id, destinatario: CONTACT, mensaje: `carga ${i}` },
          });
          if (r.status === 200) sent.push(r.body.msg_id as string);
          await new Promise((res) => setTimeout(res, 100));
        }
      })();
      await new Promise((res) => setTimeout(res, 2000));
      leaving!.child.kill('SIGTERM');
      const r = await leaving!.child;
      expect(r.exitCode, String(r.stderr)).toBe(0);
      await new Promise((res) => setTimeout(res, 2000));
      sending = false;
      await load;
      expect(sent.length).toBeGreaterThan(10);
      await until(
        async () => {
          const rows = await q<{ estado: string }>('SELECT estado FROM mensajes WHERE msg_id = ANY($1)', [sent]);
          return rows.length === sent.length && rows.every((x) => x.estado !== 'pendiente');
        },
        { what: 'every message of the load ended', timeoutMs: 120_000, stepMs: 500 },
      );
      const ended = await q<{ estado: string; n: string }>('SELECT estado, count(*) AS n FROM mensajes WHERE msg_id = ANY($1) GROUP BY estado', [sent]);
      expect(ended.filter((e) => !['enviado', 'entregado', 'leido'].includes(e.estado))).toEqual([]);
      const texts = fake
        .contact(CONTACT)
        .received()
        .map((m) => JSON.stringify(m.message));
      for (let i = 0; i < sent.length; i++) expect(texts.filter((t) => t.includes(`"carga ${i}"`)).length).toBeLessThanOrEqual(1);
      expect(maxConcurrent()).toBe(1);
    },
    240_000,
  );

  it.skipIf(!redis.available)(
    'a holder that loses the database closes its sockets before its lines are taken, and lives to take lines again',
    async () => {
      while (alive().length > 2) {
        const n = alive()[alive().length - 1]!;
        n.child.kill('SIGTERM');
        await n.child;
      }
      const u = new URL(schemaUrl(schema.schema));
      const proxy = await startTcpProxy(u.hostname, Number(u.port || 5432));
      let cut: ServeChild | undefined;
      try {
        u.host = `127.0.0.1:${proxy.port}`;
        cut = await startNode(u.toString());
        await spread('three nodes again, one behind a proxy', 3);
        const id = await nodeIdOf(cut);
        const itsLines = (await holders()).filter((h) => h.nodo === id).map((h) => h.instancia);
        expect(itsLines.length).toBeGreaterThan(0);
        // Its statements hang: no beat is recorded, no answer comes back.
        proxy.stall(true);
        await spread('the lines held by the two others', 2);
        expect(maxConcurrent()).toBe(1);
        // It closed its sockets itself: the watchdog had nothing to guard and the node lives.
        expect(cut.child.exitCode).toBeNull();
        expect(cut.child.signalCode).toBeNull();
        proxy.stall(false);
        await spread('the node back, with lines of its own again', 3);
        expect(maxConcurrent()).toBe(1);
      } finally {
        proxy.stall(false);
        // Its database is behind the proxy: it goes before the proxy does.
        cut?.child.kill('SIGKILL');
        await cut?.child;
        await proxy.close();
      }
    },
    240_000,
  );

  it.skipIf(!redis.available)(
    'a direct send on a node that does not hold the line is sent by its holder and answered as if local, media included',
    async () => {
      const [x, y] = alive();
      const xid = await nodeIdOf(x!);
      const held = new Set((await holders()).filter((h) => h.nodo === xid).map((h) => h.instancia));
      const line = lines.find((l) => held.has(l.instancia))!;
      const texto = `directo ${Date.now()}`;
      const t = await api(y!.url, 'POST', '/api/mensaje_enviar_texto.php', {
        key: clientKey,
        json: { celular_id: line.id, destinatario: CONTACT, mensaje: texto, directo: 1 },
      });
      expect(t.status, t.text).toBe(200);
      expect(t.body.estado).toBe('enviado');
      const img = await api(y!.url, 'POST', '/api/mensaje_enviar_imagen_base64.php', {
        key: clientKey,
        json: { celular_id: line.id, destinatario: CONTACT, imageBase64: dataUri('image/png', PNG), caption: `foto ${texto}`, directo: 1 },
      });
      expect(img.status, img.text).toBe(200);
      expect(img.body.estado).toBe('enviado');
      await fake.contact(CONTACT).waitFor((m) => JSON.stringify(m.message).includes(`"${texto}"`), 30_000);
      const photo = await fake.contact(CONTACT).waitFor((m) => JSON.stringify(m.message).includes(`foto ${texto}`), 30_000);
      expect(photo.media?.equals(PNG)).toBe(true);
      // A refusal comes back the same through either node: a recipient not on the network, refused for good.
      const absent = numeroNuevo();
      fake.contact(absent, { onNetwork: false });
      const refusals = [];
      for (const via of [x!, y!]) {
        const r = await api(via.url, 'POST', '/api/mensaje_enviar_texto.php', {
          key: clientKey,
          json: { celular_id: line.id, destinatario: absent, mensaje: 'nadie', directo: 1 },
        });
        refusals.push({ status: r.status, api_codigo: r.body.api_codigo, estado: r.body.estado });
      }
      expect(refusals[0]!.status).toBeGreaterThanOrEqual(400);
      expect(refusals[1]).toEqual(refusals[0]);
    },
    120_000,
  );

  it.skipIf(!redis.available)(
    '1,000 queued sends over 30 lines while a holder is killed: each sent, none twice but at the kill, the balance equals its ledger',
    async () => {
      while (alive().length < 3) await startNode();
      await spread('three nodes again', 3);
      const [a, b, victim] = alive();
      const TOTAL = 1000;
      const ids: string[] = [];
      let next = 0;
      const accept = async () => {
        for (let i = next++; i < TOTAL; i = next++) {
          const via = i % 2 === 0 ? a! : b!;
          const r = await api(via.url, 'POST', '/api/mensaje_enviar_texto.php', {
            key: clientKey,
            json: { celular_id: lines[i % LINES]!.id, destinatario: CONTACT, mensaje: `lote ${i}` },
          });
          expect(r.status, r.text).toBe(200);
          ids.push(r.body.msg_id as string);
          if (i === 300) victim!.child.kill('SIGKILL');
        }
      };
      await Promise.all(Array.from({ length: 8 }, accept));
      await until(
        async () => Number((await q<{ n: string }>("SELECT count(*) AS n FROM mensajes WHERE msg_id = ANY($1) AND estado = 'pendiente'", [ids]))[0]!.n) === 0,
        { what: 'all 1,000 ended', timeoutMs: 240_000, stepMs: 1000 },
      );
      const bad = await q<{ estado: string }>(
        "SELECT estado, error_clase, error, intentos FROM mensajes WHERE msg_id = ANY($1) AND estado NOT IN ('enviado', 'entregado', 'leido')",
        [ids],
      );
      expect(bad).toEqual([]);
      const texts = fake
        .contact(CONTACT)
        .received()
        .map((m) => JSON.stringify(m.message));
      let twice = 0;
      const missing: number[] = [];
      for (let i = 0; i < TOTAL; i++) {
        const n = texts.filter((t) => t.includes(`"lote ${i}"`)).length;
        if (n === 0) missing.push(i);
        if (n > 1) twice += 1;
      }
      // Recorded sent but never read by the contact: what the contact could not decrypt, and each one's row, say why.
      const why = async () => {
        const rows = await q<{ gateway_msg_id: string | null }>(
          'SELECT msg_id, celular_id, estado, nodo, gateway_msg_id, intentos FROM mensajes WHERE texto = ANY($1)',
          [missing.slice(0, 5).map((i) => `lote ${i}`)],
        );
        // Each one's stanza as the network saw it (never came, or its copies and what became of each).
        const stanzas = rows.map((r) => (r.gateway_msg_id ? fake.stanza(r.gateway_msg_id) : undefined) ?? null);
        return JSON.stringify({ undecrypted: fake.contact(CONTACT).errors.slice(0, 5), rows, stanzas });
      };
      expect(missing, missing.length > 0 ? await why() : '').toEqual([]);
      // At-least-once at the kill: only a message the dead node sent and had not recorded can go twice, at most one per line.
      expect(twice).toBeLessThanOrEqual(LINES);
      const [bal] = await q<{ saldo: number; movido: number; cobrados: number }>(
        `SELECT c.saldo_global::int AS saldo,
           (SELECT COALESCE(SUM(monto), 0) FROM movimientos_saldo m WHERE m.cliente_id = c.id AND m.celular_id IS NULL AND m.actor = 'sistema')::int AS movido,
           (SELECT COUNT(*) FROM mensajes x WHERE x.cliente_id = c.id AND x.cobrado = 1)::int AS cobrados
         FROM clientes c`,
      );
      expect(bal!.saldo).toBe(5000 + bal!.movido);
      expect(bal!.movido).toBe(-bal!.cobrados);
      expect(maxConcurrent()).toBe(1);
    },
    420_000,
  );
});
