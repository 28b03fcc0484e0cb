import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { buildProgram } from '../src/cli/main.js';
import { SHELLS } from '../src/cli/completion.js';
import { processIO } from '../src/cli/io.js';
import { GENERATED_FILES } from '../src/generated-files.js';
import { apiCodigoMarkdown, openapiDocument } from '../src/server/openapi.js';
import { configTableMarkdown } from '../src/server/config-knobs.js';

const committed = (path: string) => readFileSync(new URL(`../${path}`, import.meta.url), 'utf8');
const hint = 'run `npm run generate` and commit the result';

describe('generated files match their source', () => {
  const program = buildProgram(processIO(), {});
  for (const shell of ['bash', 'zsh', 'fish'] as const) {
    it(`${GENERATED_FILES[shell]} (${hint})`, () => {
      expect(committed(GENERATED_FILES[shell])).toBe(SHELLS[shell](program));
    });
  }
  it(`openapi.json (${hint})`, async () => {
    expect(JSON.parse(committed(GENERATED_FILES.openapi))).toEqual(await openapiDocument());
  });
  it(`docs/api-codigo.md (${hint})`, () => {
    expect(committed(GENERATED_FILES.apiCodigo)).toBe(apiCodigoMarkdown());
  });
  it(`docs/configuration.md's table is serve's settings table (server/config-knobs.ts; ${hint})`, () => {
    expect(committed('docs/configuration.md')).toContain(`<!-- serve-config:start -->\n${configTableMarkdown()}<!-- serve-config:end -->`);
  });
});
