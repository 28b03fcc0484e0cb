import type { Command } from 'commander';
import { API } from '../../core/api/api-routes.js';
import type { Ctx } from '../context.js';
import type { CtxOf } from '../main.js';
import { operatorCall, withOperatorOptions } from '../operator.js';
import { emit, printTable } from '../output.js';
import { checkArg, idArg, phone, text } from '../parse.js';

/** API fields of the simulator's requests and the flag or argument that sets each, to explain a 400. */
const SIM_FIELDS = { celular_id: '<celular_id>', de: '--from', texto: '--text', numero: '[numero]', motivo: '--motivo', qr: '--qr', codigo: '--code' } as const;

const call = <T>(ctx: Ctx, method: 'GET' | 'POST', path: string, json?: Record<string, unknown>) =>
  operatorCall<T>(ctx, method, path, json, undefined, SIM_FIELDS);

export interface SimScanOptions {
  celularId: string;
  qr?: string;
  code?: string;
}

export async function runSimScan(o: SimScanOptions, ctx: Ctx): Promise<void> {
  const b = await call<{ celular_id: number; status: string }>(ctx, 'POST', API.simScan, {
    celular_id: idArg(o.celularId),
    ...(o.qr ? { qr: o.qr } : {}),
    ...(o.code ? { codigo: o.code } : {}),
  });
  emit(ctx, b, () => ctx.term.err(`celular ${b.celular_id}: ${b.status}`));
}

export interface SimLogoutOptions {
  celularId: string;
}

export async function runSimLogout(o: SimLogoutOptions, ctx: Ctx): Promise<void> {
  const b = await call<{ celular_id: number; status: string }>(ctx, 'POST', API.simLogout, { celular_id: idArg(o.celularId) });
  emit(ctx, b, () => ctx.term.err(`celular ${b.celular_id}: ${b.status}`));
}

export interface SimReceiveOptions {
  celularId: string;
  from: string;
  text: string;
}

export async function runSimReceive(o: SimReceiveOptions, ctx: Ctx): Promise<void> {
  const b = await call<{ celular_id: number; de: string; gateway_msg_id: string }>(ctx, 'POST', API.simReceive, {
    celular_id: idArg(o.celularId),
    de: o.from,
    texto: o.text,
  });
  emit(ctx, b, () => ctx.term.err(`celular ${b.celular_id} received a message from ${b.de} (${b.gateway_msg_id})`));
}

export interface SimFailOptions {
  /** The number whose sends fail; absent: list the rules. */
  numero?: string;
  motivo?: string;
  clear?: boolean;
}

export async function runSimFail(o: SimFailOptions, ctx: Ctx): Promise<void> {
  const { numero } = o;
  if (!numero) {
    const b = await call<{ reglas: Array<{ numero: string; motivo: string }> }>(ctx, 'GET', API.simFail);
    emit(ctx, b, () =>
      printTable(
        ctx.term,
        ['numero', 'motivo'],
        b.reglas.map((r) => [r.numero, r.motivo]),
      ),
    );
    return;
  }
  checkArg('numero', numero, phone());
  const b = await call<{ numero: string; motivo: string; activo: boolean }>(ctx, 'POST', API.simFail, {
    numero,
    activo: !o.clear,
    ...(o.motivo ? { motivo: o.motivo } : {}),
  });
  emit(ctx, b, () => ctx.term.err(b.activo ? `sends to ${b.numero} will fail: ${b.motivo}` : `sends to ${b.numero} will go through again`));
}

/** `pasarela sim ...`: play the phone and the network of the simulator (operator token). */
export function registerSim(program: Command, ctxOf: CtxOf): void {
  const sim = withOperatorOptions(program.command('sim').description('simulated network: scan a QR, log out, receive, make sends fail'));

  sim
    .command('scan <celular_id>')
    .description('the phone scans the QR showing now (or types the pairing code); the line becomes connected')
    .option('--qr <content>', 'scan this QR content (refused if it is no longer the current one)')
    .option('--code <codigo>', 'type this pairing code instead of scanning (refused unless it is the one issued)')
    .action((celularId: string, o: { qr?: string; code?: string }, cmd: Command) => runSimScan({ celularId, ...o }, ctxOf(cmd)));

  sim
    .command('logout <celular_id>')
    .description('the phone removes the linked device; the line becomes logged_out')
    .action((celularId: string, _o, cmd: Command) => runSimLogout({ celularId }, ctxOf(cmd)));

  sim
    .command('receive <celular_id>')
    .description('someone sends the line a text message')
    .requiredOption('--from <numero>', 'sender number', phone())
    .requiredOption('--text <texto>', 'message text (up to 4096 characters)', text(1, 4096))
    .action((celularId: string, o: { from: string; text: string }, cmd: Command) => runSimReceive({ celularId, ...o }, ctxOf(cmd)));

  sim
    .command('fail [numero]')
    .description('make every later send to NUMERO fail permanently; --clear undoes it; no NUMERO lists the rules')
    .option('--motivo <text>', 'failure reason the gateway reports (up to 200 characters)', text(0, 200))
    .option('--clear', 'remove the rule for NUMERO')
    .action((numero: string | undefined, o: { motivo?: string; clear?: boolean }, cmd: Command) => runSimFail({ numero, ...o }, ctxOf(cmd)));
}
