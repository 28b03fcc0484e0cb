import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { logSink } from '../../src/server/log-sink.js';

/** A stderr that keeps what it is told. */
function notice(): { stream: Writable; text: () => string } {
  let text = '';
  const stream = new Writable({
    write(chunk, _enc, cb) {
      text += String(chunk);
      cb();
    },
  });
  return { stream, text: () => text };
}

describe('the log sink (server/log-sink.ts)', () => {
  it('a reader that stops reading holds at most the bound: later lines are dropped and counted, said once', () => {
    // A pipe whose reader never reads: nothing it is given is ever finished.
    const stuck = new Writable({ highWaterMark: 16, write: () => undefined });
    let dropped = 0;
    const said = notice();
    const sink = logSink(stuck, { onDrop: (n) => (dropped += n), notice: said.stream, maxHeldBytes: 1000 });
    const line = `${JSON.stringify({ level: 30, msg: 'x'.repeat(80) })}\n`;
    for (let i = 0; i < 200; i += 1) sink.write(line);
    expect(stuck.writableLength).toBeLessThanOrEqual(1000 + line.length);
    expect(dropped).toBeGreaterThan(180);
    expect(said.text().match(/the log output failed \(its reader is more than 1000 bytes behind\)/g)).toHaveLength(1);
  });

  it('a stream that errors (EPIPE) never throws or emits: every later line is dropped and counted', async () => {
    const gone = new Writable({
      write(_chunk, _enc, cb) {
        cb(Object.assign(new Error('write EPIPE'), { code: 'EPIPE' }));
      },
    });
    let dropped = 0;
    const said = notice();
    const sink = logSink(gone, { onDrop: (n) => (dropped += n), notice: said.stream });
    sink.write('{"a":1}\n{"a":2}\n');
    await new Promise((r) => setImmediate(r));
    for (let i = 0; i < 3; i += 1) sink.write('{"b":1}\n');
    expect(dropped).toBe(5);
    expect(said.text()).toBe(
      'pasarela: the log output failed (write EPIPE): log lines are dropped and counted in pasarela_log_lines_dropped_total; the service goes on\n',
    );
  });
});
