import { expect } from 'vitest';
import { AppError } from '../../src/core/api/errors.js';
import type { ApiResponse } from './server.js';

/** The docs/design.md §4 error body, with the given status and, when given, api_codigo. */
export function expectError(r: ApiResponse, status: number, apiCodigo?: number): void {
  expect(r.status, r.text).toBe(status);
  expect(r.body).toMatchObject({
    ok: false,
    error: expect.any(String),
    api_codigo: expect.any(Number),
    api_texto: expect.any(String),
    api_descripcion: expect.any(String),
  });
  expect(r.body).toHaveProperty('saldo');
  if (apiCodigo !== undefined) expect(r.body.api_codigo).toBe(apiCodigo);
}

export interface OkOptions {
  /** The HTTP status; 200 unless given. */
  status?: number;
  /** A send's answer (docs/design.md §3): its msg_id, a numeric saldo and the duplicate counter (anti_dupe). */
  send?: boolean;
  /** A send's mode (implies `send`): queued answers say pendiente, with no gateway id yet; direct ones enviado, with it. */
  modo?: 'cola' | 'directo';
  /** The duplicate count the send was given (implies `send`). */
  count?: number;
  /** A listing's paging fields (page, por_pagina). */
  paged?: boolean;
}

/** The docs/design.md §4 success envelope, with the status (a number) or what the options say the answer holds. */
export function expectOk(r: ApiResponse, statusOrOpts: number | OkOptions = {}): void {
  const o = typeof statusOrOpts === 'number' ? { status: statusOrOpts } : statusOrOpts;
  expect(r.status, r.text).toBe(o.status ?? 200);
  expect(r.body).toMatchObject({
    ok: true,
    api_codigo: 0,
    api_texto: 'OK',
    api_descripcion: expect.any(String),
    texto: expect.any(String),
    desc: expect.any(String),
  });
  expect(r.body).toHaveProperty('saldo');
  if (o.send || o.modo !== undefined || o.count !== undefined) {
    expect(r.body).toMatchObject({ saldo: expect.any(Number), anti_dupe: { max: 3, window_s: 120 } });
    expect(r.body.msg_id).toMatch(UUID);
  }
  if (o.count !== undefined) expect(r.body.anti_dupe.count).toBe(o.count);
  if (o.modo !== undefined) {
    expect(r.body).toMatchObject({ modo: o.modo, estado: o.modo === 'cola' ? 'pendiente' : 'enviado' });
    if (o.modo === 'directo') expect(r.body.gateway_msg_id).toMatch(/\S/);
    else expect(r.body).not.toHaveProperty('gateway_msg_id');
  }
  if (o.paged) expect(r.body).toMatchObject({ page: expect.any(Number), por_pagina: expect.any(Number) });
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

const used = new Set<string>();
/** A fresh valid Mexican mobile number in the stored form (52 + 10 digits), never the same twice in a process. */
export function numeroNuevo(): string {
  for (;;) {
    const n = `5255${String(Math.floor(Math.random() * 1e8)).padStart(8, '0')}`;
    if (!used.has(n)) {
      used.add(n);
      return n;
    }
  }
}

/** The AppError a call throws; fails when it throws nothing or something else. */
export function errorOf(fn: () => unknown): AppError {
  try {
    fn();
  } catch (err) {
    if (err instanceof AppError) return err;
    throw err;
  }
  throw new Error('expected an AppError, nothing was thrown');
}

/** The AppError a promise rejects with; fails when it resolves or rejects with something else. */
export async function rejectionOf(p: Promise<unknown>): Promise<AppError> {
  try {
    await p;
  } catch (err) {
    if (err instanceof AppError) return err;
    throw err;
  }
  throw new Error('expected an AppError, the promise resolved');
}
