import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { AUDIT_ACCIONES, detalleLines, detalleText } from '../../src/core/auth/audit.js';
import { main } from '../../src/cli/main.js';
import { auditoriaQuerystring } from '../../src/server/schemas/common.js';
import { fakeIO } from '../cli/helpers.js';

/**
 * The audit's actions are one list in core (issue 36's walk, finding 5):
 * every action the source writes is in it, and `admin audit --help`, the
 * API's schema and the panel's filter (which reads the list) offer it. A
 * detalle's lists and records read as words, not raw JSON.
 */

const SRC = join(process.cwd(), 'src');
const files = (dir: string): string[] =>
  readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? files(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : []));

/** The actions the source writes: `accion: 'a.b'`, `webhookAudit(p, 'a.b')`, and `gateway.${...? 'x' : 'y'}`. */
function writtenActions(): Set<string> {
  const out = new Set<string>();
  for (const f of files(SRC)) {
    const text = readFileSync(f, 'utf8');
    for (const m of text.matchAll(/accion: '([a-z_]+\.[a-z_]+)'/g)) out.add(m[1]!);
    for (const m of text.matchAll(/Audit\(\w+, '([a-z_]+\.[a-z_]+)'\)/g)) out.add(m[1]!);
    for (const m of text.matchAll(/accion: `([a-z_]+)\.\$\{[^}]*\? '([a-z_]+)' : '([a-z_]+)'\}`/g)) {
      out.add(`${m[1]}.${m[2]}`);
      out.add(`${m[1]}.${m[3]}`);
    }
  }
  return out;
}

describe('the audit actions', () => {
  it('every action the source writes is in the one list', () => {
    const written = writtenActions();
    // The scan finds the ones the walk missed, so it reads what it should.
    for (const a of ['mensaje.cancelar', 'mensaje.reintentar', 'celular.logout', 'celular.reiniciar', 'webhook.eliminar', 'gateway.drenar'])
      expect(written).toContain(a);
    expect([...written].filter((a) => !(AUDIT_ACCIONES as readonly string[]).includes(a))).toEqual([]);
  });

  it('admin audit --help and the API schema name each of them', async () => {
    const { io, stdout } = fakeIO();
    expect(await main(['admin', 'audit', '--help'], io, {})).toBe(0);
    const help = stdout().replace(/\s+/g, ' ');
    const described = (auditoriaQuerystring.properties.accion as { description?: string }).description ?? '';
    for (const a of AUDIT_ACCIONES) {
      expect(help, a).toContain(a);
      expect(described, a).toContain(a);
    }
  });
});

describe('a detalle in words', () => {
  it('a list of records (a retry: de, nuevo) reads as words, not JSON', () => {
    const detalle = {
      reintentados: 2,
      rechazados: 0,
      msg_ids: [
        { de: 'a1', nuevo: 'b1' },
        { de: 'a2', nuevo: 'b2' },
      ],
      vacios: [],
      ids: ['x', 'y'],
    };
    expect(detalleLines(detalle)).toEqual([
      { campo: 'reintentados', valor: '2' },
      { campo: 'rechazados', valor: '0' },
      { campo: 'msg_ids', valor: '(de a1, nuevo b1), (de a2, nuevo b2)' },
      { campo: 'vacios', valor: 'none' },
      { campo: 'ids', valor: 'x, y' },
    ]);
    expect(detalleText({ antes: { eventos: ['a', 'b'] }, despues: { eventos: null } })).toBe('eventos: a, b → —');
    expect(detalleText(detalle)).not.toMatch(/[{}"[\]]/);
  });
});
