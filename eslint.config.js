// Lint: typescript-eslint's type-checked recommendations on the whole tree (npm run lint; npm test runs it).
import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'completions/**', 'bench/results/**', '.pasarela-test/**', 'coverage/**', '.fakewa/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      globals: globals.node,
      parserOptions: { projectService: { allowDefaultProject: ['vitest.config.ts'] }, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      // A synchronous adapter (SQLite, the memory ports) implements an async port with `async`
      // methods that never await: a throw must still reach the caller as a rejection. Fastify
      // plugins are async by contract too.
      '@typescript-eslint/require-await': 'off',
      // `_name` marks what is deliberately unused (a destructured field left out of a copy).
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_' }],
    },
  },
  {
    // The server never reaches up into the CLI: what both use (exit codes, terminal text) sits in src/shared/.
    files: ['src/server/**/*.ts', 'src/core/**/*.ts', 'src/store/**/*.ts', 'src/shared/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [{ group: ['**/cli/**'], message: 'Move what is shared to src/shared/ or src/core/.' }] }] },
  },
  {
    // No cast that silences the types in the source: `x as unknown as T`, `as any`, `as never` (a guard or a declared type says it instead).
    files: ['src/**/*.ts'],
    rules: {
      'no-restricted-syntax': [
        'error',
        { selector: "TSAsExpression > TSAsExpression.expression[typeAnnotation.type='TSUnknownKeyword']", message: 'A double cast silences the types.' },
        { selector: "TSAsExpression[typeAnnotation.type='TSAnyKeyword']", message: '`as any` silences the types.' },
        { selector: "TSAsExpression[typeAnnotation.type='TSNeverKeyword']", message: '`as never` silences the types.' },
      ],
    },
  },
  {
    // Scripts and the shim are plain JavaScript: no type information to check against.
    files: ['**/*.js', '**/*.mjs', '**/*.cjs', 'bin/pasarela'],
    extends: [tseslint.configs.disableTypeChecked],
  },
  {
    // The panel's script runs in the browser, as a classic script.
    files: ['assets/panel/**/*.js'],
    languageOptions: { globals: globals.browser, sourceType: 'script' },
  },
  {
    // Preloaded with `node --require` (bench/pg-count.cjs): CommonJS by necessity.
    files: ['**/*.cjs'],
    languageOptions: { sourceType: 'commonjs' },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
  {
    // Tests read answers as untyped JSON from real HTTP and assert on them field by field.
    files: ['test/**/*.ts'],
    rules: {
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      '@typescript-eslint/no-explicit-any': 'off',
      // Terminal tests match colour and control sequences on purpose.
      'no-control-regex': 'off',
    },
  },
);
