// Figure 20: the scheduled-send scan (issue 40, D-163, D-180). bench/schedule-scan.mjs in a child of its own
// (it measures its own process's CPU): the queue worker's look, claim and record per message sent, with
// 1,000,000 scheduled messages waiting against an empty store, each store in a process of its own, their rounds
// alternating; and
// against a store holding 1,000,000 messages already sent (the same history depth, no backlog), shown beside it.
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { HERE } from '../lib/options.mjs';
import { log } from '../lib/proc.mjs';
import { cpuPer, results } from '../lib/results.mjs';

export async function figureScheduleScan() {
  const name = '20. scheduled-send scan, 1M scheduled vs empty store, per message';
  const { stdout, stderr } = await promisify(execFile)(process.execPath, [join(HERE, 'schedule-scan.mjs')], { maxBuffer: 1 << 20, timeout: 15 * 60_000 });
  for (const line of stdout.trim().split('\n').slice(0, -1)) log(`  ${line}`);
  if (stderr.trim()) log(`  ${stderr.trim()}`);
  const { sqlite: r } = JSON.parse(stdout.trim().split('\n').at(-1));
  const us = (x) => `${x.toFixed(0)} µs`;
  results.push({
    figure: name,
    measured: `${us(r.backlog_us)}/msg with 1,000,000 scheduled waiting (the look ${us(r.look_backlog_us)})`,
    baseline:
      `${us(r.empty_us)}/msg on an empty store (the look ${us(r.look_empty_us)}); ` +
      `${us(r.history_us)}/msg with 1,000,000 sent instead (${r.ratio_to_history.toFixed(2)}: the backlog's own cost)`,
    ratio: r.ratio,
    target: '>= 0.90',
    met: r.ratio >= 0.9,
    cpu: cpuPer(r.backlog_us / 1000),
    detail: r,
  });
}
