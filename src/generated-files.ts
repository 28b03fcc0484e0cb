/** Committed files generated from the source (see scripts/generate.mjs). */
export const GENERATED_FILES = {
  bash: 'completions/pasarela.bash',
  zsh: 'completions/_pasarela',
  fish: 'completions/pasarela.fish',
  openapi: 'openapi.json',
  apiCodigo: 'docs/api-codigo.md',
} as const;
