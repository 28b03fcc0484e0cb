import type { FastifyRequest } from 'fastify';
import { AppError } from '../../core/api/errors.js';
import { newFormToken } from '../../core/auth/panel-forms.js';
import { toAppError } from '../errors.js';
import { panelOf } from './context.js';
import { html, type Html } from './html.js';

/**
 * Forms: labelled fields that show the API's error beside the field at
 * fault. A refused change re-renders its form with what was typed and the
 * error, the same words, status and api_codigo the API answers.
 */
export interface FormErrors {
  /** Field name -> the error shown beside it. */
  fields: Record<string, AppError>;
  /** An error no field owns (shown above the form). */
  general?: AppError;
}

export const NO_ERRORS: FormErrors = { fields: {} };

/**
 * The hidden fields every form of a signed-in page carries: the session's
 * CSRF token, and a fresh one-use token, so the form acts once however often
 * it is sent (`signedIn` checks both; D-90).
 */
export function csrfField(req: FastifyRequest): Html {
  return html`<input type="hidden" name="_csrf" value="${panelOf(req).session.csrf}" /><input type="hidden" name="_once" value="${newFormToken()}" />`;
}

/**
 * The field an error names: a schema refusal's property, or a core error
 * whose text starts with the field's name ("limite: must be ...").
 */
export function faultField(err: AppError | Error, fields: readonly string[]): string | undefined {
  const v = (err as { validation?: Array<{ instancePath?: string; params?: { missingProperty?: string } }> }).validation?.[0];
  if (v) {
    const name = v.params?.missingProperty ?? v.instancePath?.split('/')[1];
    if (name && fields.includes(name)) return name;
  }
  const m = /^(?:body: |querystring: )?\/?([a-z_]+)\b/.exec(err.message);
  if (m && fields.includes(m[1]!)) return m[1];
  return fields.find((f) => new RegExp(`(^|[\\s/'"])${f}\\b`).test(err.message));
}

/** An error as a form shows it: beside its field when one is named, else above the form. */
export function formErrorsOf(err: unknown, fields: readonly string[]): FormErrors {
  const e = err instanceof AppError ? err : toAppError(err as Error);
  if (e.status >= 500) throw err;
  const f = faultField((err as Error) ?? e, fields);
  return f ? { fields: { [f]: e } } : { fields: {}, general: e };
}

/** The API's error in words: its text, then its code and tag (the api_codigo table, docs/api-codigo.md). */
export function errorText(e: AppError): Html {
  return html`${e.message} <span class="code">api_codigo ${e.row.codigo} · ${e.row.texto}</span>`;
}

export function generalError(errors: FormErrors): Html {
  return errors.general ? html`<p class="error" role="alert">${errorText(errors.general)}</p>` : html``;
}

export interface FieldSpec {
  name: string;
  label: string;
  type?: 'text' | 'number' | 'password' | 'email' | 'url' | 'time' | 'search' | 'date' | 'tel';
  value?: string | number | null;
  hint?: string;
  required?: boolean;
  min?: number;
  max?: number;
  maxlength?: number;
  autocomplete?: string;
  placeholder?: string;
  /** A typed confirmation: panel.js keeps the form's button disabled until the field holds exactly this. */
  confirm?: string;
}

/** A labelled input; its hint and error are tied to it for screen readers. */
export function field(f: FieldSpec, errors: FormErrors = NO_ERRORS): Html {
  const id = `f-${f.name}`;
  const err = errors.fields[f.name];
  const described = [f.hint ? `${id}-hint` : '', err ? `${id}-error` : ''].filter(Boolean).join(' ');
  return html`<div class="field${err ? ' invalid' : ''}">
    <label for="${id}">${f.label}</label>
    <input
      id="${id}"
      name="${f.name}"
      type="${f.type ?? 'text'}"
      ${f.value !== undefined && f.value !== null ? html` value="${String(f.value)}"` : ''}${f.required ? html` required` : ''}${f.min !== undefined ? html` min="${f.min}"` : ''}${f.max !== undefined ? html` max="${f.max}"` : ''}${f.maxlength !== undefined ? html` maxlength="${f.maxlength}"` : ''}${f.autocomplete ? html` autocomplete="${f.autocomplete}"` : ''}${f.placeholder ? html` placeholder="${f.placeholder}"` : ''}${f.confirm !== undefined ? html` data-confirm="${f.confirm}"` : ''}${described ? html` aria-describedby="${described}"` : ''}${err ? html` aria-invalid="true"` : ''}
    />
    ${f.hint ? html`<small id="${id}-hint" class="hint">${f.hint}</small>` : ''}
    ${err ? html`<p id="${id}-error" class="field-error" role="alert">${errorText(err)}</p>` : ''}
  </div>`;
}

/** A labelled select of fixed options. */
export function selectField(
  f: { name: string; label: string; options: ReadonlyArray<readonly [string, string]>; value?: string; hint?: string },
  errors: FormErrors = NO_ERRORS,
): Html {
  const id = `f-${f.name}`;
  const err = errors.fields[f.name];
  return html`<div class="field${err ? ' invalid' : ''}">
    <label for="${id}">${f.label}</label>
    <select id="${id}" name="${f.name}" ${err ? html` aria-invalid="true" aria-describedby="${id}-error"` : ''}>
      ${f.options.map(([v, label]) => html`<option value="${v}" ${v === f.value ? html` selected` : ''}>${label}</option>`)}
    </select>
    ${f.hint ? html`<small class="hint">${f.hint}</small>` : ''} ${err ? html`<p id="${id}-error" class="field-error" role="alert">${errorText(err)}</p>` : ''}
  </div>`;
}

/** The fields of a form body as strings (a panel form sends nothing else), without the CSRF and one-use tokens. */
export function formValues(req: FastifyRequest): Record<string, string> {
  const body = req.body && typeof req.body === 'object' ? (req.body as Record<string, unknown>) : {};
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(body)) if (k !== '_csrf' && k !== '_once' && typeof v === 'string') out[k] = v;
  return out;
}

/** An optional whole number from a form: "" is absent; anything else not a whole number is the API's 400 naming the field. */
export function intField(values: Record<string, string>, name: string): number | undefined {
  const raw = values[name]?.trim();
  if (raw === undefined || raw === '') return undefined;
  if (!/^-?\d{1,15}$/.test(raw)) throw new AppError('INVALID_PARAMS', `${name}: must be a whole number`);
  return Number(raw);
}
