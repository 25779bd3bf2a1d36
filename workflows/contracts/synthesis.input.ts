/** Validation and defaults of the synthesis workflows' input (pure: runs inside the workflows and in the CLI's preflight). */
import { synthesizerNames, type SynthesisSettings, type SynthesizerName } from './synthesis.contract.js';
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

const SETTINGS_FIELDS = [
  'targetHops',
  'targetFuzzes',
  'maxRounds',
  'difficultySamples',
  'difficultyThreshold',
  'solverAttempts',
  'closedBookMaxTokens',
] as const;

export function parseSynthesisSettings(value: Fields): SynthesisSettings {
  rejectUnknown(value, SETTINGS_FIELDS);
  return {
    targetHops: integerField(value, 'targetHops', { min: 1, max: 8, default: 3 }),
    targetFuzzes: integerField(value, 'targetFuzzes', { min: 0, max: 8, default: 2 }),
    maxRounds: integerField(value, 'maxRounds', { min: 1, max: 64, default: 16 }),
    difficultySamples: integerField(value, 'difficultySamples', { min: 0, max: 256, default: 16 }),
    difficultyThreshold: numberField(value, 'difficultyThreshold', { min: 0, max: 1, default: 0.7 }),
    solverAttempts: integerField(value, 'solverAttempts', { min: 1, max: 16, default: 1 }),
    closedBookMaxTokens: integerField(value, 'closedBookMaxTokens', { min: 1, max: 4096, default: 64 }),
  };
}

const datasetIdPattern = /^[A-Za-z0-9._-]+$/;

function datasetIdField(input: Fields): string {
  const datasetId = stringField(input, 'datasetId', { maxLength: 120 });
  if (!datasetIdPattern.test(datasetId))
    throw new InputError('datasetId', `expected letters, digits, ".", "_" or "-" only, got ${JSON.stringify(datasetId)}`);
  return datasetId;
}

export interface NormalizedSynthesizeQuestionInput {
  readonly datasetId: string;
  readonly taskIndex: number;
  readonly seed: number;
  readonly synthesizer: SynthesizerName;
  readonly settings: SynthesisSettings;
}

export function parseSynthesizeQuestionInput(raw: unknown): NormalizedSynthesizeQuestionInput {
  const input = objectInput(raw, 'synthesizeQuestion');
  rejectUnknown(input, ['datasetId', 'taskIndex', 'seed', 'synthesizer', 'settings']);
  return {
    datasetId: datasetIdField(input),
    taskIndex: integerField(input, 'taskIndex', { min: 0, max: 100_000_000 }),
    seed: integerField(input, 'seed', { min: 0, max: 2 ** 31 - 1, default: 0 }),
    synthesizer: enumField(input, 'synthesizer', synthesizerNames, 'grounded'),
    settings: nestedField(input, 'settings', parseSynthesisSettings),
  };
}

export interface NormalizedSynthesisRunInput {
  readonly datasetId: string;
  readonly count: number;
  readonly seed: number;
  readonly synthesizer: SynthesizerName;
  readonly concurrency: number;
  readonly tasksPerExecution: number;
  readonly settings: SynthesisSettings;
}

export function parseSynthesisRunInput(raw: unknown): NormalizedSynthesisRunInput {
  const input = objectInput(raw, 'synthesisRun');
  rejectUnknown(input, ['datasetId', 'count', 'seed', 'synthesizer', 'concurrency', 'tasksPerExecution', 'settings', 'carried']);
  return {
    datasetId: datasetIdField(input),
    count: integerField(input, 'count', { min: 1, max: 10_000_000 }),
    seed: integerField(input, 'seed', { min: 0, max: 2 ** 31 - 1, default: 0 }),
    synthesizer: enumField(input, 'synthesizer', synthesizerNames, 'grounded'),
    concurrency: integerField(input, 'concurrency', { min: 1, max: 1000, default: 4 }),
    tasksPerExecution: integerField(input, 'tasksPerExecution', { min: 1, max: 100_000, default: 200 }),
    settings: nestedField(input, 'settings', parseSynthesisSettings),
  };
}
