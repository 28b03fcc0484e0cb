import { Writable } from 'node:stream';
import { Chalk } from 'chalk';
import { describe, expect, it } from 'vitest';
import { formatEntry, prettyStream } from '../../src/server/log-format.js';

/**
 * The pretty log format (docs/logs.md): one readable line per pino entry,
 * the shapes the docs promise, control characters escaped, colour only
 * when asked.
 */

const plain = new Chalk({ level: 0 });
const T = new Date(2026, 0, 2, 12, 3, 4, 123).getTime();
const base = { level: 30, time: T, pid: 1, hostname: 'h' };

/** The pretty line's shape: time, level, then the rest. */
const PRETTY_LINE = /^\d\d:\d\d:\d\d\.\d{3} (TRACE|DEBUG|INFO |WARN |ERROR|FATAL) \S/;

describe('formatEntry', () => {
  it('a request: id, method, URL, status, time, address', () => {
    const line = formatEntry(
      {
        ...base,
        reqId: '3f2a9c01d4e5',
        req: { method: 'GET', url: '/api/enviar.php?key=[REDACTED]', remoteAddress: '127.0.0.1' },
        res: { statusCode: 200 },
        responseTime: 4.21,
        msg: 'request completed',
      },
      plain,
    );
    expect(line).toBe('12:03:04.123 INFO  3f2a9c01d4e5 GET /api/enviar.php?key=[REDACTED] 200 4.21ms from 127.0.0.1');
    expect(line).toMatch(PRETTY_LINE);
  });

  it('the events read as sentences; what they do not say follows as k=v', () => {
    expect(
      formatEntry(
        {
          ...base,
          event: 'line.status',
          celular_id: 3,
          cliente_id: 1,
          instancia: 'pasarela-3',
          from: 'connected',
          to: 'logged_out',
          estado: 'desconectado',
          msg: 'line status changed',
        },
        plain,
      ),
    ).toBe('12:03:04.123 INFO  line 3 (cliente 1) connected → logged_out instancia=pasarela-3 estado=desconectado');
    expect(
      formatEntry(
        { ...base, event: 'line.status', celular_id: 3, cliente_id: 1, instancia: 'p', from: null, to: 'connecting', estado: 'desconectado', msg: 'x' },
        plain,
      ),
    ).toContain('line 3 (cliente 1) new → connecting');
    expect(
      formatEntry(
        {
          ...base,
          event: 'line.holder',
          celular_id: 3,
          instancia: 'pasarela-3',
          from: null,
          to: 'n-1',
          reason: 'free',
          msg: "line's engine session changed hands",
        },
        plain,
      ),
    ).toBe('12:03:04.123 INFO  line 3 session free → node n-1 (free) instancia=pasarela-3');
    expect(formatEntry({ ...base, event: 'line.holder', celular_id: 3, instancia: 'p', from: 'n-1', to: null, reason: 'stop', msg: 'x' }, plain)).toContain(
      'line 3 session node n-1 → free (stop)',
    );
    expect(
      formatEntry(
        {
          ...base,
          event: 'message.error',
          msg_id: 'abc',
          celular_id: 3,
          cliente_id: 1,
          tipo: 'texto',
          from: 'pendiente',
          error: 'refused for good: no',
          msg: 'message ended in error',
        },
        plain,
      ),
    ).toBe('12:03:04.123 INFO  message abc (line 3, cliente 1) ended in error: refused for good: no tipo=texto from=pendiente');
    expect(
      formatEntry(
        {
          ...base,
          level: 40,
          event: 'webhook.failing',
          cliente_id: 2,
          failures: 3,
          evento: 'message.status',
          status: 500,
          error: 'HTTP 500',
          msg: 'webhook receiver failing',
        },
        plain,
      ),
    ).toBe('12:03:04.123 WARN  webhook receiver of cliente 2 failing: 3 attempts in a row, the last: HTTP 500 evento=message.status status=500');
    expect(formatEntry({ ...base, event: 'webhook.recovered', cliente_id: 2, failures: 4, msg: 'x' }, plain)).toBe(
      '12:03:04.123 INFO  webhook receiver of cliente 2 delivering again after 4 failed attempts',
    );
    expect(
      formatEntry(
        { ...base, level: 40, event: 'webhook.given_up', cliente_id: 2, evento: 'webhook.test', intentos: 8, status: null, error: 'timeout', msg: 'x' },
        plain,
      ),
    ).toBe('12:03:04.123 WARN  webhook delivery for cliente 2 given up after 8 attempts: timeout evento=webhook.test status=-');
  });

  it('a line braked or resumed: a sentence naming the line, its client and the reason or who', () => {
    const braked = {
      ...base,
      level: 40,
      event: 'line.braked',
      celular_id: 3,
      cliente_id: 1,
      braked: true,
      causa: 'fallos',
      reason: 'failed: 6 of 20',
      msg: 'x',
    };
    expect(formatEntry(braked, plain)).toBe('12:03:04.123 WARN  line 3 (cliente 1) braked, its queue waits for a resume: failed: 6 of 20 causa=fallos');
    expect(formatEntry({ ...braked, braked: false }, plain)).toBe('12:03:04.123 WARN  line 3 (cliente 1) health alert: failed: 6 of 20 causa=fallos');
    expect(formatEntry({ ...base, event: 'line.resumed', celular_id: 3, cliente_id: 1, by: 'operador', msg: 'x' }, plain)).toBe(
      '12:03:04.123 INFO  line 3 (cliente 1) resumed by operador',
    );
  });

  it('any other entry: its message, then its fields (strings with spaces quoted, nested keys dotted)', () => {
    expect(formatEntry({ ...base, msg: 'removed the media of ended sends', swept: 3, who: 'a b', deep: { x: 1 } }, plain)).toBe(
      '12:03:04.123 INFO  removed the media of ended sends swept=3 who="a b" deep.x=1',
    );
  });

  it('an error: message inline; its stack frames below it at error level only', () => {
    const err = { type: 'Error', message: 'boom', stack: 'Error: boom\n    at f (/x.js:1:1)\n    at g (/y.js:2:2)' };
    expect(formatEntry({ ...base, level: 40, msg: 'could not', err }, plain)).toBe('12:03:04.123 WARN  could not err=boom');
    expect(formatEntry({ ...base, level: 50, reqId: 'r1', msg: 'request failed', err }, plain)).toBe(
      '12:03:04.123 ERROR r1 request failed err=boom\n    at f (/x.js:1:1)\n    at g (/y.js:2:2)',
    );
  });

  it('control characters from outside are escaped: a value cannot break the line or drive the terminal', () => {
    const line = formatEntry({ ...base, msg: 'evil\nline\u001b[2J', reqId: 'a\u001b]0;x\u0007', v: 'a\nb' }, plain);
    expect(line).not.toMatch(/[\n\u001b\u0007]/);
    expect(line).toContain('evil line\\u001b[2J');
  });

  it('colour only when asked', () => {
    const entry = { ...base, level: 50, req: { method: 'GET', url: '/' }, res: { statusCode: 500 }, responseTime: 1, msg: 'request completed' };
    expect(formatEntry(entry, plain)).not.toContain('\u001b');
    expect(formatEntry(entry, new Chalk({ level: 1 }))).toContain('\u001b[31m');
  });
});

describe('prettyStream', () => {
  it('reformats whole lines as they come, in any chunking; passes through what is not JSON', async () => {
    let out = '';
    const sink = new Writable({
      write(c, _e, cb) {
        out += String(c);
        cb();
      },
    });
    const p = prettyStream(sink, { color: false });
    const a = JSON.stringify({ ...base, msg: 'one' });
    const b = JSON.stringify({ ...base, level: 40, msg: 'two' });
    p.write(a.slice(0, 10));
    p.write(`${a.slice(10)}\n${b}\nnot json`);
    await new Promise<void>((r) => p.end(r));
    expect(out).toBe('12:03:04.123 INFO  one\n12:03:04.123 WARN  two\nnot json\n');
  });
});
