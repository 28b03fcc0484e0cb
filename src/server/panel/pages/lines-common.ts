import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { listTable, type Column } from '../listing.js';
import { AppError, ERRORS } from '../../../core/api/errors.js';
import type { Holders, MotorNodo } from '../../../core/engine/engine-holders.js';
import type { CelularEstado, SessionStatus } from '../../../core/ports/model.js';
import type { celularView } from '../../../core/api/views.js';
import { html, type Html } from '../html.js';
import { errorPage } from '../error-page.js';
import { sendFragment, sendPage } from '../layout.js';

/** What the account, lines and linking pages share: ids from the path, and how a line's state reads. */

/** A path's id: a positive whole number, else the panel's not-found page (as for any unknown page). */
export function pathId(raw: string | undefined): number {
  if (raw === undefined || !/^[1-9]\d{0,14}$/.test(raw)) throw new AppError('ROUTE_NOT_FOUND', 'there is no such page');
  return Number(raw);
}

export const lineUrl = (cid: number, id: number) => `/panel/c/${cid}/celulares/${id}`;

const STATUS_WORDS: Record<SessionStatus, [string, 'ok' | 'warn' | 'bad' | '']> = {
  connected: ['connected', 'ok'],
  connecting: ['connecting', 'warn'],
  need_scan: ['waiting for a scan', 'warn'],
  logged_out: ['logged out', 'bad'],
  disconnected: ['disconnected', 'bad'],
  unknown: ['unknown', ''],
};

/** The gateway session's status (the API's `status`), in words with its API name beside. */
export function statusBadge(status: string | null): Html {
  const s = (status ?? 'unknown') as SessionStatus;
  const [words, tone] = STATUS_WORDS[s] ?? [s, ''];
  return html`<span class="badge ${tone}" title="status ${s}">${words}</span>`;
}

const ESTADO_TONE: Record<CelularEstado, 'ok' | 'warn' | 'bad'> = { activo: 'ok', desconectado: 'bad', suspendido: 'warn' };

/** The line's estado (activo, desconectado, suspendido), as the API names it. */
export function estadoBadge(estado: string): Html {
  return html`<span class="badge ${ESTADO_TONE[estado as CelularEstado] ?? ''}">${estado}</span>`;
}

/** The engine node holding a line's session (`--gateway baileys`, D-137): its label, or why there is none. */
export function engineNodeCell(n: MotorNodo | null): Html {
  if (n === null) return html`<span class="empty">none holds its session now</span>`;
  const name = n.etiqueta ?? html`node <code>${n.id}</code>`;
  return n.presente ? html`${name}` : html`${name} <span class="badge bad">gone</span> <span class="hint">another node takes it</span>`;
}

type LineRow = Pick<ReturnType<typeof celularView>, 'id' | 'numero' | 'nombre_interno' | 'estado' | 'last_status' | 'saldo_actual' | 'gateway_instancia'> &
  Partial<Pick<ReturnType<typeof celularView>, 'frenado'>>;

/** A client's lines as a table (the account and the lines pages), or `empty` when there are none; with `holders`, each line's engine node. */
export function linesTable(cid: number, lines: readonly LineRow[], empty: Html, holders?: Holders): Html {
  if (lines.length === 0) return empty;
  const columns: Array<Column<LineRow>> = [
    { label: 'numero', cell: (l) => html`<a href="${lineUrl(cid, l.id)}">${l.numero}</a>` },
    { label: 'nombre_interno', cell: (l) => l.nombre_interno ?? '' },
    // A braked line (core/accounts/line-brake.ts) says so beside its estado: its queue waits for a resume.
    { label: 'estado', cell: (l) => html`${estadoBadge(l.estado)}${l.frenado ? html` <span class="badge bad">braked</span>` : ''}` },
    { label: 'session', cell: (l) => statusBadge(l.last_status) },
    { label: 'saldo', cls: 'num', cell: (l) => l.saldo_actual },
  ];
  if (holders) columns.push({ label: 'engine node', cell: (l) => engineNodeCell(holders.of(l.gateway_instancia)) });
  // Stacked as cards on a phone (listing.ts), so the estado and the saldo are never cut off.
  return listTable(lines, columns);
}

/** A line's own pages and their parts: `/c/:cid/celulares/:id` and below. */
const LINE_PATH = /^\/panel\/c\/([1-9]\d{0,14})\/celulares\/([1-9]\d{0,14})(?:[/?]|$)/;

/**
 * The error handler of the line pages' plugins: a line that is no longer
 * there (deleted while its page was open) says so, as the page, as a form's
 * answer, or in place of a polled part, which then marks the page (panel.js
 * disables its forms: `data-gone`) and stops polling. Any other error is the
 * panel's error page.
 */
export function lineGoneHandler(app: FastifyInstance): void {
  app.setErrorHandler((err: FastifyError, req: FastifyRequest, reply: FastifyReply) => {
    const m = LINE_PATH.exec(req.url);
    if (!(err instanceof AppError) || err.row !== ERRORS.CELULAR_NOT_FOUND || !m) return errorPage(err, req, reply);
    const cid = Number(m[1]);
    const words = `This line was deleted: line ${m[2]} is no longer among client ${cid}'s lines, so nothing on its page can be sent.`;
    if (req.headers['hx-request'] === 'true') return sendFragment(reply, html`<span class="badge bad" data-gone="${words}">This line was deleted</span>`);
    return sendPage(
      req,
      reply,
      { title: 'This line was deleted', clienteId: cid, current: 'celulares' },
      html`<p class="error" role="alert">${words}</p>
        <p class="actions"><a class="button" href="/panel/c/${cid}/celulares">Back to the lines</a></p>`,
      404,
    );
  });
}
