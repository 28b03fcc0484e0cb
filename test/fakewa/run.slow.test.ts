import { execFile, spawn } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, expect, it } from 'vitest';
import { until } from './line-client.js';

const root = process.cwd();
let child: ReturnType<typeof spawn> | undefined;
afterAll(() => {
  child?.kill('SIGTERM');
});

it('npm run fakewa: the compiled fake prints where it listens and answers its control API', async () => {
  await promisify(execFile)(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', 'test/fakewa/tsconfig.build.json'], {
    cwd: root,
    timeout: 100_000,
  });
  child = spawn(process.execPath, [join(root, '.fakewa/run.js')], { cwd: root, env: { ...process.env, FAKEWA_CONTROL_PORT: '0' } });
  let out = '';
  child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  const control = await until('control line', () => /control API (http:\S+)/.exec(out)?.[1], 60_000);
  expect(out).toMatch(/wsUrl\s+ws:\/\/127\.0\.0\.1:\d+\/ws\/chat/);
  expect(out).toMatch(/preload\s+\S+trust-fakewa\.mjs/);
  expect(out).toMatch(/media CA\s+\S+media-ca\.pem/);
  const help = (await (await fetch(control)).json()) as { help: string[] };
  expect(help.help.some((l) => l.startsWith('POST /scan'))).toBe(true);
  const bad = await fetch(`${control}text`, { method: 'POST', body: JSON.stringify({ from: '1' }) });
  expect(bad.status).toBe(400);
  expect(((await bad.json()) as { error: string }).error).toMatch(/"to" is required/);
  const noLine = await fetch(`${control}logout`, { method: 'POST', body: JSON.stringify({ numero: '5215550000000' }) });
  expect(noLine.status).toBe(409);
  const text = await fetch(`${control}contacts/5215550000001/received`);
  expect(await text.json()).toEqual([]);
});
