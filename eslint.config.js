// Layer rules of docs/ARCHITECTURE.md, enforced in CI by `npm run lint`.
// Workflows run in Temporal's deterministic sandbox: they may import only @temporalio/workflow,
// pure code in workflows/ and activity *types*.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const nodeBuiltins = [
  'fs',
  'path',
  'os',
  'crypto',
  'child_process',
  'net',
  'http',
  'https',
  'stream',
  'util',
  'url',
  'worker_threads',
  'process',
  'events',
  'timers',
  'dns',
  'zlib',
  'buffer',
];

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
      'no-restricted-imports': [
        'error',
        {
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
            {
              group: ['**/workers/**', '**/cli/**', '**/composition/**', '**/bench/**', '**/corpus/**', '**/gpu/**', '**/test/**'],
              message: 'Workflows may not import process wiring, adapters, benchmarks or tests.',
            },
            { group: ['**/activities/**'], allowTypeImports: true, message: 'Workflows import activity *types* only (import type …).' },
            { group: ['node:*'], message: 'Workflows are deterministic: no Node built-ins.' },
          ],
        },
      ],
    },
  },
  // The arrows between rooms (docs/ARCHITECTURE.md, "Layers"). Tests next to their code are exempt.
  restrict('activities/**/*.ts', [
    {
      group: ['**/workers/**', '**/cli/**', '**/composition/**', '**/bench/**', '**/corpus/**', '**/test/**'],
      message: 'Activities depend on ports, not on process wiring, benchmarks or test doubles.',
    },
    {
      group: ['**/infra/**', '**/gpu/**'],
      message: 'Activities depend on ports (activities/ports); adapters live in infra/ and gpu/ and are wired in composition/.',
    },
    { group: ['pg', 'minio'], message: 'Activities depend on ports (activities/ports); adapters live in infra/.' },
  ]),
  restrict('infra/**/*.ts', [
    {
      regex: '(^|/)activities/(?!ports/)',
      message: 'infra/ holds adapters: it may import ports (activities/ports) and contracts, not activities.',
    },
    {
      group: ['**/gpu/**', '**/workers/**', '**/cli/**', '**/composition/**', '**/bench/**', '**/corpus/**', '**/test/**'],
      message: 'infra/ holds adapters and machinery: it imports only ports, contracts and itself (composition/ wires it to the rest).',
    },
    { regex: '(^|/)workflows/(?!contracts/)', message: 'infra/ may import workflow contracts only.' },
  ]),
  restrict('gpu/**/*.ts', [
    {
      group: ['**/infra/config.js', '**/infra/config'],
      message: 'gpu/ does not read configuration: take settings as arguments (composition/ reads the config).',
    },
    {
      group: ['**/workers/**', '**/cli/**', '**/composition/**', '**/bench/**', '**/corpus/**', '**/test/**'],
      message: 'gpu/ is driven by composition/ and workers/, never the other way.',
    },
  ]),
  restrict('corpus/**/*.ts', [
    {
      group: ['**/workers/**', '**/cli/**', '**/composition/**', '**/bench/**', '**/test/**', '**/gpu/**'],
      message: 'corpus/ builds corpora and knowledge bases from adapters and ports only.',
    },
  ]),
  restrict('composition/**/*.ts', [
    {
      group: ['**/workers/**', '**/cli/**', '**/bench/**'],
      message: 'composition/ wires adapters for workers/ and cli/; it does not import them.',
    },
    { regex: '(^|/)test/(?!doubles/)', message: 'Only test doubles (test/doubles) may be wired into production code.' },
  ]),
  restrict('bench/**/*.ts', [
    { group: ['**/workers/**', '**/cli/**'], message: 'Benchmarks are driven by the CLI; they wire through composition/.' },
    { regex: '(^|/)test/(?!doubles/)', message: 'Benchmarks may use test doubles (test/doubles), not tests.' },
  ]),
  restrict('workers/**/*.ts', [
    {
      group: ['**/cli/**', '**/bench/**', '**/test/**'],
      message: 'Workers are process entry points: wiring from composition/, no CLI, benchmarks or tests.',
    },
  ]),
  restrict('cli/**/*.ts', [
    { group: ['**/workers/**'], message: 'The CLI starts workers as processes (infra/services) or in process through composition/.' },
    { group: ['**/test/**'], message: 'The CLI does not import tests or test doubles (benchmarks wire those).' },
  ]),
);

/** A no-restricted-imports rule for one room, its tests exempt. */
function restrict(files, patterns) {
  return { files: [files], ignores: ['**/*.test.ts'], rules: { 'no-restricted-imports': ['error', { patterns }] } };
}
