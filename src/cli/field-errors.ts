import { ERRORS } from '../core/api/errors.js';
/**
 * A 400 (api_codigo 100) names an API field, often in JSON-schema words
 * (`body: hora_inicio_permitido must match pattern "^([01]…"`). A command
 * passes the map of the fields it sets to the flag or argument that sets
 * each, and the refusal is told in those terms instead.
 */
export type FieldFlags = Readonly<Record<string, string>>;

/** api_codigo of PARAMETROS_INVALIDOS. */
export const CODIGO_INVALID_PARAMS = ERRORS.INVALID_PARAMS.codigo;

/** JSON-schema phrasing, in plain words. */
function plain(rule: string): string {
  const r = rule.trim();
  let m: RegExpExecArray | null;
  if (/^must match pattern /.test(r)) return 'is not in the expected format';
  if ((m = /^must match format "([^"]+)"/.exec(r))) return m[1] === 'email' ? 'is not an email address' : `is not a valid ${m[1]}`;
  if ((m = /^must be <= (-?[0-9.]+)/.exec(r))) return `must be at most ${m[1]}`;
  if ((m = /^must be >= (-?[0-9.]+)/.exec(r))) return `must be at least ${m[1]}`;
  if ((m = /^must NOT have more than ([0-9]+) characters/.exec(r))) return `must be at most ${m[1]} characters`;
  if ((m = /^must NOT have fewer than ([0-9]+) characters/.exec(r))) return m[1] === '1' ? 'must not be empty' : `must be at least ${m[1]} characters`;
  if (/^must be integer/.test(r)) return 'must be an integer';
  if (/^must be equal to one of the allowed values/.test(r)) return 'is not one of the allowed values';
  return r.replace(/^:\s*/, '');
}

/**
 * The message to show for a validation refusal: `--flag: what is wrong`, or
 * the server's text unchanged when it names no field of `fields`.
 */
export function explainInvalid(serverText: string, fields: FieldFlags): string {
  const text = serverText.replace(/^(body|querystring|params|headers):\s*/, '');
  const required = /^must have required property '([^']+)'/.exec(text);
  if (required) {
    const flag = fields[required[1]!];
    return flag ? `${flag} is required` : serverText;
  }
  // "<field> must ...", "<field>: ...", "<field> is required ..."
  const m = /^([a-z_][a-z0-9_]*)(?::\s*|\s+)(.*)$/is.exec(text);
  if (!m) return serverText;
  const flag = fields[m[1]!];
  if (!flag) return serverText;
  return `${flag}: ${plain(m[2]!)}`;
}
