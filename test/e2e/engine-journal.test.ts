import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { pgSchema } from '../contract/adapters.js';
import { startFakeNetwork, type FakeNetwork } from '../fakewa/index.js';
import { numeroNuevo } from '../helpers/expect.js';
import { until } from '../helpers/poll.js';
import { crash, killAllServeChildren, startServeChild, stop, type ServeChild } from '../helpers/serve-child.js';
import { api, tempDir } from '../helpers/server.js';
import { describeWith, POSTGRES_URL, postgres, schemaUrl } from '../helpers/services.js';
import { startReceiver, type Receiver } from '../server/webhook-helpers.js';

/**
 * An incoming message exactly once across a crash (D-128): `serve --gateway
 * baileys` on PostgreSQL, a real child process against the fake network.
 * Another connection holds the inbox table (`recibidos`) locked, so the
 * message's inbox write waits while the engine decrypts it and sends its
 * receipt (its key store writes another table, motor_auth). The network has
 * the receipt, so it will never deliver the stanza again; the process is
 * SIGKILLed, its waiting connection ended as a dead machine's would be, the
 * lock released. The next `serve` finds the plaintext in the inbound journal
 * and replays it: the message is in the inbox once, its webhook sent once,
 * and the journal is empty.
 */
let fake: FakeNetwork;
let schema: { schema: string; drop: () => Promise<void> };
let hooks: Receiver;
let s: ServeChild;
let db: pg.Client;
const root = tempDir('pasarela-engine-journal-');
const dataDir = join(root, 'data');
const LINE = numeroNuevo();
const CONTACT = numeroNuevo();
let clientKey = '';
let celularId = 0;

const serve = async () => {
  s = await startServeChild(
    dataDir,
    [
      '--gateway',
      'baileys',
      '--baileys-ws-url',
      fake.wsUrl,
      '--store',
      schemaUrl(schema.schema),
      '--drain-delay',
      '0',
      '--allow-private-urls',
      // A killed node's engine lease is free once its heartbeat is stale: its longest send (the lease) plus a margin of 10 s.
      '--gateway-timeout',
      '2s',
      '--queue-lease',
      '16s',
      '--webhook-timeout',
      '2s',
    ],
    180_000,
    { NODE_OPTIONS: `--import=${fake.preloadFile}`, NODE_EXTRA_CA_CERTS: fake.caFile },
  );
};
/** serve again after a crash: it takes the dead node's line once that node counts as gone (D-136). */
const serveAgain = serve;
const status = async () => (await api(s.url, 'GET', `/api/celular_status.php?id=${celularId}`, { key: clientKey })).body.status as string;
const q = async <T extends pg.QueryResultRow>(sql: string, params: unknown[] = []) => (await db.query<T>(sql, params)).rows;
const rowsOf = (id: string) => q<{ texto: string }>(`SELECT texto FROM ${schema.schema}.recibidos WHERE gateway_msg_id = $1`, [id]);
const journal = async () => Number((await q<{ n: string }>(`SELECT count(*) AS n FROM ${schema.schema}.motor_auth WHERE kind = 'inbound-plain'`))[0]!.n);
const received = (texto: string) => hooks.hits.filter((h) => h.json?.evento === 'messages.received' && h.json.data.texto === texto);

/**
 * A message sent while another connection holds the inbox table locked: once
 * the line has sent its receipt and journaled it, and its inbox write waits
 * on the lock, serve is SIGKILLed; its blocked connection is ended as a dead
 * machine's would be (a killed process's backend would only notice once the
 * lock is gone), then the lock released.
 */
