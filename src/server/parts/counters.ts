import type { Clock } from '../../core/time/clock.js';
import { MemoryCounters } from '../../core/nodes/counters-memory.js';
import type { Counters } from '../../core/ports/counters.js';
import { FailoverCounters } from '../../counters/failover.js';
import { RedisCounters, redactUrl } from '../../counters/redis.js';
import type { ServeConfig } from '../config.js';

import type { Log, Part } from './part.js';

/** The counters `--counters` names: this process's memory, or Redis with the memory as its fallback while Redis does not answer. */
export function countersPart(opts: ServeConfig, clock: Clock, log: Log): Part<{ counters: Counters; source: string }> {
  return {
    name: 'counters',
    start: async () => {
      const memory = new MemoryCounters(clock);
      if (!opts.counters || opts.counters === 'memory') return { value: { counters: memory, source: 'memory (this process)' }, base: true };
      const primary = new RedisCounters({ url: opts.counters, prefix: opts.countersPrefix, clock, commandTimeoutMs: opts.countersTimeoutMs });
      // An outage at start is logged once, below ("at start"): the failover's own line for it is left out.
      let starting = true;
      const failoverLog: Log = {
        error: (o, m) => log.error(o, m),
        warn: (o, m) => {
          if (!starting) log.warn(o, m);
        },
        info: (o, m) => log.info(o, m),
      };
      const redis = new FailoverCounters(primary, memory, { clock, probeMs: opts.countersProbeMs, log: failoverLog });
      await redis.start().catch(async (err: unknown) => {
        await redis.close().catch(() => undefined);
        throw err;
      });
      starting = false;
      const source = `${redactUrl(opts.counters)} (keys ${opts.countersPrefix}*)`;
      // A failure at start is also in the banner.
      if (redis.unreachable)
        log.warn({ counters: source, err: redis.unreachable }, "Redis counters unreachable at start: counting in this node's memory until Redis answers");
      return { value: { counters: redis, source }, base: true, stop: () => redis.close() };
    },
  };
}
