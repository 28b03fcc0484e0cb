import type { Command } from 'commander';
import { API } from '../../core/api-routes.js';
import type { Ctx } from '../context.js';
import type { CtxOf } from '../main.js';
import { adminCall as call } from '../operator.js';
import { emit, printTable } from '../output.js';
import { int, positiveInt } from '../parse.js';

export interface AuditOptions {
  cliente?: number;
  limit: number;
}

export async function runAudit(o: AuditOptions, ctx: Ctx): Promise<void> {
  const b = await call<{
    registros: Array<{ id: number; fecha: string; actor: string; accion: string; objeto_tipo: string; objeto_id: number | null; detalle: unknown }>;
  }>(ctx, 'GET', API.adminAuditoria, undefined, { cliente_id: o.cliente, limit: o.limit });
  emit(ctx, b, () =>
    printTable(
      ctx.term,
      ['id', 'fecha', 'actor', 'accion', 'objeto', 'detalle'],
      b.registros.map((r) => [r.id, r.fecha, r.actor, r.accion, `${r.objeto_tipo} ${r.objeto_id ?? ''}`, JSON.stringify(r.detalle)]),
    ),
  );
}

/** `admin audit`. */
export function registerAdminAudit(admin: Command, ctxOf: CtxOf): void {
  admin
    .command('audit')
    .description('recent audit records, newest first')
    .option('--cliente <id>', 'only this client', positiveInt)
    .option('--limit <n>', 'how many', int(1, 1000), 50)
    .action((o: AuditOptions, cmd: Command) => runAudit(o, ctxOf(cmd)));
}
