import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { PolicyVersionRow } from '../../activities/ports/policy-version-store.port.js';
import { planRetention } from './version-retention.js';

const row = (version: number, options: { runId?: string; prefix?: string; pruned?: boolean; bytes?: number } = {}): PolicyVersionRow => ({
  version,
  name: 'm',
  blobPrefix: options.prefix ?? `policies/${options.runId ?? 'base'}/v${version}/`,
  files: [
    { name: 'model.safetensors', bytes: options.bytes ?? 100, sha256: 'a' },
    { name: 'model.onnx.data', bytes: options.bytes ?? 100, sha256: 'b' },
  ],
  manifest: options.runId ? { training: { runId: options.runId, step: version, kind: 'rl', baseVersion: version - 1, metrics: {} } } : {},
  parentVersion: version === 0 ? null : version - 1,
  prunedAt: options.pruned ? new Date(0) : null,
});

test('prune keeps untrained, last-of-run, evaluated, named and latest versions, and files a kept fork shares', () => {
  const rows = [
    row(0),
    ...[1, 2, 3, 4].map((version) => row(version, { runId: 'warm' })),
    // A fork of v2 (untrained, shares v2's files), then an RL run from it.
    row(5, { prefix: 'policies/warm/v2/' }),
    ...[6, 7, 8, 9, 10].map((version) => row(version, { runId: 'rl' })),
    row(11, { runId: 'rl2', pruned: true }),
    row(12, { runId: 'rl2' }),
  ];
  const plan = planRetention(rows, { keepLast: 2, keep: [7], evaluated: [6] });
  const reasons = Object.fromEntries(plan.kept.map((kept) => [kept.version, kept.reason]));
  assert.deepEqual(reasons, {
    0: 'untrained',
    4: 'last of its run',
    5: 'untrained',
    6: 'evaluated',
    7: 'named',
    10: 'last of its run',
    11: 'pruned already',
    12: 'last of its run',
  });
  assert.deepEqual(
    plan.pruned.map((entry) => [entry.row.version, entry.deleteFiles]),
    [
      [1, true],
      [2, false], // the kept fork v5 reads these files
      [3, true],
      [8, true],
      [9, true],
    ],
  );
  assert.equal(plan.freedBytes, 4 * 200);
  assert.deepEqual(
    planRetention(rows, { keepLast: 100 }).pruned.map((entry) => entry.row.version),
    [],
    'keepLast beyond the registry keeps all',
  );
});
