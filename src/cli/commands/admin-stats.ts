import { Option, type Command } from 'commander';
import { API } from '../../core/api/api-routes.js';
import { RANGOS, type Estadisticas, type Rango } from '../../core/charts/charts.js';
import type { Ctx } from '../context.js';
import type { CtxOf } from '../main.js';
import { adminCall as call } from '../operator.js';
import { emit, printTable } from '../output.js';
import { positiveInt } from '../parse.js';

export interface StatsOptions {
  rango: Rango;
  cliente?: number;
  celular?: number;
}

const dash = (v: number | null) => (v === null ? '-' : v);

/** The chart's figures as a table: the bars with any send or attempt (`--json`: every bar). */
export async function runStats(o: StatsOptions, ctx: Ctx): Promise<void> {
  const b = await call<Estadisticas>(ctx, 'GET', API.adminEstadisticas, undefined, { rango: o.rango, cliente_id: o.cliente, celular_id: o.celular });
  emit(ctx, b, () => {
    const samples = b.muestras;
    const head = ['desde', 'pendiente', 'enviado', 'entregado', 'leido', 'error', 'total'];
    const rows = b.envios.map((e, i) => {
      const s = samples?.[i];
      const sends = [e.desde, e.pendiente, e.enviado, e.entregado, e.leido, e.error, e.total];
      return { busy: e.total > 0 || (s !== undefined && (s.entregas_ok + s.entregas_fallidas > 0 || (s.cola ?? 0) > 0)), sends, s };
    });
    const shown = rows.filter((r) => r.busy);
    printTable(
      ctx.term,
      samples ? [...head, 'cola', 'antiguo_s', 'webhooks_ok', 'webhooks_fallidas', 'p50_ms', 'p95_ms'] : head,
      shown.map((r) =>
        r.s
          ? [...r.sends, dash(r.s.cola), dash(r.s.mas_antiguo_s), r.s.entregas_ok, r.s.entregas_fallidas, dash(r.s.latencia_p50_ms), dash(r.s.latencia_p95_ms)]
          : r.sends,
      ),
    );
    const total = b.envios.reduce((a, e) => a + e.total, 0);
    ctx.term.out(`${total} messages created from ${b.desde} to ${b.hasta} (bars of ${b.paso_s} s; ${b.envios.length - shown.length} empty bars not shown)`);
  });
}

/** `admin stats`. */
export function registerAdminStats(admin: Command, ctxOf: CtxOf): void {
  admin
    .command('stats')
    .description("sends per minute, quarter hour or hour by estado, with the queue and webhook samples (the panel's charts as a table)")
    .addOption(new Option('--rango <rango>', 'the last hour (minutes), day (quarter hours) or week (hours)').choices(RANGOS).default('1h'))
    .option('--cliente <id>', "one client's sends", positiveInt)
    .option('--celular <id>', "one line's sends", positiveInt)
    .action((o: StatsOptions, cmd: Command) => runStats(o, ctxOf(cmd)));
}
