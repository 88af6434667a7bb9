// ESLint 10 flat config: typescript-eslint's recommended rules (syntax only, no type information, so that a lint
// of the whole repository takes seconds) and a few of our own. Import boundaries and cycles are checked by
// dependency-cruiser (.dependency-cruiser.cjs); `npm run lint` runs both.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    ignores: ['**/node_modules/**', '**/dist/**', 'docs/api/**', 'coverage/**', '.cache/**', 'test/consumers/**', 'bench/peers/**', '**/*.d.ts'],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    // Nest reads constructor parameter types at run time (emitDecoratorMetadata): with these set, the type-imports
    // rule leaves files with decorators alone, where a class used only as a parameter type must stay a value import.
    languageOptions: { parserOptions: { emitDecoratorMetadata: true, experimentalDecorators: true } },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
      '@typescript-eslint/consistent-type-imports': [
        'error',
        // `typeof import('…')` stays allowed: the bench types a module it loads by path from the built package.
        { prefer: 'type-imports', fixStyle: 'inline-type-imports', disallowTypeAnnotations: false },
      ],
      '@typescript-eslint/no-explicit-any': 'error',
      // Declared for Nest's dependency injection, whose classes may be empty; and interfaces merged with a class.
      '@typescript-eslint/no-extraneous-class': 'off',
      '@typescript-eslint/no-unsafe-declaration-merging': 'off',
    },
  },
  {
    // A library file a reader takes in at one sitting, blank and comment lines counted; the engine stays a thin facade.
    files: ['libs/amqp-retry/src/**/*.ts'],
    ignores: ['**/*.spec.ts', '**/*.fixture.ts', 'libs/amqp-retry/src/ops/dashboard/client/**'],
    rules: { 'max-lines': ['error', { max: 400, skipBlankLines: false, skipComments: false }] },
  },
  {
    files: ['libs/amqp-retry/src/engine/retry.engine.ts'],
    rules: { 'max-lines': ['error', { max: 249, skipBlankLines: false, skipComments: false }] },
  },
  {
    files: ['**/*.{js,mjs,cjs}'],
    rules: { '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', ignoreRestSiblings: true, caughtErrors: 'none' }] },
  },
  {
    // Tests and benchmarks may reach into values they build on purpose (hostile inputs, private fields).
    files: ['test/**/*.ts', 'bench/**/*.ts', '**/*.spec.ts', '**/*.e2e-spec.ts', '**/*.chaos-spec.ts'],
    rules: {
      '@typescript-eslint/no-explicit-any': 'off',
    },
  },
  {
    files: ['**/*.{js,mjs,cjs}'],
    languageOptions: {
      globals: {
        process: 'readonly',
        console: 'readonly',
        module: 'writable',
        require: 'readonly',
        URL: 'readonly',
        setTimeout: 'readonly',
        clearTimeout: 'readonly',
        Buffer: 'readonly',
      },
    },
  },
);
