// Writes the generated files that are committed: completions/, openapi.json,
// docs/api-codigo.md and serve's settings table in docs/configuration.md. Run `npm run generate` after changing commands, route
// schemas or the error table; test/generated.test.ts fails when they drift.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { buildProgram } from '../dist/cli/main.js';
import { processIO } from '../dist/cli/io.js';
import { SHELLS } from '../dist/cli/completion.js';
import { apiCodigoMarkdown, openapiDocument } from '../dist/server/openapi.js';
import { configTableMarkdown } from '../dist/server/config-knobs.js';
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
// docs/configuration.md carries serve's settings table between two markers (the prose around it is written by hand).
const configUrl = new URL('../docs/configuration.md', import.meta.url);
const configDoc = readFileSync(configUrl, 'utf8');
const start = '<!-- serve-config:start -->\n';
const end = '<!-- serve-config:end -->';
const a = configDoc.indexOf(start);
const b = configDoc.indexOf(end);
if (a < 0 || b < a) throw new Error('docs/configuration.md lacks the serve-config markers');
writeFileSync(configUrl, configDoc.slice(0, a + start.length) + configTableMarkdown() + configDoc.slice(b));
console.log('wrote docs/configuration.md (the serve-config table)');
for (const [name, path] of Object.entries(GENERATED_FILES)) {
  writeFileSync(new URL(`../${path}`, import.meta.url), contents[name]);
  console.log(`wrote ${path}`);
}
