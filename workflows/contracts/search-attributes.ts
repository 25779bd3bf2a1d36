/**
 * Longhaul's custom search attributes, registered on the server by `longhaul up` and set by
 * workflows so the Web UI and `temporal workflow list --query` can filter on them.
 */
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

export const searchAttributes = {
  /** Which family of workflow: skeleton, trajectory, synthesis, learner, benchmark. */
  kind: defineSearchAttributeKey('LonghaulKind', SearchAttributeType.KEYWORD),
  /** Lifecycle: running, completed, failed, cancelled. */
  status: defineSearchAttributeKey('LonghaulStatus', SearchAttributeType.KEYWORD),
  runId: defineSearchAttributeKey('LonghaulRunId', SearchAttributeType.KEYWORD),
  dataset: defineSearchAttributeKey('LonghaulDataset', SearchAttributeType.KEYWORD),
  questionId: defineSearchAttributeKey('LonghaulQuestionId', SearchAttributeType.KEYWORD),
  /** Steps or turns completed so far. */
  turns: defineSearchAttributeKey('LonghaulTurns', SearchAttributeType.INT),
  reward: defineSearchAttributeKey('LonghaulReward', SearchAttributeType.DOUBLE),
  policyVersion: defineSearchAttributeKey('LonghaulPolicyVersion', SearchAttributeType.INT),
  meanReward: defineSearchAttributeKey('LonghaulMeanReward', SearchAttributeType.DOUBLE),
} as const;

const cliTypeNames = {
  [SearchAttributeType.KEYWORD]: 'Keyword',
  [SearchAttributeType.INT]: 'Int',
  [SearchAttributeType.DOUBLE]: 'Double',
} as const;

/** Name and `temporal` CLI type of each attribute, for registration. */
export const searchAttributeDefinitions: readonly { name: string; type: string }[] = Object.values(searchAttributes).map((key) => ({
  name: key.name,
  type: cliTypeNames[key.type as keyof typeof cliTypeNames],
}));
