import { Option, type Command } from 'commander';
import type { Ctx } from './context.js';
import { CliError } from './exit-codes.js';
import { EXIT } from '../shared/exit-codes.js';
import type { FieldFlags } from './field-errors.js';

/** Operator credential options, on the `admin` and `sim` groups. */
export function withOperatorOptions(cmd: Command): Command {
  return cmd
    .addOption(
      new Option(
        '--admin-token <token>',
        'operator token (env PASARELA_ADMIN_TOKEN; else the profile; else <data-dir>/admin-token, of the default data directory only for a server on this machine)',
      ),
    )
    .addOption(new Option('--data-dir <dir>', 'data directory of a `serve` on this machine, to read its admin-token file (read for any --url)'));
}

/**
 * A call with the operator token. A refusal (401) says where the token came
 * from: a stale admin-token file of another server is the usual cause.
 */
export async function operatorCall<T>(
  ctx: Ctx,
  method: 'GET' | 'POST' | 'PATCH',
  path: string,
  json?: Record<string, unknown>,
  query?: Record<string, string | number | undefined>,
  fields?: FieldFlags,
): Promise<T> {
  const cred = ctx.adminCredential();
  try {
    return await ctx.client().call<T>(method, path, { key: cred.token, json, query, fields });
  } catch (err) {
    if (err instanceof CliError && err.exitCode === EXIT.AUTH) throw new CliError(`${err.message} (${cred.from})`, EXIT.AUTH, err.body);
    throw err;
  }
}

/** API fields of the operator's requests and the flag or argument that sets each, to explain a 400. */
export const ADMIN_FIELDS = {
  nombre: '--nombre',
  email: '--email',
  plan: '--plan',
  estado: '--estado',
  max_celulares: '--max-celulares',
  saldo: '--saldo',
  cliente_id: '--cliente',
  celular_id: '--celular',
  monto: '--monto',
  motivo: '--motivo',
  token: '[token]',
  url: '--gateway-url',
  key: '--gateway-key',
  max_lineas: '--max-lineas',
  servidor: '<gateway>',
  limit: '--limit',
} as const;

/** An operator call of an `admin` command: its 400s are explained in the admin flags' terms. */
export const adminCall = <T>(
  ctx: Ctx,
  method: 'GET' | 'POST' | 'PATCH',
  path: string,
  json?: Record<string, unknown>,
  query?: Record<string, string | number | undefined>,
) => operatorCall<T>(ctx, method, path, json, query, ADMIN_FIELDS);