async function crashWhileHeld(texto: string): Promise<string> {
  const holder = new pg.Client({ connectionString: POSTGRES_URL });
  await holder.connect();
  try {
    await holder.query('BEGIN');
    await holder.query(`LOCK TABLE ${schema.schema}.recibidos IN ACCESS EXCLUSIVE MODE`);
    const id = await fake.sendText(CONTACT, LINE, texto);
    await until(async () => fake.acks(LINE).some((a) => a.endsWith(`:${id}`)), { what: 'the receipt sent' });
    // The plaintext is durable beside the session while the inbox write waits on the lock.
    await until(async () => (await journal()) === 1, { what: 'the journal entry' });
    const holderPid = (await holder.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
    await until(async () => (await q(`SELECT pid FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))`, [holderPid])).length > 0, {
      what: 'the inbox write waiting on the lock',
    });
    await crash(s);
    await q('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))', [holderPid]);
    return id;
  } finally {
    await holder.query('ROLLBACK').catch(() => undefined);
    await holder.end();
  }
}

describeWith(postgres, 'an incoming message across a crash of the engine (PostgreSQL)', () => {
  beforeAll(async () => {
    schema = await pgSchema();
    db = new pg.Client({ connectionString: POSTGRES_URL });
    await db.connect();
    hooks = await startReceiver(200);
    fake = await startFakeNetwork();
    fake.contact(CONTACT);
    await serve();
    const admin = readFileSync(join(dataDir, 'admin-token'), 'utf8').trim();
    const c = await api(s.url, 'POST', '/admin/clientes', { key: admin, json: { nombre: 'Diario', email: 'diario@example.com', saldo: 100 } });
    expect(c.status, c.text).toBe(201);
    clientKey = c.body.api_key as string;
    const w = await api(s.url, 'POST', '/api/webhook.php', { key: clientKey, json: { url: hooks.url, eventos: ['messages.received'] } });
    expect(w.status, w.text).toBe(200);
    const cel = await api(s.url, 'POST', '/api/celular_crear.php', { key: clientKey, json: { numero: LINE } });
    expect(cel.status, cel.text).toBe(201);
    celularId = cel.body.celular_id as number;
    const qr = await api(s.url, 'POST', `/api/celular_qr.php?id=${celularId}`, { key: clientKey, json: {} });
    expect(qr.body.status, qr.text).toBe('need_scan');
    await fake.scanQr(qr.body.qr as string, LINE);
    await until(async () => (await status()) === 'connected', { what: 'the line connected', timeoutMs: 60_000 });
  });
  afterAll(async () => {
    killAllServeChildren();
    await db?.end().catch(() => undefined);
    await hooks?.close();
    await fake?.close();
    await schema?.drop();
    rmSync(root, { recursive: true, force: true });
  });

  it('the receipt sent, the inbox write held, serve killed: the next serve stores it once from the journal, one webhook, the journal empty', async () => {
    // Normal traffic first: stored, its webhook sent, nothing left in the journal.
    const before = await fake.sendText(CONTACT, LINE, 'antes del corte');
    await until(async () => (await rowsOf(before)).length === 1, { what: 'the first row' });
    await until(() => received('antes del corte').length === 1, { what: 'its webhook' });
    await until(async () => (await journal()) === 0, { what: 'the journal empty after normal traffic' });

    const id = await crashWhileHeld('durante el corte');
    // The network has the line's receipt: it dropped the stanza and will not deliver it again.
    expect(fake.unacked(LINE)).not.toContain(id);
    expect(await rowsOf(id)).toHaveLength(0);
    expect(received('durante el corte')).toHaveLength(0);

    await serveAgain();
    await until(async () => (await rowsOf(id)).length > 0, { what: 'the row, replayed from the journal', timeoutMs: 60_000 });
    await until(async () => (await journal()) === 0 && (await status()) === 'connected', { what: 'the journal empty, the line connected', timeoutMs: 60_000 });
    // A later message in the same order of events: once its webhook is in, the replayed one's had every chance to come twice.
    const after = await fake.sendText(CONTACT, LINE, 'después del corte');
    await until(async () => (await rowsOf(after)).length === 1, { what: 'a later row' });
    await until(() => received('después del corte').length === 1 && received('durante el corte').length >= 1, { what: 'the webhooks' });
    expect((await rowsOf(id)).map((r) => r.texto)).toEqual(['durante el corte']);
    expect(received('durante el corte')).toHaveLength(1);
    expect(await rowsOf(before)).toHaveLength(1);
    expect(received('antes del corte')).toHaveLength(1);
    // The network never delivered it again (one receipt, before the crash): the journal did.
    expect(fake.acks(LINE).filter((a) => a.endsWith(`:${id}`))).toHaveLength(1);
  }, 240_000);

  it('the receipt lost on the way too: after the restart the network delivers the stanza again and its entry answers it (no retry asked of the sender); stored once, one webhook', async () => {
    fake.loseAcks(true);
    let id = '';
    try {
      id = await crashWhileHeld('sin recibo');
    } finally {
      fake.loseAcks(false);
    }
    expect(fake.unacked(LINE)).toContain(id);
    expect(await rowsOf(id)).toHaveLength(0);
    await serveAgain();
    await until(async () => (await rowsOf(id)).length > 0 && !fake.unacked(LINE).includes(id), {
      what: 'the row, and the stanza delivered again taken',
      timeoutMs: 60_000,
    });
    await until(async () => (await journal()) === 0, { what: 'the journal empty', timeoutMs: 60_000 });
    const after = await fake.sendText(CONTACT, LINE, 'luego');
    await until(async () => (await rowsOf(after)).length === 1, { what: 'a later row' });
    await until(() => received('luego').length === 1 && received('sin recibo').length >= 1, { what: 'the webhooks' });
    expect((await rowsOf(id)).map((r) => r.texto)).toEqual(['sin recibo']);
    expect(received('sin recibo')).toHaveLength(1);
    // Two delivery receipts, before the crash and for the stanza delivered again: the moved ratchet, never asked, would have
    // refused it (Baileys then answers with an error ack, `ack:message:<id>`, or asks the sender for a retry).
    const acks = fake.acks(LINE).filter((a) => a.endsWith(`:${id}`));
    expect(acks).toHaveLength(2);
    expect(
      acks.every((a) => a.startsWith('receipt:') && !a.includes(':retry:')),
      acks.join(' '),
    ).toBe(true);
    await stop(s);
  }, 240_000);
});
