import { Command, Option } from 'commander';
import { defaultDataDir } from '../../paths.js';
import { configOf } from '../../server/config.js';
import { SERVE_KNOBS, type Knob, type KnobValues } from '../../server/config-knobs.js';
import { CliError } from '../exit-codes.js';
import { EXIT } from '../../shared/exit-codes.js';
import type { IO } from '../io.js';
import { hostPort, int, trustProxy, wordOrUrl } from '../parse.js';
import { duration, longDuration, msRange } from '../duration.js';
import { isValidTz } from '../../core/time/hours.js';
import { colorLevel } from '../io.js';
import { startedByNpm, watchParent } from '../parent-watch.js';

/** A yes/no environment variable: 1/true/yes or 0/false/no (or empty); anything else is a usage error, not a silent "yes". */
function envFlag(env: NodeJS.ProcessEnv, name: string): boolean {
  const v = env[name]?.trim().toLowerCase();
  if (v === undefined || v === '' || v === '0' || v === 'false' || v === 'no') return false;
  if (v === '1' || v === 'true' || v === 'yes') return true;
  throw new CliError(`${name}: "${env[name]}" is not 1/true/yes or 0/false/no`, EXIT.USAGE);
}

/**
 * A start that failed, as one line for stderr. The port, the address and the
 * data directory are named with what to do; anything else (a store out of
 * reach, a bad token, a bug) is "cannot start: <message>", its stack written
 * before it only under --log-level debug or trace, for a bug report.
 */
function startFailure(e: NodeJS.ErrnoException, host: string, port: string, logLevel: string, io: IO): CliError {
  switch (e.code) {
    case 'EADDRINUSE':
      return new CliError(`port ${port} on ${host} is already in use (--port or PASARELA_PORT picks another)`, EXIT.ERROR);
    case 'EACCES':
      if (e.syscall === 'listen')
        return new CliError(
          `not allowed to listen on port ${port} on ${host} (ports below 1024 need privileges; --port or PASARELA_PORT picks another)`,
          EXIT.ERROR,
        );
      break;
    case 'EADDRNOTAVAIL':
      return new CliError(`cannot listen on ${host}: not an address of this machine (--host or PASARELA_HOST)`, EXIT.ERROR);
    case 'EDATADIRINUSE':
      return new CliError(e.message, EXIT.ERROR);
  }
  if ((logLevel === 'debug' || logLevel === 'trace') && e.stack) io.stderr.write(`${e.stack}\n`);
  return new CliError(`cannot start: ${e.message}`, EXIT.ERROR);
}

/** The parser of a flag's value, by the kind the table gives it (choices are commander's own). */
function parserOf(k: Knob<unknown>): ((value: string) => unknown) | undefined {
  switch (k.kind) {
    case 'int':
      return int(k.min, k.max);
    case 'duration':
      return k.long ? longDuration : duration;
    case 'range':
      return msRange;
    case 'address':
      return hostPort;
    case 'proxies':
      return trustProxy;
    default:
      return undefined;
  }
}

/** The flag of a setting as commander registers it, from the table (server/config-knobs.ts). */
function optionOf(k: Knob<unknown>, flag: string): Option {
  const o = new Option(flag, k.help);
  // A switch reads its variable as yes/no itself (envFlag), where commander would take any value for yes.
  if (k.env && k.kind !== 'switch') o.env(k.env);
  if (k.default !== undefined && k.kind !== 'switch' && k.kind !== 'proxies') o.default(k.default, k.helpDefault);
  const parse = parserOf(k);
  if (parse) o.argParser(parse);
  if (k.choices) o.choices([...k.choices]);
  return o;
}

/**
 * Every setting's value: a flag's (commander has applied its variable and
 * default), a switch's variable, a secret's variable, or the table's default.
 * An empty value of a setting without default is no value.
 */
function knobValues(o: Record<string, unknown>, options: Map<string, Option>, env: NodeJS.ProcessEnv): KnobValues {
  const values: Record<string, unknown> = {};
  for (const [name, k] of Object.entries(SERVE_KNOBS) as Array<[string, Knob<unknown>]>) {
    const option = options.get(name);
    let v: unknown = option ? o[option.attributeName()] : k.env ? env[k.env] : k.default;
    if (k.kind === 'switch') v = Boolean(v) || (k.env !== undefined && envFlag(env, k.env));
    // Given without a value (as scripts always have): the nearest proxy, one hop; never "every address".
    if (k.kind === 'proxies') v = v === true ? 1 : (v ?? k.default);
    if (k.default === undefined && v === '') v = undefined;
    values[name] = v;
  }
  return values as KnobValues;
}

