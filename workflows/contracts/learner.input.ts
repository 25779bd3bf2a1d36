/** Validation and defaults of learner input (pure: runs inside the workflow). */
import { parseEvaluationInput } from './evaluation.input.js';
import {
  batchSelections,
  learnerModes,
  type LearnerCurriculum,
  type LearnerEvaluationRequest,
  type LearnerSettings,
} from './learner.contract.js';
import {
  InputError,
  enumField,
  integerField,
  nestedField,
  numberField,
  objectInput,
  rejectUnknown,
  stringField,
  type Fields,
} from './validate.js';

export interface NormalizedLearnerInput {
  readonly runId: string;
  readonly datasetKey: string;
  readonly settings: LearnerSettings;
  readonly startVersion: number;
  readonly evaluation?: LearnerEvaluationRequest;
  readonly curriculum?: LearnerCurriculum;
  readonly stepsPerExecution?: number;
}

function booleanField(input: Fields, field: string, fallback: boolean): boolean {
  const value = input[field];
  if (value === undefined) return fallback;
  if (typeof value !== 'boolean') throw new InputError(field, `expected true or false, got ${JSON.stringify(value)}`);
  return value;
}

export function parseLearnerSettings(value: Fields): LearnerSettings {
  rejectUnknown(value, [
    'groupSize',
    'batchSize',
    'maxSteps',
    'eta',
    'maxInflight',
    'mode',
    'dropEqualRewardGroups',
    'selection',
    'interruptOnPublish',
  ]);
  const groupSize = integerField(value, 'groupSize', { min: 1, max: 256, default: 4 });
  const batchSize = integerField(value, 'batchSize', { min: 1, max: 100_000, default: 16 });
  if (batchSize % groupSize !== 0) throw new InputError('batchSize', `must be a multiple of groupSize (${groupSize}), got ${batchSize}`);
  const settings: LearnerSettings = {
    groupSize,
    batchSize,
    maxSteps: integerField(value, 'maxSteps', { min: 1, max: 1_000_000, default: 10 }),
    eta: integerField(value, 'eta', { min: 0, max: 1000, default: 4 }),
    maxInflight: integerField(value, 'maxInflight', { min: groupSize, max: 100_000, default: 2 * batchSize }),
    mode: enumField(value, 'mode', learnerModes, 'async'),
    dropEqualRewardGroups: booleanField(value, 'dropEqualRewardGroups', true),
    selection: enumField(value, 'selection', batchSelections, 'expiring'),
    interruptOnPublish: booleanField(value, 'interruptOnPublish', true),
  };
  if (settings.dropEqualRewardGroups && groupSize < 2)
    throw new InputError('groupSize', 'must be at least 2 when dropEqualRewardGroups is on (a group of one always has equal rewards)');
  return settings;
}

/** The learner's evaluation request: everyVersions ≥ 1, and the rest as the evaluation workflow will check it. */
export function parseLearnerEvaluation(value: Fields): LearnerEvaluationRequest {
  const everyVersions = integerField(value, 'everyVersions', { min: 1, max: 1_000_000 });
  const { everyVersions: _every, ...evaluation } = value;
  for (const field of ['resultId', 'policyVersion', 'runId', 'reproduces', 'corpusVersion', 'carried'])
    if (evaluation[field] !== undefined) throw new InputError(field, 'is set by the learner for each evaluation it starts; leave it out');
  parseEvaluationInput({ ...evaluation, resultId: 'learner-evaluation', policyVersion: 0 });
  return { ...(evaluation as unknown as Omit<LearnerEvaluationRequest, 'everyVersions'>), everyVersions };
}

/** The curriculum: a band 0 ≤ lower < upper ≤ 1 and counts ≥ 1 (LearnerCurriculum says what each means). */
export function parseLearnerCurriculum(value: Fields): LearnerCurriculum {
  rejectUnknown(value, ['activeSize', 'lower', 'upper', 'masteredAfter', 'tooHardAfter', 'passReward']);
  const curriculum: LearnerCurriculum = {
    activeSize: integerField(value, 'activeSize', { min: 1, max: 100_000, default: 8 }),
    lower: numberField(value, 'lower', { min: 0, max: 1, default: 0 }),
    upper: numberField(value, 'upper', { min: 0, max: 1, default: 1 }),
    masteredAfter: integerField(value, 'masteredAfter', { min: 1, max: 100_000, default: 2 }),
    tooHardAfter: integerField(value, 'tooHardAfter', { min: 1, max: 100_000, default: 2 }),
    passReward: numberField(value, 'passReward', { min: 0, max: 1, default: 0.5 }),
  };
  if (curriculum.lower >= curriculum.upper)
    throw new InputError(
      value.upper === undefined ? 'lower' : 'upper',
      `the band needs lower < upper, got lower ${curriculum.lower} and upper ${curriculum.upper}; e.g. lower 0.1, upper 0.9`,
    );
  return curriculum;
}

export function parseLearnerInput(raw: unknown): NormalizedLearnerInput {
  const input = objectInput(raw, 'learner');
  rejectUnknown(input, [
    'runId',
    'datasetKey',
    'settings',
    'trajectory',
    'hyperparameters',
    'startVersion',
    'evaluation',
    'curriculum',
    'stepsPerExecution',
    'carried',
  ]);
  if (input.eta !== undefined) throw new InputError('eta', 'belongs under settings');
  nestedField(input, 'trajectory', (value) => value);
  nestedField(input, 'hyperparameters', (value) => value);
  return {
    runId: stringField(input, 'runId', { maxLength: 120 }),
    datasetKey: stringField(input, 'datasetKey', { maxLength: 1000 }),
    settings: nestedField(input, 'settings', parseLearnerSettings),
    startVersion: integerField(input, 'startVersion', { min: 0, max: 1_000_000_000, default: 0 }),
    ...(input.evaluation !== undefined ? { evaluation: nestedField(input, 'evaluation', parseLearnerEvaluation) } : {}),
    ...(input.curriculum !== undefined ? { curriculum: nestedField(input, 'curriculum', parseLearnerCurriculum) } : {}),
    ...(input.stepsPerExecution !== undefined
      ? { stepsPerExecution: integerField(input, 'stepsPerExecution', { min: 1, max: 1_000_000 }) }
      : {}),
  };
}
