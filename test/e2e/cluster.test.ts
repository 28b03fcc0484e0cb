import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startEvolutionFake, type EvolutionFake, type FakeMessage } from '../fakes/evolution.js';
import { pgSchema } from '../contract/adapters.js';
import { api, tempDir } from '../helpers/server.js';
import { crash, killAllServeChildren, startServeChild, stop, type ServeChild } from '../helpers/serve-child.js';
import { describeWith, dropRedisPrefix, postgres, redis, REDIS_URL, uniqueNamespace, schemaUrl } from '../helpers/services.js';
import { numeroNuevo, TEXT } from '../server/send-helpers.js';
import { startReceiver, type Receiver } from '../server/webhook-helpers.js';
import { until } from '../helpers/poll.js';

/**
 * Three `serve` processes on one PostgreSQL and one Redis, in front of one
 * Evolution API (a fake over real HTTP that records every send): messages go
 * through the nodes in turn, one node is killed with SIGKILL while the queue
 * drains, and then what every operator counts on is checked in the database
 * and at the fake network: every accepted message ended, none was sent twice
 * except one the dead node had in flight (sent again after its takeover) or
 * one whose answer came after the send timeout (retried after its backoff),
 * each line's order and gap held, balances equal their ledgers, duplicate
 * blocks and caps held across nodes, and every event reached the client's
 * webhook.
 */
const LINES = 18;
const MESSAGES = 2400;
const GAP_MIN = 30;
const SALDO = 100_000;

let fake: EvolutionFake;
let hooks: Receiver;
let db: pg.Client;
let dropSchema: () => Promise<void>;
let prefix: string;
const nodes: ServeChild[] = [];
let token = '';

/**
 * Who sent what, told by the connection a send came on, not by when the fake
 * (in this busy test process) got to read it: the dead node's last requests
 * can be read after the kill. Linux /proc: the client ends of connections to
 * the fake (socket inode by local port), and the sockets a process holds.
 */
function fakeConnections(): Map<number, string> {
  const fakePort = Number(new URL(fake.url).port);
  const byPort = new Map<number, string>();
  for (const line of readFileSync('/proc/net/tcp', 'utf8').split('\n').slice(1)) {
    const [, local, remote, , , , , , , inode] = line.trim().split(/\s+/);
    if (local && remote && inode && inode !== '0' && Number.parseInt(remote.split(':')[1]!, 16) === fakePort)
      byPort.set(Number.parseInt(local.split(':')[1]!, 16), inode);
  }
  return byPort;
}

function socketsOf(pid: number | undefined): Set<string> {
  const out = new Set<string>();
  let fds: string[] = [];
  try {
    fds = readdirSync(`/proc/${pid}/fd`);
  } catch {
    return out; // a node that is gone
  }
  for (const fd of fds) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (m) out.add(m[1]!);
    } catch {
      // closed meanwhile
    }
  }
  return out;
}

/** The node at the client end of a connection the fake accepts (`node 0` .. `node 2`). */
function nodeOfPeer(remotePort: number): string | undefined {
  const inode = fakeConnections().get(remotePort);
  if (inode === undefined) return undefined;
  const i = nodes.findIndex((n) => socketsOf(n.child.pid).has(inode));
  return i < 0 ? undefined : `node ${i}`;
}

/** The client ports of a node's connections to the fake. */
function portsOf(pid: number | undefined): Set<number> {
  const mine = socketsOf(pid);
  return new Set([...fakeConnections()].filter(([, inode]) => mine.has(inode)).map(([port]) => port));
}

const admin = (n: ServeChild, method: string, path: string, json?: unknown) => api(n.url, method, path, { key: token, json });

afterAll(async () => {
  killAllServeChildren();
  await db?.end().catch(() => undefined);
  await dropSchema?.().catch(() => undefined);
  if (prefix) await dropRedisPrefix(prefix).catch(() => undefined);
  await hooks?.close();
  await fake?.close();
});

