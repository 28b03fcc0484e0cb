import { createHash, randomBytes } from 'node:crypto';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEvolutionFake } from '../fakes/evolution.js';
import { startWahaFake } from '../fakes/waha.js';
import { until } from '../helpers/poll.js';
import { api, tempDir, type ApiResponse } from '../helpers/server.js';
import { killAllServeChildren, startServeChild, stop, type ServeChild } from '../helpers/serve-child.js';
import { numeroNuevo } from '../server/send-helpers.js';

/**
 * Media to a real gateway's API without holding the file (issue 23 item 5,
 * adversary finding N3): several lines each send a 48 MB document at once
 * through `pasarela serve` (the built binary) to the Evolution fake and to the
 * WAHA fake. Each fake decodes the base64 it got and keeps its SHA-256, which
 * must be the file's; the serve process's peak RSS (VmHWM, reset when the
 * sends are let go) must grow by a few MB per send, less than one file for
 * all of them, where a send that builds its body in memory holds the file,
 * its base64 and the JSON text (about 4.5 times the file) per line.
 */

const MB = 1024 * 1024;
const LINES = 4;
const FILE_BYTES = 48 * MB;
const DOC = '/api/mensaje_enviar_documento_base64.php';

const root = tempDir('pasarela-gwmem-');
afterAll(() => {
  killAllServeChildren();
  rmSync(root, { recursive: true, force: true });
});

async function ok(p: Promise<ApiResponse>, status = 200): Promise<any> {
  const r = await p;
  expect(r.status, r.text).toBe(status);
  return r.body;
}

function procKb(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!m) throw new Error(`no ${field} in /proc/${pid}/status`);
  return Number(m[1]);
}

const pdf = (size: number) => Buffer.concat([Buffer.from('%PDF-1.4\n', 'latin1'), randomBytes(size - 9)]);
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

/** What the test needs of either fake. */
interface Gateway {
  url: string;
  apiKey: string;
  scan(instancia: string): Promise<unknown>;
  settle(): Promise<void>;
  /** SHA-256 and size of each base64 document received so far. */
  documents(): Array<{ sha256?: string; size?: number }>;
  close(): Promise<void>;
}

const GATEWAYS: Array<[string, () => Promise<Gateway>]> = [
  [
    'evolution',
    async () => {
      const f = await startEvolutionFake({ keepMedia: false });
      return {
        ...f,
        scan: (i) => f.scan(i),
        settle: () => f.settle(),
        close: () => f.close(),
        documents: () => f.messages.filter((m) => m.route === 'sendMedia'),
      };
    },
  ],
  [
    'waha',
    async () => {
      const f = await startWahaFake({ keepMedia: false });
      return { ...f, scan: (i) => f.scan(i), settle: () => f.settle(), close: () => f.close(), documents: () => f.sends.filter((m) => m.route === 'sendFile') };
    },
  ],
];

describe.each(GATEWAYS)('48 MB documents from several lines at once to %s', (name, make) => {
  let gw: Gateway;
  let s: ServeChild;
  let clientKey: string;
  const lines: Array<{ id: number; key: string }> = [];

  beforeAll(async () => {
    gw = await make();
    const dataDir = join(root, name);
    s = await startServeChild(
      dataDir,
      [
        ...['--gateway', name, '--gateway-url', gw.url, '--gateway-key', gw.apiKey, '--allow-private-urls'],
        ...['--queue-gap-ms', '0-0', '--tz', 'UTC', '--health-interval', '0'],
      ],
      300_000,
    );
    const admin = readFileSync(join(dataDir, 'admin-token'), 'utf8').trim();
    const cli = await ok(
      api(s.url, 'POST', '/admin/clientes', { key: admin, json: { nombre: 'GwMem', email: `gwmem-${name}@example.com`, saldo: 1000 } }),
      201,
    );
    clientKey = cli.api_key as string;
    for (let i = 0; i < LINES; i++) {
      const cel = await ok(api(s.url, 'POST', '/api/celular_crear.php', { key: clientKey, json: { numero: numeroNuevo() } }), 201);
      const id = cel.celular_id as number;
      await until(
        async () => {
          const qr = await api(s.url, 'POST', `/api/celular_qr.php?id=${id}`, { key: clientKey });
          return qr.status === 200 && qr.body.qr !== '';
        },
        { what: 'a QR' },
      );
      await gw.scan(`pasarela-${id}`);
      lines.push({ id, key: cel.api_key as string });
    }
    await gw.settle();
    for (const l of lines) {
      await until(async () => (await ok(api(s.url, 'GET', `/api/celular.php?id=${l.id}`, { key: clientKey }))).celular.estado === 'activo', {
        what: 'line activo',
      });
    }
  }, 120_000);

  afterAll(async () => {
    if (s) await stop(s);
    await gw?.close();
  });

  /** Sending hours for every line: `open` the whole day, or none of the next hour (the queue holds its messages). */
  async function hours(open: boolean): Promise<void> {
    const h = new Date().getUTCHours();
    const closed = { hora_inicio_permitido: `${String((h + 2) % 24).padStart(2, '0')}:00`, hora_fin_permitido: `${String((h + 3) % 24).padStart(2, '0')}:00` };
    const json = open ? { hora_inicio_permitido: '00:00', hora_fin_permitido: '23:59' } : closed;
    for (const l of lines) await ok(api(s.url, 'POST', `/api/celular_editar.php?id=${l.id}`, { key: clientKey, json }));
  }

  it('each arrives byte-identical (SHA-256 of the decoded base64), and peak RSS grows by a few MB per send, less than one file in all', async () => {
    await hours(false);
    const expected: string[] = [];
    for (const l of lines) {
      const file = pdf(FILE_BYTES);
      expected.push(sha(file));
      const body = { destinatario: numeroNuevo(), filename: 'grande.pdf', documentBase64: file.toString('base64') };
      await ok(api(s.url, 'POST', DOC, { key: l.key, json: body }));
    }
    expect(gw.documents()).toHaveLength(0);

    const pid = s.child.pid!;
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
    const base = procKb(pid, 'VmRSS');
    await hours(true);
    await until(() => gw.documents().length === LINES, { what: `${LINES} documents at the gateway`, timeoutMs: 120_000 });
    const growth = (procKb(pid, 'VmHWM') - base) * 1024;
    console.log(`${name}: peak RSS growth for ${LINES} x ${FILE_BYTES / MB} MB sends: ${(growth / MB).toFixed(1)} MB`);

    expect(
      gw
        .documents()
        .map((d) => d.sha256)
        .sort(),
    ).toEqual(expected.sort());
    expect(gw.documents().every((d) => d.size === FILE_BYTES)).toBe(true);
    // A few MB per send, two thirds of one file for all four. Measured 8-20 MB under a load of 12 (about 8 MB
    // with 1 MB files too: the V8 heaps' own growth); a body built in memory (file, base64, JSON text) took +900 MB.
    expect(growth).toBeLessThan(LINES * 8 * MB);
  }, 300_000);
});
