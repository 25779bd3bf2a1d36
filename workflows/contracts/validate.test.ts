import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseSkeletonInput } from './skeleton.contract.js';
import { InputError } from './validate.js';

test('a valid skeleton input gets its defaults', () => {
  assert.deepEqual(parseSkeletonInput({ steps: 3 }), { steps: 3, stepDelayMs: 0, label: 'skeleton', startStep: 0 });
});

test('each bad skeleton input names its field', () => {
  const cases: [unknown, string][] = [
    [null, 'input'],
    [[1], 'input'],
    [{}, 'steps'],
    [{ steps: 0 }, 'steps'],
    [{ steps: 1.5 }, 'steps'],
    [{ steps: 2, stepDelayMs: -1 }, 'stepDelayMs'],
    [{ steps: 2, label: '' }, 'label'],
    [{ steps: 2, startStep: 3 }, 'startStep'],
    [{ steps: 2, extra: true }, 'extra'],
  ];
  for (const [input, field] of cases) {
    assert.throws(
      () => parseSkeletonInput(input),
      (error: unknown) => error instanceof InputError && error.field === field,
      `expected ${field} to be named for ${JSON.stringify(input)}`,
    );
  }
});

test('teacher-forced turns and warm-start settings are validated field by field', async () => {
  const { parseTrajectoryInput } = await import('./trajectory.input.js');
  const { parseWarmStartInput } = await import('./warm-start.input.js');
  assert.deepEqual(parseTrajectoryInput({ question: 'q?', forcedTurns: ['<answer>a</answer>'] }).forcedTurns, ['<answer>a</answer>']);
  assert.deepEqual(parseTrajectoryInput({ question: 'q?' }).forcedTurns, []);
  const settings = parseWarmStartInput({ runId: 'r', datasetKey: 'k' }).settings;
  assert.deepEqual(settings, {
    source: 'gold',
    samplesPerQuestion: 4,
    minReward: 1,
    maxQuestions: 1000,
    concurrency: 8,
    trajectoriesPerStep: 256,
  });
  const cases: [() => unknown, string][] = [
    [() => parseTrajectoryInput({ question: 'q?', forcedTurns: ['<search>x</search>', ' '] }), 'forcedTurns[1]'],
    [() => parseTrajectoryInput({ question: 'q?', forcedTurns: '<answer>a</answer>' }), 'forcedTurns'],
    [() => parseWarmStartInput({ runId: 'r' }), 'datasetKey'],
    [() => parseWarmStartInput({ runId: 'r', datasetKey: 'k', settings: { source: 'teacher' } }), 'settings.source'],
    [() => parseWarmStartInput({ runId: 'r', datasetKey: 'k', settings: { minReward: Number.NaN } }), 'settings.minReward'],
    [() => parseWarmStartInput({ runId: 'r', datasetKey: 'k', settings: { trajectoriesPerStep: 0 } }), 'settings.trajectoriesPerStep'],
    [() => parseWarmStartInput({ runId: 'r', datasetKey: 'k', hyperparameters: [] }), 'hyperparameters'],
    [() => parseWarmStartInput({ runId: 'r', datasetKey: 'k', epochs: 3 }), 'epochs'],
  ];
  for (const [parse, field] of cases) {
    assert.throws(parse, (error: unknown) => error instanceof InputError && error.field === field, `expected ${field} to be named`);
  }
});
