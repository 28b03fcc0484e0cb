/**
 * Typed HTML templates that escape by default. `html\`...\`` escapes every
 * interpolated value unless it is itself an `Html` (a template already
 * built), an array of them, or `raw()` (for the few strings we build
 * ourselves and know are markup). null, undefined and false render nothing,
 * so `${cond && html\`...\`}` reads naturally.
 */
export class Html {
  constructor(readonly value: string) {}
  toString(): string {
    return this.value;
  }
}

export type Renderable = Html | string | number | boolean | null | undefined | readonly Renderable[];

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;', '`': '&#96;' };

const SPECIAL = /[&<>"'`]/;

export function escapeHtml(s: string): string {
  // Most values (numbers, times, ids) hold nothing to escape: a test is cheaper than a replace.
  return SPECIAL.test(s) ? s.replace(/[&<>"'`]/g, (c) => ESCAPES[c]!) : s;
}

function render(v: Renderable): string {
  if (v instanceof Html) return v.value;
  if (typeof v === 'number') return String(v);
  if (v === null || v === undefined || v === false) return '';
  if (Array.isArray(v)) {
    let out = '';
    for (const x of v as readonly Renderable[]) out += render(x);
    return out;
  }
  return escapeHtml(String(v));
}

export function html(strings: TemplateStringsArray, ...values: Renderable[]): Html {
  let out = strings[0]!;
  for (let i = 0; i < values.length; i++) out += render(values[i]) + strings[i + 1]!;
  return new Html(out);
}

/** Markup we built ourselves (never a value a user sent). */
export const raw = (s: string): Html => new Html(s);

/** Attributes from an object: false/null/undefined leave it out, true writes the bare name. */
export function attrs(a: Record<string, string | number | boolean | null | undefined>): Html {
  let out = '';
  for (const [k, v] of Object.entries(a)) {
    if (v === false || v === null || v === undefined) continue;
    out += v === true ? ` ${k}` : ` ${k}="${escapeHtml(String(v))}"`;
  }
  return new Html(out);
}
