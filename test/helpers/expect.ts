import { expect } from 'vitest';
import { AppError } from '../../src/core/errors.js';
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

/** The docs/design.md §4 success envelope. */
export function expectOk(r: ApiResponse, status = 200): void {
  expect(r.status, r.text).toBe(status);
  expect(r.body).toMatchObject({
    ok: true,
    api_codigo: 0,
    api_texto: 'OK',
    api_descripcion: expect.any(String),
    texto: expect.any(String),
    desc: expect.any(String),
  });
  expect(r.body).toHaveProperty('saldo');
}

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
