/** Validation and defaults of evaluation input (pure: runs inside the workflow and in the CLI's preflight). */
import { InputError, integerField, objectInput, rejectUnknown, stringField, type Fields } from './validate.js';
import { parseTrajectoryInput } from './trajectory.input.js';
import type { TrajectorySettings } from './trajectory.contract.js';

export interface NormalizedEvaluationInput {
  readonly resultId: string;
  readonly datasetKey: string;
  readonly dataset: string;
  readonly datasetVersion: string;
  readonly questions: number;
  readonly k: number;
  readonly concurrency: number;
  readonly policyVersion: number;
  readonly trajectory: TrajectorySettings;
  readonly judge: boolean;
  readonly seed: number;
  readonly runId?: string;
  readonly reproduces?: string;
  readonly corpusVersion?: string;
  readonly commit?: string;
}

function optionalString(input: Fields, field: string, maxLength: number): string | undefined {
  return input[field] === undefined ? undefined : stringField(input, field, { maxLength });
}

export function parseEvaluationInput(raw: unknown): NormalizedEvaluationInput {
  const input = objectInput(raw, 'evaluation');
  rejectUnknown(input, [
    'resultId',
    'datasetKey',
    'dataset',
    'datasetVersion',
    'questions',
    'k',
    'concurrency',
    'policyVersion',
    'trajectory',
    'judge',
    'seed',
    'runId',
    'reproduces',
    'corpusVersion',
    'commit',
    'carried',
  ]);
  const resultId = stringField(input, 'resultId', { maxLength: 120 });
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(resultId))
    throw new InputError(
      'resultId',
      `use letters, digits, ".", "_" and "-" (it names blobs and workflows), got ${JSON.stringify(resultId)}`,
    );
  const k = integerField(input, 'k', { min: 1, max: 256, default: 1 });
  const concurrency = integerField(input, 'concurrency', { min: 1, max: 10_000, default: 8 });
  if (input.judge !== undefined && typeof input.judge !== 'boolean')
    throw new InputError('judge', `expected true or false, got ${JSON.stringify(input.judge)}`);
  const trajectory = (input.trajectory ?? {}) as TrajectorySettings;
  try {
    // The samples' settings are checked as the trajectories will check them.
    parseTrajectoryInput({ question: 'evaluation preflight', ...objectInput(trajectory, 'trajectory') });
  } catch (error) {
    if (error instanceof InputError) throw new InputError(`trajectory.${error.field}`, error.detail);
    throw error;
  }
  const optional = {
    runId: optionalString(input, 'runId', 200),
    reproduces: optionalString(input, 'reproduces', 120),
    corpusVersion: optionalString(input, 'corpusVersion', 200),
    commit: optionalString(input, 'commit', 100),
  };
  return {
    resultId,
    datasetKey: stringField(input, 'datasetKey', { maxLength: 1000 }),
    dataset: stringField(input, 'dataset', { maxLength: 200 }),
    datasetVersion: stringField(input, 'datasetVersion', { maxLength: 200 }),
    questions: integerField(input, 'questions', { min: 1, max: 10_000_000 }),
    k,
    concurrency,
    policyVersion: integerField(input, 'policyVersion', { min: 0, max: 1_000_000_000 }),
    trajectory,
    judge: input.judge === true,
    seed: integerField(input, 'seed', { min: 0, max: 2 ** 31 - 1, default: 0 }),
    ...Object.fromEntries(Object.entries(optional).filter(([, value]) => value !== undefined)),
  };
}
