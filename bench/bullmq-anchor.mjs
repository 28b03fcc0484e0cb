#!/usr/bin/env node
// The anchor of figures 1 and 2 on SQLite (bench/lib/bullmq.mjs drives it):
// BullMQ on a Redis of its own, each side in a process of its own so its CPU
// is its own.
//
//   node bench/bullmq-anchor.mjs api REDIS_PORT            -> "bullmq api listening on http://..." (stderr)
//   node bench/bullmq-anchor.mjs worker REDIS_PORT CONC    -> "bullmq worker listening on http://..." (stderr)
//
// api: a Fastify app as bench/baseline-server.mjs is (no logger, the same
// body limit) whose every POST parses its JSON body and `queue.add`s it as a
// job, answering the job's id: what a queue's accept costs behind the same
// HTTP. worker: a BullMQ Worker (concurrency CONC) whose processor does
// nothing, so each job is moved to active and completed; GET /count answers
// how many it completed and when the last was (the figure polls it).
import Fastify from 'fastify';
import { Queue, Worker } from 'bullmq';

const [mode, portArg, concArg] = process.argv.slice(2);
const connection = { host: '127.0.0.1', port: Number(portArg), maxRetriesPerRequest: null };
const QUEUE = 'bench';
const app = Fastify({ logger: false, bodyLimit: 256 * 1024 * 1024 });
let close;

if (mode === 'api') {
  const queue = new Queue(QUEUE, { connection });
  await queue.waitUntilReady();
  app.post('/*', async (req) => {
    const job = await queue.add('send', req.body);
    return { ok: true, id: job.id };
  });
  close = () => queue.close();
} else if (mode === 'worker') {
  let completed = 0;
  let lastAt = null;
  const worker = new Worker(QUEUE, async () => undefined, { connection, concurrency: Number(concArg ?? 10) });
  worker.on('completed', () => {
    completed += 1;
    lastAt = Date.now();
  });
  worker.on('error', (err) => process.stderr.write(`bullmq worker: ${err.message}\n`));
  await worker.waitUntilReady();
  app.get('/count', async () => ({ completed, last_at: lastAt }));
  close = () => worker.close();
} else {
  process.stderr.write('usage: bullmq-anchor.mjs api|worker REDIS_PORT [CONCURRENCY]\n');
  process.exit(2);
}

const url = await app.listen({ host: '127.0.0.1', port: 0 });
process.stderr.write(`bullmq ${mode} listening on ${url}\n`);
const stop = async () => {
  await app.close();
  await close();
  process.exit(0);
};
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
