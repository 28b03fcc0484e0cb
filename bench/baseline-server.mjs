#!/usr/bin/env node
// The baseline of bench/run.mjs: a bare Fastify app, in its own process as
// the server under test is, that parses the same JSON bodies and answers
// {ok:true}. No auth, no database, no logger: what HTTP + JSON cost alone.
//
//   node bench/baseline-server.mjs   -> prints "listening on http://127.0.0.1:PORT" to stderr
import Fastify from 'fastify';

const app = Fastify({ logger: false, bodyLimit: 256 * 1024 * 1024 });
app.post('/*', async () => ({ ok: true }));
const url = await app.listen({ host: '127.0.0.1', port: 0 });
process.stderr.write(`baseline listening on ${url}\n`);
const stop = async () => {
  await app.close();
  process.exit(0);
};
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
