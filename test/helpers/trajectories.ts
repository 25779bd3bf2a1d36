/**
 * Test support: finished trajectories written the way finishTrajectory writes them (record blob +
 * row), with two turns of token ids, behaviour logprobs and versions the tiny model can train on.
 */
import type { BlobStore } from '../../activities/ports/blob-store.port.js';
import type { TrajectoryStore } from '../../activities/ports/trajectory-store.port.js';

export interface FakeTrajectory {
  readonly id: string;
  readonly questionId: string;
  readonly reward: number;
  /** Policy version of every generated token. */
  readonly version: number;
  /** Overrides for the first turn record (to break it on purpose). */
  readonly firstTurn?: Record<string, unknown>;
}

/** Write the record blob and the row; returns the record key. */
export async function writeTrajectory(
  stores: { blobs: BlobStore; trajectories: TrajectoryStore },
  runId: string,
  fake: FakeTrajectory,
): Promise<string> {
  const seed = [...fake.id].reduce((sum, character) => sum + character.charCodeAt(0), 0);
  const generated = (turn: number) => [100 + (seed % 50) + turn, 200 + turn, 300 + (seed % 7)];
  const prompt0 = [1, 2, 3, 40 + (seed % 9)];
  const prompt1 = [...prompt0, ...generated(0), 7, 8];
  const turnRecords = [
    {
      turn: 0,
      policyVersion: fake.version,
      promptTokenIds: prompt0,
      tokenIds: generated(0),
      logprobs: [-1.1, -0.7, -2.3],
      tokenVersions: [fake.version, fake.version, fake.version],
      text: 'a',
      ...fake.firstTurn,
    },
    {
      turn: 1,
      policyVersion: fake.version,
      promptTokenIds: prompt1,
      tokenIds: generated(1),
      logprobs: [-0.4, -1.9, -0.8],
      tokenVersions: [fake.version, fake.version, fake.version],
      text: 'b',
    },
  ];
  const recordKey = `trajectories/${fake.id}/record.json`;
  const record = {
    schema: 'longhaul.trajectory/1',
    trajectoryId: fake.id,
    runId,
    questionId: fake.questionId,
    reward: Number.isFinite(fake.reward) ? fake.reward : null,
    rewardParts: {},
    turnRecords,
  };
  await stores.blobs.put(recordKey, JSON.stringify(record), 'application/json');
  await stores.trajectories.insert({
    trajectoryId: fake.id,
    runId,
    dataset: 'test',
    questionId: fake.questionId,
    question: `question ${fake.questionId}`,
    answer: 'x',
    gold: ['x'],
    reward: fake.reward,
    rewardParts: {},
    stopReason: 'answered',
    turns: 2,
    invalidSteps: 0,
    generatedTokens: 6,
    versions: [fake.version],
    recordKey,
  });
  return recordKey;
}
