/** Validation and defaults of trajectory input (pure: runs inside the workflow). */
import {
  contextModes,
  defaultRewardFormatCredit,
  invalidPolicies,
  protocols,
  rewardFormatCredits,
  rewardMetrics,
  type FrozenObservations,
  type ForkLineage,
  type RewardFormatCredit,
  type RewardMetric,
  type TrajectoryLimits,
  type TrajectoryOptions,
} from './trajectory.contract.js';
import {
  InputError,
  booleanField,
  enumField,
  integerField,
  nestedField,
  numberField,
  objectInput,
  rejectUnknown,
  stringField,
  stringListField,
  type Fields,
} from './validate.js';

export interface NormalizedTrajectoryInput {
  readonly question: string;
  readonly answers: readonly string[];
  readonly questionId: string;
  readonly dataset: string;
  readonly runId: string;
  readonly policyVersion: number;
  readonly reportTo: string;
  readonly limits: TrajectoryLimits;
  readonly options: TrajectoryOptions;
  readonly rewardMetric: RewardMetric;
  /** The format term's weight in "f1_format" and "em_format". */
  readonly rewardFormatWeight: number;
  /** Which trajectories earn the format term. */
  readonly rewardFormatCredit: RewardFormatCredit;
  /** The reward of a trajectory without an answer, in [−1, 0]. */
  readonly rewardUnanswered: number;
  readonly forcedTurns: readonly string[];
  readonly scoreForcedTurns: boolean;
  readonly frozenObservations?: FrozenObservations;
  readonly forkOf?: ForkLineage;
}

function parseLimits(value: Fields): TrajectoryLimits {
  rejectUnknown(value, ['maxTurns', 'maxTotalTokens', 'maxNewTokensPerTurn', 'maxWallSeconds', 'maxRepeats', 'maxInvalidSteps']);
  return {
    maxTurns: integerField(value, 'maxTurns', { min: 1, max: 100_000, default: 200 }),
    maxTotalTokens: integerField(value, 'maxTotalTokens', { min: 1, max: 100_000_000, default: 200_000 }),
    maxNewTokensPerTurn: integerField(value, 'maxNewTokensPerTurn', { min: 1, max: 65_536, default: 512 }),
    maxWallSeconds: integerField(value, 'maxWallSeconds', { min: 1, max: 7 * 24 * 3600, default: 3600 }),
    maxRepeats: integerField(value, 'maxRepeats', { min: 0, max: 1000, default: 3 }),
    maxInvalidSteps: integerField(value, 'maxInvalidSteps', { min: 1, max: 100_000, default: 5 }),
  };
}

function parseOptions(value: Fields): TrajectoryOptions {
  rejectUnknown(value, [
    'protocol',
    'contextMode',
    'recentChars',
    'maxObservationChars',
    'maxCallsPerTurn',
    'onInvalid',
    'tools',
    'temperature',
    'seed',
    'localTools',
  ]);
  const tools = stringListField(value, 'tools', { maxItems: 32, maxLength: 64, default: ['search', 'access', 'answer'] });
  if (!tools.includes('answer')) throw new InputError('tools', 'must include "answer" (the agent has to be able to finish)');
  return {
    protocol: enumField(value, 'protocol', protocols, 'tags'),
    contextMode: enumField(value, 'contextMode', contextModes, 'full'),
    recentChars: integerField(value, 'recentChars', { min: 1000, max: 10_000_000, default: 25_000 }),
    maxObservationChars: integerField(value, 'maxObservationChars', { min: 100, max: 1_000_000, default: 5000 }),
    maxCallsPerTurn: integerField(value, 'maxCallsPerTurn', { min: 1, max: 16, default: 1 }),
    onInvalid: enumField(value, 'onInvalid', invalidPolicies, 'continue'),
    tools,
    temperature: numberField(value, 'temperature', { min: 0, max: 5, default: 0 }),
    seed: integerField(value, 'seed', { min: 0, max: 2 ** 31 - 1, default: 0 }),
    localTools: booleanField(value, 'localTools', true),
  };
}

function forcedTurnsField(input: Fields): string[] {
  const turns = stringListField(input, 'forcedTurns', { maxItems: 1000, maxLength: 100_000, default: [] });
  const empty = turns.findIndex((turn) => turn.trim() === '');
  if (empty >= 0)
    throw new InputError(
      `forcedTurns[${empty}]`,
      'is empty; give the full text of that turn (e.g. "<search>…</search>") or leave the turn out',
    );
  return turns;
}

function parseFrozenObservations(value: Fields): FrozenObservations {
  rejectUnknown(value, ['scope', 'corpusVersion']);
  return { scope: stringField(value, 'scope', { maxLength: 200 }), corpusVersion: stringField(value, 'corpusVersion', { maxLength: 200 }) };
}

function parseForkOf(value: Fields): ForkLineage {
  rejectUnknown(value, ['trajectoryId', 'turn']);
  return {
    trajectoryId: stringField(value, 'trajectoryId', { maxLength: 400 }),
    turn: integerField(value, 'turn', { min: 0, max: 100_000 }),
  };
}

export function parseTrajectoryInput(raw: unknown): NormalizedTrajectoryInput {
  const input = objectInput(raw, 'trajectory');
  rejectUnknown(input, [
    'question',
    'answers',
    'questionId',
    'dataset',
    'runId',
    'policyVersion',
    'reportTo',
    'limits',
    'options',
    'rewardMetric',
    'rewardFormatWeight',
    'rewardFormatCredit',
    'rewardUnanswered',
    'forcedTurns',
    'scoreForcedTurns',
    'frozenObservations',
    'forkOf',
    'carried',
  ]);
  return {
    question: stringField(input, 'question', { maxLength: 20_000 }),
    answers: stringListField(input, 'answers', { maxItems: 100, maxLength: 2000, default: [] }),
    questionId: input.questionId === undefined ? '' : stringField(input, 'questionId', { maxLength: 200 }),
    dataset: input.dataset === undefined ? '' : stringField(input, 'dataset', { maxLength: 200 }),
    runId: input.runId === undefined ? '' : stringField(input, 'runId', { maxLength: 200 }),
    reportTo: input.reportTo === undefined ? '' : stringField(input, 'reportTo', { maxLength: 400 }),
    policyVersion: integerField(input, 'policyVersion', { min: 0, max: 1_000_000_000, default: 0 }),
    limits: nestedField(input, 'limits', parseLimits),
    options: nestedField(input, 'options', parseOptions),
    rewardMetric: enumField(input, 'rewardMetric', rewardMetrics, 'f1'),
    rewardFormatWeight: numberField(input, 'rewardFormatWeight', { min: 0, max: 1, default: 0.1 }),
    rewardFormatCredit: enumField(input, 'rewardFormatCredit', rewardFormatCredits, defaultRewardFormatCredit),
    rewardUnanswered: numberField(input, 'rewardUnanswered', { min: -1, max: 0, default: 0 }),
    forcedTurns: forcedTurnsField(input),
    scoreForcedTurns: booleanField(input, 'scoreForcedTurns', true),
    ...(input.frozenObservations === undefined
      ? {}
      : { frozenObservations: nestedField(input, 'frozenObservations', parseFrozenObservations) }),
    ...(input.forkOf === undefined ? {} : { forkOf: nestedField(input, 'forkOf', parseForkOf) }),
  };
}
