import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, expect, it } from 'vitest';
import type { HistoryFilter } from '../../src/core/ports/messages.js';
import type { MensajeEstado } from '../../src/core/ports/model.js';
import type { Store } from '../../src/core/ports/store.js';
import { celularKey, clientKey, hashSecret, newSecret } from '../../src/core/auth/keys.js';
import { newMsgId } from '../../src/core/sending/ids.js';
import { MIGRATIONS } from '../../src/store/sqlite/migrations.js';
import { Db } from '../../src/store/postgres/db.js';
import { PG_MIGRATIONS } from '../../src/store/postgres/migrations.js';
import { checkCopy } from '../../src/store/migrate/import-check.js';
import { openSqliteStore } from '../../src/store/sqlite/store.js';
import { celular, claimableAt, openPg, pgSchema } from '../contract/adapters.js';
import { killAllServeChildren, startServeChild, stop } from '../helpers/serve-child.js';
import { api } from '../helpers/server.js';
import { describeWith, postgres, POSTGRES_URL, schemaUrl } from '../helpers/services.js';
import { Cli, tempDir } from './helpers.js';

const STORY_COLUMNS = new Set(['nodo', 'reclamado_at', 'error_at']);

/** The newest SQLite schema this pasarela knows. */
const LATEST = MIGRATIONS[MIGRATIONS.length - 1]!.version;

/**
 * `pasarela migrate --from sqlite:DIR --to postgres://...`, the real binary on
 * a data directory filled through the store's port: every table arrives, the
 * PostgreSQL store answers its port's questions as SQLite did, a `serve` on it
 * answers history and balances the same, new ids never reuse old ones; and
 * the refusals (a target with data, PostgreSQL out of reach, no source) exit
 * non-zero with one clear line.
 */
const cli = new Cli();
const drops: Array<() => Promise<void>> = [];
afterAll(async () => {
  killAllServeChildren();
  for (const d of drops) await d();
  cli.cleanup();
});

