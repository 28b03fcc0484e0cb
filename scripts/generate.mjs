// Writes the generated files that are committed: completions/, openapi.json and
// docs/api-codigo.md. Run `npm run generate` after changing commands, route
// schemas or the error table; test/generated.test.ts fails when they drift.
import { mkdirSync, writeFileSync } from 'node:fs';
import { buildProgram } from '../dist/cli/main.js';
import { processIO } from '../dist/cli/io.js';
import { SHELLS } from '../dist/cli/completion.js';
import { apiCodigoMarkdown, openapiDocument } from '../dist/server/openapi.js';
import { GENERATED_FILES } from '../dist/generated-files.js';

const program = buildProgram(processIO(), {});
const contents = {
  bash: SHELLS.bash(program),
  zsh: SHELLS.zsh(program),
  fish: SHELLS.fish(program),
  openapi: `${JSON.stringify(await openapiDocument(), null, 2)}\n`,
  apiCodigo: apiCodigoMarkdown(),
};
mkdirSync(new URL('../completions/', import.meta.url), { recursive: true });
mkdirSync(new URL('../docs/', import.meta.url), { recursive: true });
for (const [name, path] of Object.entries(GENERATED_FILES)) {
  writeFileSync(new URL(`../${path}`, import.meta.url), contents[name]);
  console.log(`wrote ${path}`);
}
