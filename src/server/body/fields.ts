import { fail } from '../../core/api/errors.js';

/**
 * What the incremental body readers (json-reader.ts, form-reader.ts) hand
 * over: one field at a time, and the text of one field (the file) in
 * pieces instead of whole.
 */
export interface FieldSink {
  /** A string value starts for `name`: true to receive it in pieces (`piece`, then `pieceEnd`). */
  streams(name: string): boolean;
  piece(text: string): void;
  pieceEnd(): void;
  /** Any other field, whole. */
  field(name: string, value: unknown): void;
}

/** Bounds of the fields received whole, counted in characters as sent (before unescaping). */
export interface FieldLimits {
  perField: number;
  total: number;
}

export const FIELD_LIMITS: FieldLimits = { perField: 64 * 1024, total: 1024 * 1024 };

const KiB = (n: number) => `${Math.round(n / 1024)} KiB`;

/** Counts the characters of the fields received whole, refusing past either bound. */
export class FieldBudget {
  private field = 0;
  private total = 0;
  constructor(private readonly limits: FieldLimits) {}

  start(): void {
    this.field = 0;
  }

  add(n: number, what: () => string): void {
    this.field += n;
    this.total += n;
    if (this.field > this.limits.perField) fail('BODY_TOO_LARGE', `${what()} is longer than ${KiB(this.limits.perField)}; only the file may be larger`);
    if (this.total > this.limits.total) fail('BODY_TOO_LARGE', `the fields other than the file take more than ${KiB(this.limits.total)} in all`);
  }
}

/** A field name as it may be quoted in a message. */
export const fieldName = (name: string): string => JSON.stringify(name.length > 40 ? `${name.slice(0, 40)}…` : name);