/** A temporary directory removed after the suite. */
function scratch(): string {
  const dir = tempDir('pasarela-migrate-');
  drops.push(async () => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** A schema of its own, and the URL that puts the store in it. */
async function target(): Promise<{ schema: string; url: string }> {
  const s = await pgSchema();
  drops.push(s.drop);
  const u = new URL(schemaUrl(s.schema));
  return { schema: s.schema, url: u.toString() };
}

const MIN = 60_000;
const ESTADOS: MensajeEstado[] = ['pendiente', 'enviado', 'entregado', 'leido', 'error'];

interface Installation {
  dataDir: string;
  clienteA: number;
  clienteB: number;
  keyA: string;
  lineas: number[];
  lineKey: string;
  deletedLine: number;
  mediaFile: string;
  mediaId: string;
  now: number;
}

/** A data directory as a running installation leaves it: accounts, balances, history in every state, queues, webhooks, kv. */
async function install(): Promise<Installation> {
  const dataDir = join(scratch(), 'data');
  mkdirSync(join(dataDir, 'tmp'), { recursive: true });
  const s = openSqliteStore(join(dataDir, 'pasarela.db'));
  const now = Date.now() - 10 * 24 * 60 * MIN;
  const secretA = newSecret();
  const a = await s.createCliente(
    { nombre: 'Acme', email: 'a@acme.mx', plan: 'medido', estado: 'activo', max_celulares: null, saldo_global: 0, key_hash: hashSecret(secretA) },
    now,
  );
  const b = await s.createCliente(
    { nombre: 'Beta', email: 'b@beta.mx', plan: 'ilimitado', estado: 'suspendido', max_celulares: 2, saldo_global: 0, key_hash: 'h' },
    now,
  );
  const gw = await s.addGatewayServer({ nombre: 'evo-1', tipo: 'evolution', url: 'http://127.0.0.1:9/evo', key: 'k'.repeat(20), max_lineas: 5 }, now);
  await s.addGatewayServer({ nombre: 'evo-2', tipo: 'evolution', url: 'http://127.0.0.1:9/evo2', key: 'k'.repeat(20), max_lineas: null }, now);
  const lineSecret = newSecret();
  const lineas: number[] = [];
  for (const n of ['5215500000001', '5215500000002', '5215500000003']) {
    const r = await s.insertCelular({ ...celular(a.id, n), key_hash: hashSecret(lineSecret) }, now);
    if (!r.ok) throw new Error(r.reason);
    lineas.push(r.celular.id);
  }
  const bLine = await s.insertCelular(celular(b.id, '5215500000004'), now);
  if (!bLine.ok) throw new Error(bLine.reason);
  const gone = await s.insertCelular(celular(a.id, '5215500000009'), now);
  if (!gone.ok) throw new Error(gone.reason);
  await s.assignGatewayServer(lineas[0]!, () => (gw.ok ? gw.servidor.id : null), now);
  await s.updateCelular(lineas[0]!, { gateway_instancia: 'pasarela-1', last_status: 'disconnected', last_status_check: now }, now);
  await s.changeBalance({ cliente_id: a.id, celular_id: null, monto: 1000, motivo: 'saldo inicial', actor: 'operator' }, now);
  await s.changeBalance({ cliente_id: a.id, celular_id: lineas[1]!, monto: 40, motivo: 'recarga', actor: 'operator' }, now);
  await s.changeBalance({ cliente_id: a.id, celular_id: gone.celular.id, monto: 7, motivo: 'recarga', actor: 'operator' }, now);
  await s.changeBalance({ cliente_id: a.id, celular_id: null, monto: -5, motivo: 'ajuste', actor: 'operator' }, now);
  // The highest line id is deleted: a new line on PostgreSQL must not get it back.
  await s.deleteCelular(
    gone.celular.id,
    { actor: 'operator', accion: 'celular.eliminar', objeto_tipo: 'celular', objeto_id: gone.celular.id, cliente_id: a.id, detalle: {} },
    now,
  );
  // Webhooks: A's current configuration with one replaced under it; B's deleted one that can still be restored.
  await s.setWebhook({ cliente_id: a.id, url: 'http://127.0.0.1:9/old', secret: 'old-secret-0123456789', eventos: ['message.status'], activo: false }, now);
  await s.setWebhook({ cliente_id: a.id, url: 'http://127.0.0.1:9/hook', secret: 'secret-0123456789', eventos: ['all'], activo: true }, now);
  await s.setWebhook({ cliente_id: b.id, url: 'http://127.0.0.1:9/b', secret: null, eventos: ['all'], activo: true }, now);
  await s.deleteWebhook(b.id, now);
  // A live `webhook listen`: its lease belongs to the old server and is left behind.
  await s.addEscucha(
    {
      id: 'esc_migrate',
      cliente_id: a.id,
      url: 'http://127.0.0.1:9/',
      secret: 'listener-secret-0123456789',
      eventos: ['all'],
      created_at: now,
      expira_at: now + 10 * 365 * 24 * 60 * MIN,
    },
    5,
    now,
  );

  // 360 messages over three lines and ten days, in every state, queued and direct, charged to either balance.
  for (let i = 0; i < 360; i++) {
    const at = now + i * 40 * MIN;
    const linea = lineas[i % 3]!;
    const msgId = newMsgId(at);
    const r = await s.acceptMensaje(
      {
        msg_id: msgId,
        cliente_id: a.id,
        celular_id: linea,
        destinatario: `521550000${String(1000 + (i % 7))}`,
        tipo: 'texto',
        modo: i % 4 === 0 ? 'directo' : 'cola',
        texto: `hola ${i} "ñ" \\ {x}`,
        media: null,
        payload: { texto: `hola ${i}` },
        expira_at: null,
      },
      {
        charge: true,
        maxPending: null,
        // Every tenth named by an Idempotency-Key, still bound when copied (one still in flight: no answer yet).
        ...(i % 10 === 0
          ? {
              idem: {
                clave: `clave-${i}`,
                huella: `h${i}`,
                expira_at: Date.now() + 86_400_000,
                answer: () => ({ status: i === 0 ? null : 200, body: `{"n":${i}}` }),
              },
            }
          : {}),
      },
      at,
    );
    if (!r.ok) throw new Error(`accept ${i}: ${r.reason}`);
    const estado = i % 4 === 0 ? ESTADOS[1 + (i % 3)]! : ESTADOS[i % 5]!;
    if (estado === 'pendiente') continue;
    if (estado === 'error') {
      await s.failMensaje(msgId, 'gateway said no', 'rechazado', at + 1000);
      continue;
    }
    await s.markSent(msgId, `gw-${i}`, at + 1000);
    if (estado === 'entregado' || estado === 'leido') await s.receipt(linea, `gw-${i}`, 'entregado', at + 2000);
    if (estado === 'leido') await s.receipt(linea, `gw-${i}`, 'leido', at + 3000);
  }
  // A queued image whose base64 bytes wait in the data directory's tmp/.
  const mediaId = newMsgId(now);
  const mediaFile = join(dataDir, 'tmp', `${mediaId}.bin`);
  writeFileSync(mediaFile, Buffer.from('89504e470d0a1a0a', 'hex'));
  const m = await s.acceptMensaje(
    {
      msg_id: mediaId,
      cliente_id: a.id,
      celular_id: lineas[2]!,
      destinatario: '5215512340000',
      tipo: 'imagen',
      modo: 'cola',
      texto: 'foto',
      media: { filename: 'a.png', mime: 'image/png', bytes: 8 },
      payload: { file: mediaFile, mime: 'image/png', filename: 'a.png', caption: 'foto' },
      expira_at: null,
    },
    { charge: true, maxPending: null },
    now + 400 * 40 * MIN,
  );
  if (!m.ok) throw new Error(m.reason);
  // A receipt that beat its send, an incoming message seen, the journal half moved to the outbox, some attempts.
  await s.receipt(lineas[0]!, 'gw-not-yet', 'entregado', now);
  await s.journalInbound(
    { evento: 'messages.received', cliente_id: a.id, celular_id: lineas[0]!, data: { de: '5215599999999', texto: 'hola' }, fecha: now },
    'clave-1',
    now,
    {
      cliente_id: a.id,
      celular_id: lineas[0]!,
      de: '5215599999999',
      tipo: 'texto',
      texto: 'hola',
      media: null,
      gateway_msg_id: 'GW-IN-1',
      fecha: now - 1000,
    },
  );
  await s.journalInbound({ evento: 'messages.received', cliente_id: a.id, celular_id: lineas[1]!, data: {}, fecha: now }, 'clave-2', now + 1, {
    cliente_id: a.id,
    celular_id: lineas[1]!,
    de: '14155552671',
    tipo: 'audio',
    texto: null,
    media: { mime: 'audio/ogg', bytes: 1234, ptt: true },
    gateway_msg_id: 'GW-IN-2',
    fecha: now,
  });
  // Deliveries: test events logged as such; attempts are recorded under the claim they were made under.
  const entregas: string[] = [];
  for (let i = 1; i <= 30; i++)
    entregas.push(await s.logTestEvent({ evento: 'webhook.test', cliente_id: a.id, celular_id: null, data: { i }, fecha: now }, true));
  await s.claimEntregas(a.id, now, 30, { id: 'fixture', until: now + 60_000 });
  for (let i = 1; i <= 30; i++) {
    await s.recordAttempt(
      entregas[i - 1]!,
      'fixture',
      { status: i % 2 ? 500 : 200, duracion_ms: 12, error: i % 2 ? 'HTTP 500' : null },
      i % 2 ? { estado: 'pendiente', proximo_intento_at: now + i * 1000 } : { estado: 'entregado' },
      now + i,
    );
  }
  await s.kvSet('sim', 'sesion-1', { estado: 'connected', n: 1 });
  await s.kvSet('sim', 'idem-1', { gid: 'x' }, now + 3_600_000);
  await s.kvSet('otro', 'clave', 'valor con "comillas"');
  await s.close();
  return {
    dataDir,
    clienteA: a.id,
    clienteB: b.id,
    keyA: clientKey(a.id, secretA),
    lineas,
    lineKey: celularKey(lineas[1]!, lineSecret),
    deletedLine: gone.celular.id,
    mediaFile,
    mediaId,
    now,
  };
}

/** Every port read a running service makes of what was moved, on one store. */
async function portView(store: Store, inst: Installation) {
  const history: HistoryFilter[] = [
    { cliente_id: inst.clienteA, page: 1, por_pagina: 50 },
    { cliente_id: inst.clienteA, page: 3, por_pagina: 40 },
    { cliente_id: inst.clienteA, estado: 'pendiente', page: 1, por_pagina: 500 },
    { cliente_id: inst.clienteA, celular_id: inst.lineas[1], estado: 'leido', page: 1, por_pagina: 20 },
    { cliente_id: inst.clienteA, destinatario: '5215500001003', page: 1, por_pagina: 100 },
    { cliente_id: inst.clienteA, desde: inst.now + 2 * 24 * 60 * MIN, hasta: inst.now + 5 * 24 * 60 * MIN, page: 2, por_pagina: 25 },
    // An estado on whole quarter hours: its total from the quarter-hour counts by estado (recounted in PostgreSQL).
    {
      cliente_id: inst.clienteA,
      estado: 'leido',
      desde: inst.now - (inst.now % 900_000),
      hasta: inst.now - (inst.now % 900_000) + 10 * 24 * 60 * MIN,
      page: 1,
      por_pagina: 25,
    },
  ];
  const clientes = await store.listClientes();
  return {
    clientes,
    celulares: await Promise.all(clientes.map((c) => store.listCelulares(c.id))),
    history: await Promise.all(history.map((f) => store.listMensajes(f))),
    heads: (await store.queueHeads()).sort((x, y) => x.celular_id - y.celular_id),
    stranded: await store.strandedDirect(Number.MAX_SAFE_INTEGER, 100),
    pendingFiles: await store.pendingFiles(),
    stats: await store.messageStats(inst.clienteA, inst.now, inst.now),
    webhooks: await Promise.all(clientes.map((c) => store.getWebhook(c.id))),
    entregas: await store.listEntregas(inst.clienteA, 500),
    due: await claimableAt(store, inst.clienteA, inst.now + 10 * 24 * 60 * MIN, 100),
    queues: (await store.webhookLook(0, false)).queues,
    kv: [await store.kvList('sim'), await store.kvList('otro')],
    audit: await store.listAudit({ limit: 100 }),
    servers: await store.listGatewayServers(),
    byInstance: await store.getCelularByInstancia('pasarela-1'),
    byGid: await store.getMensajeByGatewayId('gw-9'),
    keys: await Promise.all([0, 10, 350].map((i) => store.idemGet(inst.clienteA, `clave-${i}`, inst.now))),
    inbox: await Promise.all([
      store.listRecibidos({ cliente_id: inst.clienteA, page: 1, por_pagina: 50 }),
      store.listRecibidos({ cliente_id: inst.clienteA, celular_id: inst.lineas[1], page: 1, por_pagina: 50 }),
      // Totals from the counts kept (recounted in PostgreSQL): by days, of the client and of a line.
      store.listRecibidos({
        cliente_id: inst.clienteA,
        desde: inst.now - (inst.now % 900_000),
        hasta: inst.now - (inst.now % 900_000) + 86_400_000,
        page: 1,
        por_pagina: 50,
      }),
      store.listRecibidos({ cliente_id: inst.clienteA, celular_id: inst.lineas[0], desde: inst.now - (inst.now % 900_000), page: 1, por_pagina: 50 }),
    ]),
  };
}

describeWith(postgres, 'pasarela migrate --from sqlite --to postgres', () => {
  it('moves every table, answers every port read as SQLite did, serves it, and refuses a second copy into the same store', async () => {
    const inst = await install();
    const { schema, url } = await target();

    const r = await cli.run(['migrate', '--from', `sqlite:${inst.dataDir}`, '--to', url, '--json'], { timeoutMs: 120_000 });
    expect(r.exitCode, r.stderr).toBe(0);
    const report = JSON.parse(r.stdout);
    expect(report).toMatchObject({
      ok: true,
      data_dir: inst.dataDir,
      sqlite_schema: { source: LATEST, copied: LATEST },
      postgres_schema: PG_MIGRATIONS[PG_MIGRATIONS.length - 1]!.version,
      replaced: false,
      serve_running: null,
    });
    const rows = Object.fromEntries(report.tables.map((t: { table: string; sqlite: number; postgres: number }) => [t.table, [t.sqlite, t.postgres]]));
    for (const [table, [lite, pg]] of Object.entries(rows) as Array<[string, [number, number]]>) expect(pg, table).toBe(lite);
    expect(rows.mensajes![0]).toBe(361);
    for (const t of [
      'clientes',
      'celulares',
      'gateway_servidores',
      'auditoria',
      'movimientos_saldo',
      'webhooks',
      'webhook_intentos',
      'eventos',
      'acuses_pendientes',
      'entrantes_vistos',
      'kv',
      'idempotencia',
      'recibidos',
    ]) {
      expect(rows[t]![0], t).toBeGreaterThan(0);
    }
    expect(report.queued_media).toEqual({ messages: 1, present: 1, dirs: [join(inst.dataDir, 'tmp')], copied: 1, missing: 0 });
    expect(report.ledger_gaps_in_source).toEqual([]);
    expect(report.recounted.pendientes_corregidos).toBe(0);

    const lite = openSqliteStore(join(inst.dataDir, 'pasarela.db'));
    const pg = await openPg(schema);
    try {
      const before = await portView(lite, inst);
      expect(before.heads.length).toBe(3);
      expect(before.inbox.map((x) => x.total)).toEqual([2, 1, 2, 1]);
      expect((await lite.liveEscuchas(1, Date.now())).map((e) => e.id)).toEqual(['esc_migrate']);
      expect(await pg.db.q('SELECT id FROM webhook_escuchas')).toEqual([]);
      expect(before.entregas.some((e) => e.estado === 'pendiente' && e.intentos_detalle.length > 0)).toBe(true);
      // The queued image's bytes moved into the database, where any node reads them; the payload names them there.
      const moved = await pg.getMensaje(inst.mediaId);
      expect(JSON.parse(moved!.payload!).file).toBe(`medios:${inst.mediaId}`);
      const chunks = await pg.db.q<{ data: Buffer }>('SELECT data FROM medios WHERE msg_id = $1 ORDER BY n', [inst.mediaId]);
      expect(Buffer.concat(chunks.map((c) => c.data))).toEqual(readFileSync(inst.mediaFile));
      // Otherwise every port answers as SQLite did: the image's payload (wherever a view shows it) and its file aside.
      const payloads = [(await lite.getMensaje(inst.mediaId))!.payload!, moved!.payload!].map((p) => JSON.stringify(p).slice(1, -1));
      const asBefore = (v: Awaited<ReturnType<typeof portView>>) => ({
        // A message's story columns (D-98) are no part of the port's MensajeRow: SQLite's `SELECT *` carries them, PostgreSQL's column list does not.
        ...(JSON.parse(
          payloads.reduce((j, p) => j.replaceAll(p, 'the payload'), JSON.stringify(v)),
          (k, x: unknown) => (STORY_COLUMNS.has(k) ? undefined : x),
        ) as typeof v),
        pendingFiles: v.pendingFiles.filter((f) => !f.endsWith(`${inst.mediaId}.bin`) && f !== `medios:${inst.mediaId}`),
      });
      expect(asBefore(await portView(pg, inst))).toEqual(asBefore(before));
      // New rows continue after the old ones: the deleted line's id is never given again, and history keeps counting.
      const next = await pg.insertCelular(celular(inst.clienteA, '5215500000010'), Date.now());
      expect(next.ok && next.celular.id).toBe(inst.deletedLine + 1);
      const accepted = await pg.acceptMensaje(
        {
          msg_id: newMsgId(),
          cliente_id: inst.clienteA,
          celular_id: inst.lineas[0]!,
          destinatario: '5215500001000',
          tipo: 'texto',
          modo: 'cola',
          texto: 'nuevo',
          media: null,
          payload: { texto: 'nuevo' },
          expira_at: null,
        },
        { charge: true, maxPending: null },
        Date.now(),
      );
      expect(accepted.ok).toBe(true);
      expect((await pg.listMensajes({ cliente_id: inst.clienteA, page: 1, por_pagina: 1 })).total).toBe(362);
      const mov = await pg.changeBalance({ cliente_id: inst.clienteA, celular_id: null, monto: 1, motivo: 'x', actor: 'operator' }, Date.now());
      // The send above was charged first: its ledger row took the id after the copied ones.
      expect(mov.ok && mov.movimiento_id).toBe(rows.movimientos_saldo![0] + 2);
      expect(await pg.restoreWebhook(inst.clienteB, Date.now())).toMatchObject({ url: 'http://127.0.0.1:9/b', activo: true });
    } finally {
      await lite.close();
      await pg.close();
    }

    // Never two installations in one store; --replace empties it in the copy's own transaction.
    const again = await cli.run(['migrate', '--from', `sqlite:${inst.dataDir}`, '--to', url]);
    expect(again.exitCode).toBe(1);
    expect(again.stderr).toMatch(
      /^error: postgres:\/\/postgres@.* already holds pasarela data \(rows in clientes, .*mensajes.*\): migrate copies into an empty store only/,
    );
    expect(again.stderr).not.toMatch(/\n\s+at /);
    const replaced = await cli.run(['migrate', '--from', `sqlite:${join(inst.dataDir, 'pasarela.db')}`, '--to', url, '--replace'], { timeoutMs: 120_000 });
    expect(replaced.exitCode, replaced.stderr).toBe(0);
    expect(replaced.stdout).toMatch(/^mensajes\t361\t361$/m);
    expect(replaced.stderr).toMatch(
      /warning: 1 queued message\(s\) had their media copied into the database; the first serve on the new store with --data-dir /,
    );
    expect(replaced.stderr).toContain(`--data-dir ${inst.dataDir}`);

    // `serve` on the new store, with the same data directory: the same history and balances; the old staged file is swept.
    const served = await startServeChild(inst.dataDir, ['--store', url]);
    try {
      const h = await api(served.url, 'GET', '/api/historial_listar.php?por_pagina=5&estado=leido', { key: inst.keyA });
      expect(h.status, h.text).toBe(200);
      const view = openSqliteStore(join(inst.dataDir, 'pasarela.db'));
      try {
        const expected = await view.listMensajes({ cliente_id: inst.clienteA, estado: 'leido', page: 1, por_pagina: 5 });
        expect(h.body.total).toBe(expected.total);
        expect(h.body.mensajes.map((m: { msg_id: string }) => m.msg_id)).toEqual(expected.rows.map((m) => m.msg_id));
        const saldo = await api(served.url, 'GET', `/api/saldo.php?celular_id=${inst.lineas[1]}`, { key: inst.keyA });
        expect(saldo.status, saldo.text).toBe(200);
        const cli0 = (await view.getCliente(inst.clienteA))!;
        const line = (await view.getCelular(inst.lineas[1]!))!;
        expect(saldo.body).toMatchObject({ saldo_global: cli0.saldo_global, saldo_celular: line.saldo_actual });
        const mine = await api(served.url, 'GET', '/api/saldo.php', { key: inst.lineKey });
        expect(mine.body.saldo_celular).toBe(line.saldo_actual);
      } finally {
        await view.close();
      }
      expect(existsSync(inst.mediaFile)).toBe(false);
      // A store being served is never copied over.
      const busy = await cli.run(['migrate', '--from', `sqlite:${inst.dataDir}`, '--to', url, '--replace']);
      expect(busy.exitCode).toBe(1);
      expect(busy.stderr).toMatch(new RegExp(`^error: postgres://postgres@\\S+ is in use by pasarela serve pid ${served.child.pid} on .*: stop it first\n$`));
    } finally {
      await stop(served);
    }
  });

  it('checks what it copied: a row missing or a balance changed is a mismatch', async () => {
    const inst = await install();
    const { schema, url } = await target();
    expect((await cli.run(['migrate', '--from', `sqlite:${inst.dataDir}`, '--to', url], { timeoutMs: 120_000 })).exitCode).toBe(0);
    const src = new Database(join(inst.dataDir, 'pasarela.db'), { readonly: true });
    const db = new Db(POSTGRES_URL, { schema, max: 1 });
    try {
      expect((await db.tx((c) => checkCopy(c, src))).mismatches).toEqual([]);
      const sum = (src.prepare('SELECT SUM(saldo_actual) AS s FROM celulares').get() as { s: number }).s;
      const saldo = (src.prepare('SELECT saldo_actual AS s FROM celulares WHERE id = ?').get(inst.lineas[1]) as { s: number }).s;
      const broken = await db
        .tx(async (c) => {
          await c.query("DELETE FROM mensajes WHERE msg_id = (SELECT msg_id FROM mensajes WHERE estado = 'leido' LIMIT 1)");
          await c.query('UPDATE celulares SET saldo_actual = saldo_actual + 1 WHERE id = $1', [inst.lineas[1]]);
          await c.query('UPDATE conteos_mensajes SET n = n + 1 WHERE ctid = (SELECT ctid FROM conteos_mensajes LIMIT 1)');
          await c.query('UPDATE conteos_recibidos_cuartos SET n = n + 1 WHERE ctid = (SELECT ctid FROM conteos_recibidos_cuartos LIMIT 1)');
          throw Object.assign(new Error('rolled back'), { check: await checkCopy(c, src) });
        })
        .catch((err: { check: { mismatches: string[] } }) => err.check);
      expect(broken.mismatches).toEqual([
        'mensajes: 361 rows in SQLite, 360 in PostgreSQL',
        `sum of saldo_celulares: ${sum} in SQLite, ${sum + 1} in PostgreSQL`,
        `celular ${inst.lineas[1]}'s balance is ${saldo + 1} but its ledger sums ${saldo} in PostgreSQL, unlike in SQLite`,
        'conteos_mensajes counts 361 messages, mensajes holds 360',
        'conteos_recibidos_cuartos counts 3 messages, recibidos holds 2',
      ]);
    } finally {
      src.close();
      await db.close();
    }
  });

  it('copies from a running serve (a snapshot, the source untouched) and from an older schema, queue counts taken from the rows', async () => {
    const inst = await install();
    const running = await startServeChild(inst.dataDir, []);
    try {
      const { url } = await target();
      const r = await cli.run(['migrate', '--from', `sqlite:${inst.dataDir}`, '--to', url, '--json'], { timeoutMs: 120_000 });
      expect(r.exitCode, r.stderr).toBe(0);
      expect(JSON.parse(r.stdout).serve_running).toMatch(new RegExp(`^pid ${running.child.pid} on `));
      expect((await api(running.url, 'GET', '/health')).status).toBe(200);
    } finally {
      await stop(running);
    }

    // An installation at schema 10 (before gateway servers) is brought up in the snapshot; its file stays at 10.
    const old = join(scratch(), 'old.db');
    const db = new Database(old);
    db.exec('CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)');
    for (const m of MIGRATIONS.filter((x) => x.version <= 10)) {
      db.exec(m.sql);
      db.prepare('INSERT INTO schema_migrations VALUES (?, ?, 0)').run(m.version, m.name);
    }
    db.prepare(
      "INSERT INTO clientes (nombre, email, estado, plan, saldo_global, key_hash, created_at, updated_at) VALUES ('V', 'v@x', 'activo', 'medido', 0, 'h', 1, 1)",
    ).run();
    // A queue count that drifted from the rows it counts: PostgreSQL's comes from the rows.
    db.prepare(
      `INSERT INTO celulares (cliente_id, numero, estado, max_envios_por_minuto, max_envios_por_hora, hora_inicio_permitido, hora_fin_permitido, key_hash, created_at, updated_at, pendientes)
       VALUES (1, '5215500000001', 'activo', 12, 500, '00:00', '23:59', 'k', 1, 1, 3)`,
    ).run();
    db.close();
    const { schema, url } = await target();
    const r = await cli.run(['migrate', '--from', `sqlite:${old}`, '--to', url, '--json']);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({
      sqlite_schema: { source: 10, copied: LATEST },
      tables: expect.arrayContaining([{ table: 'clientes', sqlite: 1, postgres: 1 }]),
      recounted: { pendientes_corregidos: 1 },
    });
    const pg = await openPg(schema);
    expect(await pg.db.one('SELECT pendientes FROM celulares WHERE id = 1')).toEqual({ pendientes: 0 });
    await pg.close();
    const after = new Database(old, { readonly: true });
    expect(after.prepare('SELECT MAX(version) AS v FROM schema_migrations').get()).toEqual({ v: 10 });
    after.close();
  });

  it('refuses, committing nothing, a text it would alter (bytes in SQLite that are not UTF-8); a real U+FFFD is copied as it is', async () => {
    const file = join(scratch(), 'texts.db');
    await openSqliteStore(file).close();
    const db = new Database(file);
    const cliente = db.prepare(
      "INSERT INTO clientes (nombre, email, estado, plan, saldo_global, key_hash, created_at, updated_at) VALUES (?, ?, 'activo', 'medido', 0, 'h', 1, 1)",
    );
    cliente.run('a\ufffdb', 'real@x');
    db.close();
    const ok = await target();
    const r = await cli.run(['migrate', '--from', `sqlite:${file}`, '--to', ok.url, '--json']);
    expect(r.exitCode, r.stderr).toBe(0);
    const pg = await openPg(ok.schema);
    expect(await pg.db.one("SELECT nombre FROM clientes WHERE email = 'real@x'")).toEqual({ nombre: 'a\ufffdb' });
    await pg.close();

    // A lone surrogate an older pasarela stored from a gateway's text: SQLite holds its CESU-8 bytes, which read back as three U+FFFD.
    const bad = new Database(file);
    const id = bad
      .prepare(
        "INSERT INTO clientes (nombre, email, estado, plan, saldo_global, key_hash, created_at, updated_at) VALUES (CAST(X'61EDA08062' AS TEXT), 'cesu@x', 'activo', 'medido', 0, 'h', 1, 1)",
      )
      .run().lastInsertRowid;
    bad.close();
    const refused = await target();
    const r2 = await cli.run(['migrate', '--from', `sqlite:${file}`, '--to', refused.url]);
    expect(r2.exitCode).toBe(1);
    expect(r2.stderr).toContain(`clientes.nombre of row ${id} is not valid UTF-8 in SQLite (hex 61eda08062…): the copy would change it`);
    const empty = await openPg(refused.schema);
    expect(await empty.db.one('SELECT COUNT(*)::int AS n FROM clientes')).toEqual({ n: 0 });
    await empty.close();
  });

  it('refuses, with one line and a non-zero exit, a source that is not there and a PostgreSQL out of reach', async () => {
    const missing = await cli.run(['migrate', '--from', 'sqlite:/nonexistent/pasarela', '--to', POSTGRES_URL]);
    expect(missing.exitCode).toBe(1);
    expect(missing.stderr).toBe('error: /nonexistent/pasarela does not exist: --from sqlite:PATH names a pasarela data directory or its pasarela.db\n');

    const empty = scratch();
    const noDb = await cli.run(['migrate', '--from', `sqlite:${empty}`, '--to', POSTGRES_URL]);
    expect(noDb.exitCode).toBe(1);
    expect(noDb.stderr).toBe(`error: ${empty} holds no pasarela.db: not a pasarela data directory (or nothing was ever stored there)\n`);

    const inst = await install();
    const down = await cli.run(['migrate', '--from', `sqlite:${inst.dataDir}`, '--to', 'postgres://postgres:s3cret@127.0.0.1:1/test']);
    expect(down.exitCode).toBe(8);
    expect(down.stderr).toBe('error: cannot connect to PostgreSQL at postgres://postgres@127.0.0.1:1/test: connect ECONNREFUSED 127.0.0.1:1\n');

    const usage = await cli.run(['migrate', '--from', `sqlite:${inst.dataDir}`, '--to', 'mysql://root:s3cret@127.0.0.1/x']);
    expect(usage.exitCode).toBe(2);
    expect(usage.stderr).not.toContain('s3cret');
  });
});
