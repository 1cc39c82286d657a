// @ts-check
import eslint from '@eslint/js';
import tseslint from 'typescript-eslint';
import { builtinModules } from 'node:module';

const nodeBuiltins = [...builtinModules, ...builtinModules.map((m) => `node:${m}`)];

export default tseslint.config(
  // TypeScript only: the few plain JS files are config and a jest environment.
  { ignores: ['dist/**', 'node_modules/**', '.data/**', 'coverage/**', '**/*.js', '**/*.mjs'] },
  eslint.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    // Workflow code is replayed: no Node built-ins, no engines, stores or other I/O modules.
    files: ['workflows/**/*.ts', 'src/domain/**/*.ts', 'src/tasks/**/*.ts', 'src/planact/**/*.ts', 'src/timeline/**/*.ts', 'src/tree/**/*.ts', 'src/horizon/**/*.ts', 'src/rl/dynamic-sampling.ts', 'src/rl/schedule.ts', 'src/config/schema.ts', 'src/config/agent-defaults.ts', 'src/config/parse.ts', 'src/config/errors.ts', 'src/config/recorded.ts', 'src/config/dependent-keys.ts', 'src/config/defaults.ts', 'src/contracts/**/*.ts', 'src/tracking/job-lines.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          paths: nodeBuiltins.map((name) => ({ name, message: 'workflow-reachable code must not import Node built-ins' })),
          patterns: [
            { group: ['**/src/engine/**', '**/src/store/**', '**/src/model/**', '@temporalio/worker', '@temporalio/client', '@tensorflow/*', 'onnxruntime-node'], message: 'workflow-reachable code must not import engines, stores, models or workers' },
            { group: ['**/activities/*', '!**/activities/*-types'], allowTypeImports: true, message: 'workflows import activities as types only' },
          ],
        },
      ],
      'no-restricted-globals': ['error', { name: 'setTimeout', message: 'use sleep() from @temporalio/workflow' }],
      'no-restricted-properties': [
        'error',
        { object: 'Math', property: 'random', message: 'use a seeded PRNG' },
        { object: 'Date', property: 'now', message: 'no wall clock in workflow-reachable code' },
      ],
    },
  },
);
