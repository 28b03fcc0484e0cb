import type { Command } from 'commander';
import { API } from '../../core/api/api-routes.js';
import { AUDIT_ACCIONES, detalleText } from '../../core/auth/audit.js';
import { LIST_LIMITS } from '../../core/api/limits.js';
import type { Ctx } from '../context.js';
import { dayOrInstant } from '../listing.js';
import type { CtxOf } from '../main.js';
import { adminCall as call } from '../operator.js';
import { emit, printTable } from '../output.js';
import { int, positiveInt } from '../parse.js';

export interface AuditOptions {
  cliente?: number;
  accion?: string;
  desde?: string;
  hasta?: string;
  antes?: number;
  limit: number;
  all?: boolean;
}

interface Registro {
  id: number;
  fecha: string;
  actor: string;
  accion: string;
  objeto_tipo: string;
  objeto_id: number | null;
  cliente_id: number | null;
  detalle: Record<string, unknown>;
}

interface Page {
  registros: Registro[];
  paginas: { antes: number | null; despues: number | null };
  zona_horaria: string;
}

/** One page, or with --all every older page to the end (following paginas.antes), newest first. */
export async function runAudit(o: AuditOptions, ctx: Ctx): Promise<void> {
  const query = { cliente_id: o.cliente, accion: o.accion, desde: o.desde, hasta: o.hasta, limit: o.limit };
  let b = await call<Page>(ctx, 'GET', API.adminAuditoria, undefined, { ...query, antes: o.antes });
  const registros = [...b.registros];
  while (o.all && b.paginas.antes !== null) {
    b = await call<Page>(ctx, 'GET', API.adminAuditoria, undefined, { ...query, antes: b.paginas.antes });
    registros.push(...b.registros);
  }
  const out = { ...b, registros, paginas: { antes: b.paginas.antes, despues: null } };
  emit(ctx, o.all ? out : { ...b }, () => {
    printTable(
      ctx.term,
      ['id', 'fecha', 'actor', 'accion', 'objeto', 'cliente', 'detalle'],
      registros.map((r) => [r.id, r.fecha, r.actor, r.accion, `${r.objeto_tipo} ${r.objeto_id ?? ''}`.trim(), r.cliente_id ?? '', detalleText(r.detalle)]),
    );
    if (!o.all && b.paginas.antes !== null) ctx.term.io.stderr.write(`older records: --antes ${b.paginas.antes}, or --all for every page\n`);
  });
}

/** `admin audit`. */
export function registerAdminAudit(admin: Command, ctxOf: CtxOf): void {
  admin
    .command('audit')
    .description('audit records (who changed what, when, before → after), newest first')
    .option('--cliente <id>', 'only this client', positiveInt)
    .option('--accion <accion>', `only this action: ${AUDIT_ACCIONES.join(', ')}`)
    .option('--desde <day|instant>', "from this day (YYYY-MM-DD, server's zone) or RFC 3339 instant (2026-11-26T10:00:00Z), included", dayOrInstant)
    .option('--hasta <day|instant>', 'up to this day (included) or RFC 3339 instant (excluded)', dayOrInstant)
    .option('--antes <id>', 'the page of records older than this id (printed under a page that has more)', positiveInt)
    .option('--limit <n>', 'records per page', int(1, LIST_LIMITS.auditoria.max), 50)
    .option('--all', 'every page to the oldest record (--limit per request)')
    .action((o: AuditOptions, cmd: Command) => runAudit(o, ctxOf(cmd)));
}
