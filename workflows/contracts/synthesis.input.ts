/** Validation and defaults of the synthesis workflows' input (pure: runs inside the workflows and in the CLI's preflight). */
import { evidenceCheckModes, solverModes, synthesizerNames, type SynthesisSettings, type SynthesizerName } from './synthesis.contract.js';
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
  'solverMode',
  'solverMaxTurns',
  'llmBaseUrl',
  'llmModel',
  'llmAttempts',
  'alternativeAnswers',
  'evidenceCheck',
  'evidenceDistractors',
] as const;

/** An http(s) URL of an OpenAI-compatible server, ending in /v1 (pure: no URL global in the workflow sandbox needed). */
function endpointField(value: Fields, field: string): string | undefined {
  if (value[field] === undefined) return undefined;
  const url = stringField(value, field, { maxLength: 500 });
  if (!/^https?:\/\/[^\s/]+(\/[^\s]*)?$/.test(url) || !/\/v1\/?$/.test(url))
    throw new InputError(field, `expected an http(s) URL ending in /v1 such as http://127.0.0.1:8000/v1, got ${JSON.stringify(url)}`);
  return url.replace(/\/$/, '');
}

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
    solverMode: enumField(value, 'solverMode', solverModes, 'gold'),
    solverMaxTurns: integerField(value, 'solverMaxTurns', { min: 1, max: 1000, default: 32 }),
    ...(value.llmBaseUrl === undefined ? {} : { llmBaseUrl: endpointField(value, 'llmBaseUrl')! }),
    ...(value.llmModel === undefined ? {} : { llmModel: stringField(value, 'llmModel', { maxLength: 200 }) }),
    llmAttempts: integerField(value, 'llmAttempts', { min: 1, max: 8, default: 2 }),
    alternativeAnswers: integerField(value, 'alternativeAnswers', { min: 1, max: 200, default: 20 }),
    ...(value.evidenceCheck === undefined ? {} : { evidenceCheck: enumField(value, 'evidenceCheck', evidenceCheckModes, 'record') }),
    evidenceDistractors: integerField(value, 'evidenceDistractors', { min: 0, max: 20, default: 4 }),
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
