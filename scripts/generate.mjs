// Writes the generated files that are committed: completions/, openapi.json,
// docs/api-codigo.md and the README's tables. Run `npm run generate` after changing commands, route
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
// The README carries the api_codigo table and serve's configuration table, each between two markers.
const readmeUrl = new URL('../README.md', import.meta.url);
let readme = readFileSync(readmeUrl, 'utf8');
for (const [marker, table] of [
  ['api_codigo', contents.apiCodigo],
  ['serve-config', configTableMarkdown()],
]) {
  const start = `<!-- ${marker}:start -->\n`;
  const end = `<!-- ${marker}:end -->`;
  const a = readme.indexOf(start);
  const b = readme.indexOf(end);
  if (a < 0 || b < a) throw new Error(`README.md lacks the ${marker} markers`);
  readme = readme.slice(0, a + start.length) + table + readme.slice(b);
}
writeFileSync(readmeUrl, readme);
console.log('wrote README.md (api_codigo and serve-config tables)');
for (const [name, path] of Object.entries(GENERATED_FILES)) {
  writeFileSync(new URL(`../${path}`, import.meta.url), contents[name]);
  console.log(`wrote ${path}`);
}
