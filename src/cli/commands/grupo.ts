import { Command, InvalidArgumentError } from 'commander';
import { API } from '../../core/api/api-routes.js';
import { GRUPO_LIMITS } from '../../core/api/limits.js';
import type { GrupoView } from '../../core/accounts/grupos.js';
import { confirmOrYes } from '../confirm.js';
import type { Ctx } from '../context.js';
import { duration } from '../duration.js';
import { usage } from '../exit-codes.js';
import type { FieldFlags } from '../field-errors.js';
import type { CtxOf } from '../main.js';
import { emit, printFields, printTable, type Cell } from '../output.js';
import { checkArg, text } from '../parse.js';

/** `pasarela grupo ...`: a client's pools of lines (docs/pools.md). */

const GRUPO_FIELDS: FieldFlags = { nombre: '--nombre', celulares: '--celulares', conmutacion_s: '--conmutacion', grupo: '<grupo>', id: '<grupo>' };

const nombre = text(1, GRUPO_LIMITS.nombre);

/** Line ids `1,2,3`. */
function ids(value: string): number[] {
  const parts = value.split(/[\s,]+/).filter(Boolean);
  if (parts.length === 0 || parts.some((p) => !/^[1-9][0-9]{0,14}$/.test(p))) throw new InvalidArgumentError('line ids separated by commas, like 3,7');
  return parts.map(Number);
}

/** A wait (`90`, `5m`, `1h`: seconds when bare) or `none` (never). */
function conmutacion(value: string): number | null {
  if (value === 'none' || value === 'null') return null;
  const s = /^[0-9]+$/.test(value.trim()) ? Number(value.trim()) : duration(value) / 1000;
  const [min, max] = GRUPO_LIMITS.conmutacion_s;
  if (!Number.isInteger(s) || s < min || s > max) throw new InvalidArgumentError(`whole seconds from ${min} to ${max} (or 5m, 1h), or none`);
  return s;
}

const waitCell = (s: number | null): Cell => (s === null ? 'never' : `${s} s`);

function grupoFields(g: GrupoView): Array<[string, Cell]> {
  return [
    ['id', g.id],
    ['nombre', g.nombre],
    ['celulares', g.celulares.join(', ')],
    ['conmutacion', waitCell(g.conmutacion_s)],
  ];
}

/** What a create or an edit did (stderr), then the pool as it is now. */
function printGrupo(ctx: Ctx, done: string, g: GrupoView): void {
  ctx.term.err(`${done} pool ${g.id} (${g.nombre}).`);
  printFields(ctx.term, grupoFields(g));
}

export async function runGrupoList(ctx: Ctx): Promise<void> {
  const b = await ctx.client().call<{ grupos: GrupoView[] }>('GET', API.grupos, { key: ctx.key() });
  emit(ctx, b, () =>
    printTable(
      ctx.term,
      ['id', 'nombre', 'celulares', 'conmutacion'],
      b.grupos.map((g) => [g.id, g.nombre, g.celulares.join(','), waitCell(g.conmutacion_s)]),
    ),
  );
}

export interface GrupoCrearOptions {
  nombre: string;
  celulares: number[];
  conmutacion?: number | null;
}

export async function runGrupoCrear(o: GrupoCrearOptions, ctx: Ctx): Promise<void> {
  checkArg('nombre', o.nombre, nombre);
  const b = await ctx.client().call<{ grupo: GrupoView }>('POST', API.grupoCrear, {
    key: ctx.key(),
    json: { nombre: o.nombre, celulares: o.celulares, ...(o.conmutacion !== undefined ? { conmutacion_s: o.conmutacion } : {}) },
    fields: GRUPO_FIELDS,
  });
  emit(ctx, b, () => printGrupo(ctx, 'Created', b.grupo));
}

export interface GrupoEditarOptions {
  grupo: string;
  nombre?: string;
  celulares?: number[];
  conmutacion?: number | null;
}

export async function runGrupoEditar(o: GrupoEditarOptions, ctx: Ctx): Promise<void> {
  const body: Record<string, unknown> = {};
  if (o.nombre !== undefined) body.nombre = o.nombre;
  if (o.celulares !== undefined) body.celulares = o.celulares;
  if (o.conmutacion !== undefined) body.conmutacion_s = o.conmutacion;
  if (Object.keys(body).length === 0) throw usage('nothing to change: give at least one of --nombre, --celulares, --conmutacion');
  const b = await ctx.client().call<{ grupo: GrupoView }>('POST', API.grupoEditar, { key: ctx.key(), json: { grupo: o.grupo, ...body }, fields: GRUPO_FIELDS });
  emit(ctx, b, () => printGrupo(ctx, 'Updated', b.grupo));
}

export interface GrupoEliminarOptions {
  grupo: string;
  yes?: boolean;
}

export async function runGrupoEliminar(o: GrupoEliminarOptions, ctx: Ctx): Promise<void> {
  const sure = await confirmOrYes(
    ctx,
    o.yes,
    async () => `Delete pool ${JSON.stringify(o.grupo)}? Its lines stay; sends naming it are refused.`,
    'nothing deleted',
  );
  if (!sure) return;
  const b = await ctx
    .client()
    .call<{ id: number; nombre: string }>('POST', API.grupoEliminar, { key: ctx.key(), json: { grupo: o.grupo }, fields: GRUPO_FIELDS });
  emit(ctx, b, () => ctx.term.err(`Deleted pool ${b.id} (${b.nombre}).`));
}

export function registerGrupo(program: Command, ctxOf: CtxOf): void {
  const g = program.command('grupo').description('pools of lines: a send names a pool and the service picks the line (client key)');
  g.command('list')
    .description("the client's pools")
    .action((_o, cmd: Command) => runGrupoList(ctxOf(cmd)));
  // Spanish names as the API's (grupo_crear.php), English aliases as celular's commands.
  g.command('crear <nombre>')
    .alias('create')
    .description('create a pool of your lines')
    .requiredOption('--celulares <ids>', 'line ids, separated by commas', ids)
    .option('--conmutacion <wait>', 'how long a line stays disconnected before its queued messages move to another line (90, 5m; none: never)', conmutacion)
    .action((n: string, o: Omit<GrupoCrearOptions, 'nombre'>, cmd: Command) => runGrupoCrear({ nombre: n, ...o }, ctxOf(cmd)));
  g.command('editar <grupo>')
    .alias('edit')
    .description('rename a pool, replace its lines, or change its failover wait')
    .option('--nombre <nombre>', `new name, up to ${GRUPO_LIMITS.nombre} characters`, nombre)
    .option('--celulares <ids>', 'the lines, replacing the old ones (ids separated by commas)', ids)
    .option('--conmutacion <wait>', 'failover wait (90, 5m) or none', conmutacion)
    .action((grupo: string, o: Omit<GrupoEditarOptions, 'grupo'>, cmd: Command) => runGrupoEditar({ grupo, ...o }, ctxOf(cmd)));
  g.command('eliminar <grupo>')
    .alias('delete')
    .description('delete a pool (its lines stay); asks first on a TTY')
    .option('-y, --yes', 'do not ask for confirmation')
    .action((grupo: string, o: { yes?: boolean }, cmd: Command) => runGrupoEliminar({ grupo, ...o }, ctxOf(cmd)));
}
