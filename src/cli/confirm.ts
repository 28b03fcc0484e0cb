import type { Ctx } from './context.js';
import { usage } from './exit-codes.js';

/**
 * Asks before something that cannot be taken back (on a TTY), or requires
 * --yes (off one: exit 2). False when the person says no, after saying on
 * stderr that nothing happened.
 */
export async function confirmOrYes(
  ctx: Ctx,
  yes: boolean | undefined,
  message: () => Promise<string> | string,
  declined = 'nothing changed',
): Promise<boolean> {
  if (yes) return true;
  if (!ctx.term.canPrompt) throw usage('--yes required when not running interactively');
  const text = await message();
  const { confirm } = await import('@inquirer/prompts');
  if (await confirm({ message: text, default: false })) return true;
  ctx.term.err(declined);
  return false;
}
