import { ChartSampler } from '../../core/charts/chart-samples.js';
import type { Core } from '../../core/context.js';
import { DirectRecovery } from '../../core/sending/direct-recovery.js';
import { LineHealth } from '../../core/accounts/line-health.js';
import type { AcceptedMedia } from '../../core/ports/media.js';
import type { NodePresence } from '../../core/nodes/node-presence.js';
import { EVENT_PRUNE_BATCH, EVENT_RETENTION_MS } from '../../core/events/event-log.js';
import { inboxRetention } from '../../core/history/recibidos.js';
import { kvExpiry, Retention } from '../../core/history/retention.js';
import type { ServeConfig } from '../config.js';
import type { Log, Part } from './part.js';

/*
 * The periodic upkeep of the request thread: direct sends a crash left
 * pending, the inbox's and the event log's retention, the charts' samples,
 * the lines' health.
 */

/**
 * Resolves the direct sends a crash left pending, once before the API
 * listens, then periodically. Served alone (SQLite), every pending direct
 * send is stranded; shared, only those whose slot ended long ago.
 */
export function recoveryPart(
  opts: ServeConfig,
  core: Pick<Core, 'store' | 'gateway' | 'clock' | 'bus' | 'config'>,
  d: { media: AcceptedMedia; inFlight: Set<string>; shared: boolean },
  log: Log,
): Part<DirectRecovery> {
  return {
    name: 'direct-send recovery',
    start: async () => {
      const recovery = new DirectRecovery(
        core,
        { files: d.media, inFlight: d.inFlight },
        {
          intervalMs: opts.directRecoveryMs,
          onError: (err) => log.error({ err }, 'recovery of stranded direct sends failed'),
          onResolved: (c) => log.warn(c, 'direct sends left pending by a crash were resolved'),
        },
      );
      await recovery.run(!d.shared);
      recovery.start();
      return { value: recovery, stop: () => recovery.stop() };
    },
  };
}

/**
 * The retention passes, at start and periodically, each on its own period:
 * the inbox's, and the event log's (D-69): events older than
 * EVENT_RETENTION_MS with nothing left to deliver, each pass until none is
 * left: a busy log gains millions of rows between two passes of the inbox's
 * period; and the kv store's expired rows (form tokens, shown-once pages),
 * bounded per pass, on the event log's period.
 */
export function retentionPart(opts: ServeConfig, core: Pick<Core, 'store' | 'clock'>, log: Log): Part<{ inbox: Retention; events: Retention; kv: Retention }> {
  return {
    name: 'retention',
    start: () => {
      const inbox = inboxRetention(core, {
        retentionMs: opts.inboxRetentionMs,
        intervalMs: opts.inboxPurgeIntervalMs,
        onError: (err) => log.error({ err }, 'inbox retention purge failed'),
      });
      const events = new Retention(core, {
        retentionMs: EVENT_RETENTION_MS,
        intervalMs: opts.eventPruneIntervalMs,
        batch: EVENT_PRUNE_BATCH,
        maxBatches: Infinity,
        purge: (before, limit) => core.store.pruneEvents(before, limit),
        onError: (err) => log.error({ err }, 'event log retention prune failed'),
      });
      const kv = kvExpiry(core, {
        intervalMs: opts.eventPruneIntervalMs,
        onError: (err) => log.error({ err }, 'expired kv rows purge failed'),
      });
      inbox.start();
      events.start();
      kv.start();
      return { value: { inbox, events, kv }, stop: () => Promise.all([inbox.stop(), events.stop(), kv.stop()]) };
    },
  };
}

/** How often a node samples the queue and writes its webhook attempts for the charts: twice a minute, so no minute goes without a reading. */
export const CHART_SAMPLE_MS = 30_000;

/**
 * The charts' samples (D-101): this node's webhook attempts (every node's
 * reach the request thread's bus, the background thread's too) and the
 * queue's depth, written at start and every CHART_SAMPLE_MS, once more at
 * the stop; each pass also removes chart rows past their keeping.
 */
export function chartsPart(core: Pick<Core, 'store' | 'clock' | 'bus'>, node: NodePresence, log: Log): Part<ChartSampler> {
  return {
    name: 'chart samples',
    start: () => {
      const sampler = new ChartSampler(core, node.info.id, {
        intervalMs: CHART_SAMPLE_MS,
        onError: (err) => log.error({ err }, 'chart sample failed'),
      });
      sampler.start();
      void sampler.run().catch((err: unknown) => log.error({ err }, 'chart sample failed'));
      return { value: sampler, stop: () => sampler.stop() };
    },
  };
}

/** The lines' health check: made before the API (which reports it), started once the callback URL is known. */
export function lineHealth(
  opts: ServeConfig,
  core: Pick<Core, 'store' | 'gateway' | 'clock' | 'bus' | 'signals' | 'config'>,
  node: NodePresence,
  log: Log,
): LineHealth {
  return new LineHealth(core, node, {
    intervalMs: opts.healthIntervalMs,
    concurrency: opts.healthConcurrency,
    onError: (err, instancia) => log.error({ err, instancia }, 'line health check failed'),
  });
}

export function healthPart(health: LineHealth): Part<LineHealth> {
  return {
    name: 'line health',
    start: () => {
      health.start();
      return { value: health, stop: () => health.stop() };
    },
  };
}