describeWith(postgres, 'a cluster of three nodes (PostgreSQL)', () => {
  describeWith(redis, 'and Redis', () => {
    beforeAll(async () => {
      fake = await startEvolutionFake({ apiKey: 'cluster-key-0123456789abcdef', peerOf: nodeOfPeer });
      hooks = await startReceiver(200);
      const s = await pgSchema();
      dropSchema = s.drop;
      const u = new URL(schemaUrl(s.schema));
      db = new pg.Client({ connectionString: u.toString() });
      await db.connect();
      prefix = uniqueNamespace('redis');
      const args = [
        ...['--store', u.toString(), '--counters', REDIS_URL, '--counters-prefix', prefix],
        ...['--gateway', 'evolution', '--gateway-url', fake.url, '--gateway-key', fake.apiKey, '--allow-private-urls'],
        ...[
          '--queue-gap-ms',
          `${GAP_MIN}-${2 * GAP_MIN}`,
          '--gateway-timeout',
          '500ms',
          '--queue-lease',
          '5s',
          '--health-interval',
          '0',
          '--webhook-retry-ms',
          '200',
        ],
      ];
      // The first node makes the operator token and gateway secret; the others take them from the store.
      const dirs = [tempDir(), tempDir(), tempDir()];
      for (const d of dirs) nodes.push(await startServeChild(d, args, 300_000));
      token = readFileSync(join(dirs[0]!, 'admin-token'), 'utf8').trim();
    }, 60_000);

    it('every accepted message ends once, in order and paced per line, with balances, dupes, caps and webhooks exact, across a SIGKILL', async () => {
      const at = (i: number) => nodes[i % nodes.length]!;
      // Clients and lines, made and linked through different nodes.
      const clients: Array<{ id: number; key: string }> = [];
      for (let c = 0; c < 3; c++) {
        const r = await admin(at(c), 'POST', '/admin/clientes', { nombre: `Cluster ${c}`, email: `cluster${c}.${Date.now()}@example.com`, saldo: SALDO });
        expect(r.status, r.text).toBe(201);
        clients.push({ id: r.body.cliente.id, key: r.body.api_key });
        const w = await api(at(c + 1).url, 'POST', '/api/webhook.php', { key: r.body.api_key, json: { url: hooks.url, eventos: ['message.status'] } });
        expect(w.status, w.text).toBe(200);
      }
      const lines: Array<{ id: number; key: string; cliente: number }> = [];
      // The load's lines, then one with a daily cap, then one for the duplicate block (which blocks its line).
      for (let i = 0; i < LINES + 2; i++) {
        const cli = clients[i % clients.length]!;
        const cel = await api(at(i).url, 'POST', '/api/celular_crear.php', { key: cli.key, json: { numero: numeroNuevo() } });
        expect(cel.status, cel.text).toBe(201);
        const id = cel.body.celular_id as number;
        const caps = i === LINES ? { max_envios_por_dia: 5 } : { max_envios_por_minuto: 1000, max_envios_por_hora: 50_000 };
        expect((await api(at(i + 1).url, 'POST', '/api/celular_editar.php', { key: cli.key, json: { id, ...caps } })).status).toBe(200);
        await until(
          async () => {
            const qr = await api(at(i + 2).url, 'POST', `/api/celular_qr.php?id=${id}`, { key: cli.key });
            return qr.status === 200 && qr.body.qr !== '';
          },
          { what: 'a QR' },
        );
        await fake.scan(`pasarela-${id}`);
        lines.push({ id, key: cel.body.api_key, cliente: cli.id });
      }
      await fake.settle();
      await until(async () => (await db.query("SELECT COUNT(*)::int AS n FROM celulares WHERE estado = 'activo'")).rows[0].n === LINES + 2, {
        what: 'every line linked',
        timeoutMs: 20_000,
      });

      // Duplicate protection counts across nodes (Redis): the fourth same text to one number within 2 minutes is refused, and its line blocked.
      const dupe = { destinatario: numeroNuevo(), mensaje: 'el mismo texto' };
      const dupes = [];
      for (let i = 0; i < 4; i++) dupes.push(await api(at(i).url, 'POST', TEXT, { key: lines[LINES + 1]!.key, json: dupe }));
      expect(dupes.slice(0, 3).map((r) => r.status)).toEqual([200, 200, 200]);
      expect(dupes[3]!.status, dupes[3]!.text).toBe(429);

      // A daily cap of 5 holds across nodes: 8 queued, 5 sent, 3 wait for tomorrow.
      const capped = lines[LINES]!;
      for (let i = 0; i < 8; i++) {
        const r = await api(at(i).url, 'POST', TEXT, { key: capped.key, json: { destinatario: numeroNuevo(), mensaje: `tope ${i}` } });
        expect(r.status, r.text).toBe(200);
      }

      // The load: through the nodes in turn, 12 requests at a time.
      const accepted: string[] = [];
      let next = 0;
      await Promise.all(
        Array.from({ length: 12 }, async () => {
          while (next < MESSAGES) {
            const i = next++;
            const line = lines[i % LINES]!;
            const r = await api(at(i).url, 'POST', TEXT, { key: line.key, json: { destinatario: numeroNuevo(), mensaje: `carga ${i}` } });
            expect(r.status, r.text).toBe(200);
            accepted.push(r.body.msg_id as string);
          }
        }),
      );
      const countSent = async () =>
        (await db.query("SELECT COUNT(*)::int AS n FROM mensajes WHERE estado <> 'pendiente' AND texto LIKE 'carga %'")).rows[0].n as number;
      await until(async () => (await countSent()) >= MESSAGES / 3, { what: 'a third sent', timeoutMs: 60_000 });
      const killedAt = Date.now();
      // Its connections to the fake as it dies: a request it sent on one may be read (and named) after.
      // Stopped first, so it opens none between this list and the kill (CI saw one sent from such a port).
      const killedPid = nodes[1]!.child.pid;
      nodes[1]!.child.kill('SIGSTOP');
      const killedPorts = portsOf(killedPid);
      await crash(nodes[1]!);
      // The two left drain the rest, the dead node's lines once it has been silent its stale time (30 s here: the longest of its send and webhook leases, plus 10 s).
      await until(async () => (await countSent()) === MESSAGES, { what: 'every message ended', timeoutMs: 90_000 });

      // Every accepted message ended sent (none failed: every line was up).
      const rows = (
        await db.query<{ msg_id: string; celular_id: string; texto: string; estado: string; seq: string }>(
          "SELECT msg_id, celular_id, texto, estado, seq FROM mensajes WHERE texto LIKE 'carga %' ORDER BY seq",
        )
      ).rows;
      expect(rows).toHaveLength(MESSAGES);
      expect(new Set(rows.map((r) => r.msg_id))).toEqual(new Set(accepted));
      expect(rows.filter((r) => !['enviado', 'entregado', 'leido'].includes(r.estado))).toEqual([]);

      // At the network: each text once, but for the at-least-once the README promises of Evolution
      // (no msg_id to dedupe on): a send the dead node had in flight, sent again by a live node once
      // the dead node's lines were taken over (its last heartbeat plus its stale time); or a send
      // whose answer did not come within the send timeout (a loaded machine), retried after its
      // backoff, which records the failed attempt (intentos >= 2). Who sent each is its connection's.
      const seen = new Map<string, FakeMessage[]>();
      for (const m of fake.messages) {
        const text = String((m.request as { text?: string }).text ?? '');
        if (text.startsWith('carga ')) (seen.get(text) ?? seen.set(text, []).get(text)!).push(m);
      }
      expect(seen.size).toBe(MESSAGES);
      const KILLED = 'node 1';
      const sender = (m: FakeMessage) => m.peer ?? (m.port !== undefined && killedPorts.has(m.port) ? KILLED : undefined);
      const {
        rows: [dead],
      } = await db.query<{ takeover: string }>('SELECT heartbeat_at + stale_ms AS takeover FROM nodos WHERE etiqueta LIKE $1', [
        `pasarela serve pid ${killedPid} on %`,
      ]);
      const takeoverAt = Number(dead!.takeover);
      const intentos = new Map(
        (await db.query<{ texto: string; intentos: number }>("SELECT texto, intentos FROM mensajes WHERE texto LIKE 'carga %'")).rows.map((r) => [
          r.texto,
          r.intentos,
        ]),
      );
      const twice = [...seen].filter(([, sends]) => sends.length > 1);
      let takenOverTwice = 0;
      for (const [text, sends] of twice) {
        const what = JSON.stringify({
          intentos: intentos.get(text),
          sends: sends.map((m) => ({ by: sender(m) ?? `port ${m.port}`, sinceKill: m.at - killedAt })),
          takeoverSinceKill: takeoverAt - killedAt,
        });
        expect(sends, `${text}: ${what}`).toHaveLength(2);
        const retried = (intentos.get(text) ?? 0) >= 2;
        const [a, b] = sends as [FakeMessage, FakeMessage];
        const takenOver = sender(a) === KILLED && sender(b) !== undefined && sender(b) !== KILLED && b.at >= takeoverAt;
        expect(retried || takenOver, `${text} sent twice, neither after a failed attempt nor by the dead node then after its takeover: ${what}`).toBe(true);
        if (!retried) takenOverTwice += 1;
      }
      // The dead node had at most one send in flight per line. (A retry after an attempt that timed out is
      // the queue's documented at-least-once, and a loaded machine makes more of them: not bounded here.)
      expect(takenOverTwice).toBeLessThanOrEqual(LINES);

      // Per line: sent in arrival order (the order the fake took them in: one send per line at a time),
      // at least the smallest gap apart. The gap runs from one send's record to the next one's claim, so
      // the records (enviado_at, on the nodes' clock) are that far apart; the fake's clock, read by this
      // busy process, could not tell it: a late read of one send shortens the gap after it.
      const order = new Map<string, number>();
      fake.messages.forEach((m, k) => {
        const text = String((m.request as { text?: string }).text ?? '');
        if (!order.has(text)) order.set(text, k);
      });
      const enviados = new Map(
        (await db.query<{ texto: string; enviado_at: string }>("SELECT texto, enviado_at FROM mensajes WHERE texto LIKE 'carga %'")).rows.map((r) => [
          r.texto,
          Number(r.enviado_at),
        ]),
      );
      for (const [k, line] of lines.slice(0, LINES).entries()) {
        const mine = rows.filter((r) => Number(r.celular_id) === line.id).map((r) => r.texto);
        expect(mine.length, `line ${line.id}`).toBe(Math.ceil((MESSAGES - k) / LINES));
        for (let i = 1; i < mine.length; i++) {
          expect(order.get(mine[i]!)! > order.get(mine[i - 1]!)!, `line ${line.id}: ${mine[i]} went out before ${mine[i - 1]}`).toBe(true);
          expect(enviados.get(mine[i]!)! - enviados.get(mine[i - 1]!)!, `line ${line.id} message ${i}`).toBeGreaterThanOrEqual(GAP_MIN);
        }
      }

      // The cap: five of eight sent, across every node.
      const tope = (await db.query('SELECT estado, COUNT(*)::int AS n FROM mensajes WHERE celular_id = $1 GROUP BY estado', [capped.id])).rows;
      expect(tope.filter((r) => r.estado !== 'pendiente').reduce((a, r) => a + r.n, 0)).toBe(5);
      expect(tope.find((r) => r.estado === 'pendiente')?.n).toBe(3);

      // Balances equal their ledgers: one unit per message charged, none refunded.
      for (const c of clients) {
        const {
          rows: [b],
        } = await db.query(
          `SELECT c.saldo_global::int AS saldo,
             (SELECT COALESCE(SUM(monto), 0) FROM movimientos_saldo m WHERE m.cliente_id = c.id AND m.celular_id IS NULL AND m.actor = 'sistema')::int AS movido,
             (SELECT COUNT(*) FROM mensajes x WHERE x.cliente_id = c.id AND x.cobrado = 1)::int AS cobrados
           FROM clientes c WHERE c.id = $1`,
          [c.id],
        );
        expect(b.saldo).toBe(SALDO + b.movido);
        expect(b.movido).toBe(-b.cobrados);
      }

      // Every message's sent event reached the webhook (a retry keeps its id).
      await until(
        () => {
          const got = new Set(
            hooks.hits
              .filter((h) => (h.json as { data?: { estado?: string } })?.data?.estado === 'enviado')
              .map((h) => (h.json as { data: { msg_id: string } }).data.msg_id),
          );
          return accepted.every((id) => got.has(id));
        },
        { what: 'every message.status enviado event', timeoutMs: 60_000 },
      );
      const ids = new Map<string, string>();
      for (const h of hooks.hits) {
        const j = h.json as { id: string; data: { msg_id?: string; estado?: string } };
        const key = `${j.data.msg_id}:${j.data.estado}`;
        if (ids.has(key)) expect(ids.get(key), `${key} delivered under two ids`).toBe(j.id);
        ids.set(key, j.id);
      }

      await stop(nodes[0]!);
      await stop(nodes[2]!);
    }, 240_000);
  });
});