/** `pasarela serve`: the whole service in this process until SIGINT or SIGTERM. */
export function registerServe(program: Command, io: IO, env: NodeJS.ProcessEnv): void {
  const command = program.command('serve').description('run the gateway service (HTTP API, gateway adapter, embedded SQLite)');
  const options = new Map<string, Option>();
  for (const [name, k] of Object.entries(SERVE_KNOBS) as Array<[string, Knob<unknown>]>) {
    if (!k.flag) continue;
    const option = optionOf(k, k.flag);
    options.set(name, option);
    command.addOption(option);
  }
  command.action(async (o: Record<string, unknown>) => {
    // A failing or closed stdout/stderr drops log lines (server/log-sink.ts): it never stops the service.
    io.takeOutputErrors?.();
    const v = knobValues(o, options, env);
    const { gateway } = v;
    if (v.gatewayTimeoutMs < 100) throw new CliError('--gateway-timeout must be at least 100ms', EXIT.USAGE);
    for (const [flag, ms] of [
      ['--header-timeout', v.headerTimeoutMs],
      ['--body-timeout', v.bodyTimeoutMs],
      ['--request-timeout', v.requestTimeoutMs],
    ] as const) {
      if (ms < 100) throw new CliError(`${flag} must be at least 100ms`, EXIT.USAGE);
    }
    if (v.headerTimeoutMs > v.requestTimeoutMs) throw new CliError('--header-timeout may not be longer than --request-timeout', EXIT.USAGE);
    if (v.webhookTimeoutMs < 100) throw new CliError('--webhook-timeout must be at least 100ms', EXIT.USAGE);
    if (v.drainDelayMs > 600_000) throw new CliError('--drain-delay may be at most 10m', EXIT.USAGE);
    if (v.stopTimeoutMs > 600_000) throw new CliError('--stop-timeout may be at most 10m', EXIT.USAGE);
    if (v.webhookPollMs < 10) throw new CliError('--webhook-poll must be at least 10ms', EXIT.USAGE);
    if (v.inboxRetentionMs !== 0 && v.inboxRetentionMs < 3_600_000)
      throw new CliError('--inbox-retention must be 0 (keep for ever) or at least 1h', EXIT.USAGE);
    // The engine (baileys) is in-process: no gateway server to name.
    if (gateway !== 'sim' && gateway !== 'baileys') {
      for (const [flag, given] of [
        ['--gateway-url', v.gatewayUrl],
        ['--gateway-key', v.gatewayKey],
      ] as const) {
        if (!given) throw new CliError(`--gateway ${gateway} needs ${flag} (or PASARELA_${flag.slice(2).toUpperCase().replace('-', '_')})`, EXIT.USAGE);
      }
      for (const [flag, given] of [
        ['--gateway-url', v.gatewayUrl],
        ['--gateway-callback-url', v.gatewayCallbackUrl],
      ] as const) {
        if (given && !/^https?:\/\/[^/\s]+/.test(given)) throw new CliError(`${flag}: "${given}" is not an http(s) URL`, EXIT.USAGE);
      }
    }
    if (v.publicUrl !== undefined && !/^https?:\/\/[^/\s?#]+(\/[^\s?#]*)?$/.test(v.publicUrl))
      throw new CliError(`--public-url: "${v.publicUrl}" is not an http(s) URL (https://api.example.com, or with a path prefix)`, EXIT.USAGE);
    v.store = wordOrUrl('--store', v.store, 'sqlite', /^postgres(ql)?:$/, 'a postgres:// URL (postgres://USER@HOST:5432/DB)');
    v.counters = wordOrUrl('--counters', v.counters, 'memory', /^rediss?:$/, 'a redis:// URL (redis://HOST:6379)');
    if (!/^[^\s*?[\]]{1,100}$/.test(v.countersPrefix))
      throw new CliError(`--counters-prefix: "${v.countersPrefix}" must be 1 to 100 characters, without spaces or * ? [ ]`, EXIT.USAGE);
    if (v.tz && !isValidTz(v.tz)) throw new CliError(`--tz: unknown time zone "${v.tz}" (an IANA name such as America/Mexico_City)`, EXIT.USAGE);
    // A claim that ends before a send can has another worker send the same message.
    if (v.queueLeaseMs !== undefined && v.queueLeaseMs < 2 * v.gatewayTimeoutMs * 4) {
      throw new CliError(`--queue-lease must be at least twice the send timeout (4 x --gateway-timeout): ${(8 * v.gatewayTimeoutMs) / 1000}s`, EXIT.USAGE);
    }
    const config = configOf(v, defaultDataDir(env));
    config.logFormat ??= io.stdoutIsTTY ? 'pretty' : 'json';
    // Loaded here so that client commands never pay for the server's modules.
    const { banner, startServer } = await import('../../server/serve.js');
    let server;
    try {
      server = await startServer({ ...config, logStream: io.stdout, logNotice: io.stderr, logColor: colorLevel(io.stdoutIsTTY, env, false) === 1 });
    } catch (err) {
      // One line, no stack trace: what went wrong is the message (docs/logs.md, "Start failures").
      throw startFailure(err as NodeJS.ErrnoException, config.host, String(config.port), config.logLevel, io);
    }
    io.stderr.write(banner(server, gateway, config.gatewayUrl));
    // The first signal stops gracefully; a second one falls back to Node's default and ends the process. Under npm,
    // the end of the process that started it stops it the same way (npm's shell does not pass SIGTERM on, D-109).
    const signal = await new Promise<string>((resolve) => {
      let unwatch: (() => void) | undefined;
      const off = io.onSignal?.((sig) => {
        off?.();
        unwatch?.();
        resolve(sig);
      });
      if (startedByNpm(env))
        unwatch = watchParent(() => {
          off?.();
          resolve('the npm process that started it ended');
        });
    });
    const drainMs = config.drainDelayMs;
    io.stderr.write(
      `${signal}: ${drainMs > 0 ? `not ready (draining) for ${drainMs / 1000}s, then ` : ''}finishing requests in flight (up to ${config.stopTimeoutMs / 1000}s), then stopping…\n`,
    );
    // Readiness first (/ready: 503 draining), then the pause that lets a load balancer see it, then the stop as before.
    server.drain(signal.startsWith('SIG') ? `the node got ${signal} and is stopping` : `${signal}: the node is stopping`);
    if (drainMs > 0) await new Promise((resolve) => setTimeout(resolve, drainMs));
    // Bounded: webhook attempts are abandoned at once (they stay due), the rest after --stop-timeout.
    const { complete } = await server.close();
    io.stderr.write(
      complete
        ? 'pasarela stopped\n'
        : `pasarela stopped after --stop-timeout (${config.stopTimeoutMs / 1000}s), abandoning work still in flight: it is retried by another node or the next start\n`,
    );
  });
}
