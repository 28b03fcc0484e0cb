import { InvalidArgumentError, type Command } from 'commander';
import { API, pathTo } from '../../core/api/api-routes.js';
import { confirmOrYes } from '../confirm.js';
import type { Ctx } from '../context.js';
import type { CtxOf } from '../main.js';
import { adminCall as call } from '../operator.js';
import { emit, printFields, printSecret } from '../output.js';
import { resumeSaid, type ResumeAnswer } from './celular.js';
import { checkArg, idArg, serverName, token } from '../parse.js';

/** A legacy token: 16 to 128 printable ASCII characters, not shaped like a WA_/WAC_ key. */
function legacyToken(value: string): string {
  token(16, 128)(value);
  if (/^(WAC|WA)_[1-9][0-9]{0,15}_[A-Za-z0-9_-]{16,128}$/.test(value)) throw new InvalidArgumentError('may not have the form of a WA_ or WAC_ key');
  return value;
}

export interface LegacyTokenOptions {
  celularId: string;
  /** The token to set; absent: the server makes one. */
  token?: string;
}

export async function runLegacyToken(o: LegacyTokenOptions, ctx: Ctx): Promise<void> {
  const n = idArg(o.celularId);
  const given = o.token;
  if (given !== undefined) checkArg('token', given, legacyToken);
  const b = await call<{ celular_id: number; token_legacy: string; generado: boolean }>(
    ctx,
    'POST',
    pathTo(API.adminCelularTokenLegacy, { id: n }),
    given ? { token: given } : {},
  );
  emit(ctx, b, () => {
    if (b.generado) printSecret(ctx.term, 'Legacy token', b.token_legacy);
    else ctx.term.err(`Legacy token of celular ${b.celular_id} set.`);
  });
}

export interface CelularRotateKeyOptions {
  celularId: string;
  yes?: boolean;
}

export async function runCelularRotateKey(o: CelularRotateKeyOptions, ctx: Ctx): Promise<void> {
  const n = idArg(o.celularId, 'celular_id');
  if (!(await confirmOrYes(ctx, o.yes, () => `Rotate the key of celular ${n}? Its current key stops working at once, for every script that uses it.`))) return;
  const b = await call<{ celular_id: number; api_key: string }>(ctx, 'POST', pathTo(API.adminCelularRotarKey, { id: n }));
  emit(ctx, b, () => printSecret(ctx.term, 'Celular key', b.api_key));
}

export interface CelularMoveOptions {
  celularId: string;
  gateway: string;
  yes?: boolean;
}

export async function runCelularMove(o: CelularMoveOptions, ctx: Ctx): Promise<void> {
  const n = idArg(o.celularId);
  checkArg('gateway', o.gateway, serverName);
  // A person at a terminal is asked, since relinking needs the phone in hand; a script goes on as it always did (no --yes needed off a TTY).
  if (!o.yes && ctx.term.canPrompt) {
    const sure = await confirmOrYes(
      ctx,
      false,
      () => `Move celular ${n} to gateway server "${o.gateway}"? A linked line is logged out and must be linked again with its phone.`,
    );
    if (!sure) return;
  }
  const b = await call<{
    celular_id: number;
    servidor: string;
    servidor_anterior: string | null;
    estado: string;
    instancia_anterior_eliminada: boolean;
    vincular: string;
    aviso?: string;
  }>(ctx, 'POST', pathTo(API.adminCelularServidor, { id: n }), { servidor: o.gateway });
  emit(ctx, b, () => {
    printFields(ctx.term, [
      ['celular', b.celular_id],
      ['servidor', b.servidor],
      ['servidor_anterior', b.servidor_anterior],
      ['estado', b.estado],
      ['instancia_anterior_eliminada', b.instancia_anterior_eliminada],
    ]);
    if (b.aviso) ctx.term.err(`warning: ${b.aviso}`);
    ctx.term.err(`Link it again: pasarela celular qr ${b.celular_id}`);
  });
}

/** `admin celular resume ID`: lifts any line's brake with the operator token. */
export async function runAdminCelularResume(o: { celularId: string }, ctx: Ctx): Promise<void> {
  const b = await call<ResumeAnswer>(ctx, 'POST', pathTo(API.adminCelularReanudar, { id: idArg(o.celularId) }));
  emit(ctx, b, () => ctx.term.err(resumeSaid(b)));
}

/** `admin celular ...`: the operator's actions on one line. */
export function registerAdminCelulares(admin: Command, ctxOf: CtxOf): void {
  const celular = admin.command('celular').description('operator actions on celulares');
  celular
    .command('legacy-token <celular_id> [token]')
    .description('set the legacy token of a celular, or make and print one')
    .action((celularId: string, token: string | undefined, _o, cmd: Command) => runLegacyToken({ celularId, token }, ctxOf(cmd)));
  celular
    .command('rotate-key <celular_id>')
    .description('issue a new celular key; the old one stops working at once (asks first on a TTY)')
    .option('-y, --yes', 'do not ask for confirmation')
    .action((celularId: string, o: { yes?: boolean }, cmd: Command) => runCelularRotateKey({ celularId, ...o }, ctxOf(cmd)));
  celular
    .command('move <celular_id> <gateway>')
    .description('move a celular to another gateway server; it is logged out there and must be linked again (asks first on a TTY)')
    .option('-y, --yes', 'do not ask for confirmation')
    .action((celularId: string, gateway: string, o: { yes?: boolean }, cmd: Command) => runCelularMove({ celularId, gateway, ...o }, ctxOf(cmd)));
  celular
    .command('resume <celular_id>')
    .alias('reanudar')
    .description('resume a braked line: its queue goes on and its health window starts again')
    .action((celularId: string, _o, cmd: Command) => runAdminCelularResume({ celularId }, ctxOf(cmd)));
}
