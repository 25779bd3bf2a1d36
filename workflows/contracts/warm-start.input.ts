/** Validation and defaults of warm-start input (pure: runs inside the workflow). */
import { warmStartSources, type WarmStartSettings } from './warm-start.contract.js';
import { enumField, integerField, nestedField, numberField, objectInput, rejectUnknown, stringField, type Fields } from './validate.js';

export interface NormalizedWarmStartInput {
  readonly runId: string;
  readonly datasetKey: string;
  readonly startVersion: number;
  readonly settings: WarmStartSettings;
}

function parseSettings(value: Fields): WarmStartSettings {
  rejectUnknown(value, ['source', 'samplesPerQuestion', 'minReward', 'maxQuestions', 'concurrency', 'trajectoriesPerStep']);
  return {
    source: enumField(value, 'source', warmStartSources, 'gold'),
    samplesPerQuestion: integerField(value, 'samplesPerQuestion', { min: 1, max: 256, default: 4 }),
    minReward: numberField(value, 'minReward', { min: -1_000_000, max: 1_000_000, default: 1 }),
    maxQuestions: integerField(value, 'maxQuestions', { min: 1, max: 5000, default: 1000 }),
    concurrency: integerField(value, 'concurrency', { min: 1, max: 1000, default: 8 }),
    trajectoriesPerStep: integerField(value, 'trajectoriesPerStep', { min: 1, max: 4096, default: 256 }),
  };
}

export function parseWarmStartInput(raw: unknown): NormalizedWarmStartInput {
  const input = objectInput(raw, 'warmStart');
  rejectUnknown(input, ['runId', 'datasetKey', 'startVersion', 'settings', 'trajectory', 'hyperparameters']);
  nestedField(input, 'trajectory', (value) => value);
  nestedField(input, 'hyperparameters', (value) => value);
  return {
    runId: stringField(input, 'runId', { maxLength: 120 }),
    datasetKey: stringField(input, 'datasetKey', { maxLength: 1000 }),
    startVersion: integerField(input, 'startVersion', { min: 0, max: 1_000_000_000, default: 0 }),
    settings: nestedField(input, 'settings', parseSettings),
  };
}
