// HTTP helpers of the figures: one request, a client with linked lines, the
// receiver's progress, the bodies of a send.
import { request } from 'undici';
import { NotApplicable, sleep } from './proc.mjs';

/** Paths of the server's OpenAPI document: figures check their endpoints exist. */
export async function needPaths(s, ...paths) {
  const doc = await call(s.url, 'GET', '/openapi.json');
  const missing = paths.filter((p) => !doc?.paths?.[p]);
  if (missing.length > 0) throw new NotApplicable(`no ${missing.join(', ')} on this server`);
}

export async function call(base, method, path, key, json) {
  const res = await request(base + path, {
    method,
    headers: { ...(key ? { authorization: `Bearer ${key}` } : {}), ...(json === undefined ? {} : { 'content-type': 'application/json' }) },
    body: json === undefined ? undefined : JSON.stringify(json),
  });
  const text = await res.body.text();
  let body;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  if (res.statusCode >= 300) throw new Error(`${method} ${path}: ${res.statusCode} ${text.slice(0, 300)}`);
  return body;
}

/** Runs `jobs` with at most `n` at once. */
export async function inParallel(n, jobs) {
  let next = 0;
  const out = new Array(jobs.length);
  await Promise.all(
    Array.from({ length: Math.min(n, jobs.length) }, async () => {
      while (next < jobs.length) {
        const i = next++;
        out[i] = await jobs[i]();
      }
    }),
  );
  return out;
}

let numeroSeq = 0;
/** The next of a sequence that makes every celular's numero of the run different. */
export function nextNumeroSeq() {
  numeroSeq += 1;
  return numeroSeq;
}

/** A client with a large balance and `lines` linked celulares with the highest caps. */
export async function setupClient(s, lines) {
  const cli = await call(s.url, 'POST', '/admin/clientes', s.admin, { nombre: 'Bench', email: 'bench@example.com', saldo: 1_000_000_000 });
  const key = cli.api_key;
  const ids = await inParallel(
    8,
    Array.from({ length: lines }, () => async () => {
      const numero = `52155${String(10_000_000 + nextNumeroSeq() * 7 + Math.floor(Math.random() * 7))}`;
      const c = await call(s.url, 'POST', '/api/celular_crear.php', key, { numero });
      const id = c.celular_id;
      await call(s.url, 'POST', `/api/celular_qr.php?id=${id}`, key);
      await call(s.url, 'POST', '/admin/sim/scan', s.admin, { celular_id: id });
      await call(s.url, 'POST', `/api/celular_editar.php?id=${id}`, key, {
        max_envios_por_minuto: 1000,
        max_envios_por_hora: 50_000,
        max_envios_por_dia: null,
      });
      return id;
    }),
  );
  await waitActive(s, key, lines);
  return { key, clienteId: cli.cliente.id, lines: ids };
}

export async function waitActive(s, key, lines) {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const list = await call(s.url, 'GET', '/api/celulares.php', key);
    if (list.celulares.filter((c) => c.estado === 'activo').length >= lines) return;
    if (Date.now() > deadline) throw new Error('the lines did not become activo');
    await sleep(50);
  }
}

/** A valid Mexico City number, different for every `n` (duplicate protection is per recipient and content). */
export const destinatario = (n) => `5255${String(10_000_000 + (n % 89_999_999))}`;
export const textBody = (lines, w, n, directo) => ({
  celular_id: lines[w % lines.length],
  destinatario: destinatario(n),
  mensaje: `Hola, su pedido ${n} está en camino. Gracias por su compra.`,
  ...(directo ? { directo: 1 } : {}),
});

/**
 * Polls the receiver's stats until `done` says so; stalled when it saw no new
 * request for 20 s, or the server died.
 */
export async function waitReceiver(receiver, s, done) {
  let last = -1;
  let lastChange = Date.now();
  for (;;) {
    const st = await call(receiver.url, 'GET', '/_stats');
    if (done(st)) return { st, stalled: false };
    if (st.requests !== last) {
      last = st.requests;
      lastChange = Date.now();
    }
    if (Date.now() - lastChange > 20_000 || !s.alive()) return { st, stalled: true };
    await sleep(100);
  }
}
