// Layer rules of docs/ARCHITECTURE.md, enforced in CI by `npm run lint`.
// Workflows run in Temporal's deterministic sandbox: they may import only @temporalio/workflow,
// pure code in workflows/ and activity *types*.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const nodeBuiltins = ['fs', 'path', 'os', 'crypto', 'child_process', 'net', 'http', 'https', 'stream', 'util', 'url', 'worker_threads', 'process', 'events', 'timers', 'dns', 'zlib', 'buffer'];

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', '.longhaul*/**', 'gpu/engine/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    rules: {
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    files: ['workflows/**/*.ts'],
    ignores: ['workflows/**/*.test.ts'],
    rules: {
      'no-restricted-imports': ['error', {
        paths: [
          ...nodeBuiltins.flatMap((name) => [
            { name, message: 'Workflows are deterministic: no Node built-ins (move I/O into an activity).' },
            { name: `node:${name}`, message: 'Workflows are deterministic: no Node built-ins (move I/O into an activity).' },
          ]),
          { name: 'pg', message: 'Workflows may not touch Postgres: use an activity.' },
          { name: 'minio', message: 'Workflows may not touch the blob store: use an activity.' },
          { name: 'zod', message: 'Keep zod out of workflow code (validate at the edge; see DESIGN §5).' },
          { name: 'onnxruntime-node', message: 'Inference runs in the gpu-infer worker, not in workflows.' },
          { name: '@temporalio/worker', message: 'Workflows import only @temporalio/workflow.' },
          { name: '@temporalio/client', message: 'Workflows import only @temporalio/workflow.' },
          { name: '@temporalio/activity', message: 'Workflows import only @temporalio/workflow.' },
        ],
        patterns: [
          { group: ['**/infra/**', '../infra/*', '../../infra/*'], message: 'Workflows may not import infra code.' },
          { group: ['**/workers/**', '**/cli/**'], message: 'Workflows may not import process wiring.' },
          { group: ['**/activities/**'], allowTypeImports: true, message: 'Workflows import activity *types* only (import type …).' },
          { group: ['node:*'], message: 'Workflows are deterministic: no Node built-ins.' },
        ],
      }],
    },
  },
  {
    files: ['activities/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', {
        patterns: [
          { group: ['**/workers/**', '**/cli/**'], message: 'Activities depend on ports, not on process wiring.' },
          { group: ['pg', 'minio'], message: 'Activities depend on ports (activities/ports); adapters live in infra/.' },
        ],
      }],
    },
  },
);
