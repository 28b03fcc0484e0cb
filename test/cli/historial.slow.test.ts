import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ManualClock } from '../../src/core/clock.js';
import type { MensajeEstado } from '../../src/core/ports.js';
import { api, seedClient, startTestServer, type Seeded, type TestServer } from '../helpers/server.js';
import { Cli, cliCommandLine, HAS_SCRIPT, tempDir } from './helpers.js';

/**
 * `pasarela historial` through the built CLI against a real server: every
 * format, --all across pages, filters passed through, csv quoting, exit codes.
 */

const H = 3_600_000;
const ESTADOS: MensajeEstado[] = ['enviado', 'entregado', 'leido', 'error', 'pendiente'];
const D1 = '525512345678';
const D2 = '14155552671';
const TRICKY = 'Hola, "amigo"\nsegunda línea, con coma';

interface Seed {
  msg_id: string;
  seq: number;
  celular_id: number;
  destinatario: string;
  estado: MensajeEstado;
  created_at: number;
}

let s: TestServer;
let cli: Cli;
let A: Seeded;
let a2: number;
const seeds: Seed[] = [];
let seq = 0;

async function seedMensaje(o: {
  celular_id: number;
  destinatario: string;
  estado: MensajeEstado;
  at: number;
  texto?: string;
  media?: Record<string, unknown>;
}) {
  const clock = s.clock as ManualClock;
  const store = s.core.store;
  seq += 1;
  const msg_id = `cli-${String(seq).padStart(4, '0')}`;
  clock.set(o.at);
  const texto = o.texto ?? `mensaje ${seq}`;
  const r = await store.acceptMensaje(
    {
      msg_id,
      cliente_id: A.clienteId,
      celular_id: o.celular_id,
      destinatario: o.destinatario,
      tipo: o.media ? 'imagen' : 'texto',
      modo: 'directo',
      texto,
      media: o.media ?? null,
      payload: { texto },
      expira_at: null,
    },
    { charge: false, maxPending: null },
    clock.now(),
  );
  expect(r.ok).toBe(true);
  const gid = `gw-${msg_id}`;
  if (o.estado === 'error') await store.failMensaje(msg_id, 'rechazado, "sin" WhatsApp', o.at + 1000);
  else if (o.estado !== 'pendiente') {
    await store.markSent(msg_id, gid, o.at + 1000);
    if (o.estado !== 'enviado') await store.receipt(o.celular_id, gid, 'entregado', o.at + 2000);
    if (o.estado === 'leido') await store.receipt(o.celular_id, gid, 'leido', o.at + 3000);
  }
  seeds.push({ msg_id, seq, celular_id: o.celular_id, destinatario: o.destinatario, estado: o.estado, created_at: o.at });
}

/** Newest first, like the server. */
function expected(f: (x: Seed) => boolean = () => true): string[] {
  return seeds
    .filter(f)
    .sort((x, y) => y.created_at - x.created_at || y.seq - x.seq)
    .map((x) => x.msg_id);
}

const ndjson = (stdout: string) =>
  stdout
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
const ids = (records: Array<Record<string, unknown>>) => records.map((m) => m.msg_id as string);

beforeAll(async () => {
  s = await startTestServer({ tz: 'UTC' });
  cli = new Cli(s.url);
  A = await seedClient(s);
  const r = await api(s.url, 'POST', '/api/celular_crear.php', {
    key: A.clientKey,
    json: { numero: `5255${String(Math.floor(Math.random() * 1e8)).padStart(8, '0')}` },
  });
  expect(r.status, r.text).toBe(201);
  a2 = r.body.celular_id;
  // 120 messages, one every 17 hours back from 2026-03-10, over both lines; then the newest has a tricky text.
  const end = Date.UTC(2026, 2, 10);
  for (let i = 0; i < 120; i += 1) {
    await seedMensaje({
      celular_id: i % 3 === 0 ? a2 : A.celularId,
      destinatario: i % 4 === 0 ? D2 : D1,
      estado: ESTADOS[i % 5]!,
      at: end - (120 - i) * 17 * H,
      ...(i === 7 ? { media: { url: 'https://example.com/x.png', mime: 'image/png' } } : {}),
    });
  }
  await seedMensaje({ celular_id: A.celularId, destinatario: D1, estado: 'enviado', at: end + H, texto: TRICKY });
});
afterAll(async () => {
  cli?.cleanup();
  await s?.stop();
});

describe('pasarela historial --all', () => {
  const all = ['historial', '--all', '--por-pagina', '50'];

  it.skipIf(!HAS_SCRIPT)('progress "page N/M" on stderr when it is a terminal; the data still goes to stdout', async () => {
    const dir = tempDir();
    const file = join(dir, 'out.ndjson');
    const line = `${cliCommandLine([...all, '--format', 'ndjson'])} > '${file}'`;
    const r = await cli.spawnTty(line, { env: { PASARELA_KEY: A.clientKey } });
    expect(r.exitCode).toBe(0);
    expect(String(r.stdout)).toMatch(/page 3\/3/);
    expect(ids(ndjson(readFileSync(file, 'utf8')))).toEqual(expected());
  });

  it.skipIf(!HAS_SCRIPT)('on a TTY the table has a header row', async () => {
    const r = await cli.spawnTty(cliCommandLine(['historial', '--por-pagina', '3']), { env: { PASARELA_KEY: A.clientKey, NO_COLOR: '1' } });
    expect(r.exitCode).toBe(0);
    const out = String(r.stdout);
    expect(out).toMatch(/FECHA.*MSG_ID.*ESTADO/);
    expect(out).toContain(seeds[120]!.msg_id);
    expect(out).toMatch(/page 1\/41, 121 total/);
  });
});
