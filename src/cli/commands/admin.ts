import type { Command } from 'commander';
import type { CtxOf } from '../main.js';
import { withOperatorOptions } from '../operator.js';
import { registerAdminAudit } from './admin-audit.js';
import { registerAdminBackup } from './admin-backup.js';
import { registerAdminCelulares } from './admin-celulares.js';
import { registerAdminClients } from './admin-clients.js';
import { registerAdminGateways } from './admin-gateways.js';
import { registerAdminStats } from './admin-stats.js';

/** `pasarela admin ...`: the operator's commands (operator token); each group's flags and run functions are in admin-*.ts. */
export function registerAdmin(program: Command, ctxOf: CtxOf): void {
  const admin = withOperatorOptions(program.command('admin').description('operator commands: clients, plans, balances, tokens, gateway servers, backups'));
  registerAdminClients(admin, ctxOf);
  registerAdminCelulares(admin, ctxOf);
  registerAdminGateways(admin, ctxOf);
  registerAdminAudit(admin, ctxOf);
  registerAdminBackup(admin, ctxOf);
  registerAdminStats(admin, ctxOf);
}
