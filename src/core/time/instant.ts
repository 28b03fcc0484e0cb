// RFC 3339 instants as the API takes them (`enviar_en`): pure, for the server and the CLI alike.

/** RFC 3339's date-time: a full date, a time with seconds (a fraction allowed) and a zone, Z or an offset. */
const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?([Zz]|[+-](\d{2}):(\d{2}))$/;

/** The instant an RFC 3339 text names (ms), or null when it is not one (a field out of range included). */
export function parseInstant(text: string): number | null {
  const p = RFC3339.exec(text.trim());
  if (!p) return null;
  const [year, month, day, hour, minute, second] = p.slice(1, 7).map(Number) as [number, number, number, number, number, number];
  const days = new Date(Date.UTC(year, month, 0)).getUTCDate();
  if (month < 1 || month > 12 || day < 1 || day > days || hour > 23 || minute > 59 || second > 60) return null;
  if (p[9] !== undefined && (Number(p[9]) > 23 || Number(p[10]) > 59)) return null;
  // A leap second is read as the second after it, as Date does not know them.
  const t = Date.parse(
    p[0]
      .trim()
      .replace(/:60(?=[.Zz+-])/, ':59')
      .replace(' ', 'T'),
  );
  return Number.isNaN(t) ? null : second === 60 ? t + 1000 : t;
}
