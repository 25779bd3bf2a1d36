import { continueAsNew, proxyActivities, setHandler, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import type { SkeletonActivities } from '../activities/skeleton.activities.js';
import { skeletonActivityOptions } from './contracts/activity-options.js';
import { searchAttributes } from './contracts/search-attributes.js';
import {
  parsePayloadRoundTripInput,
  parseSkeletonInput,
  skeletonStateQuery,
  type PayloadRoundTripResult,
  type SkeletonResult,
} from './contracts/skeleton.contract.js';
import { validated } from './validated.js';

// A short start-to-close: when a worker dies mid-step, the step is retried on another within seconds.
const { recordStep, makePayload, digestPayload } = proxyActivities<SkeletonActivities>(skeletonActivityOptions);

export async function skeletonTrajectory(rawInput: unknown): Promise<SkeletonResult> {
  const input = validated(() => parseSkeletonInput(rawInput));
  let completed = input.startStep;
  let lastBlobKey: string | null = null;
  let firstBlobKey: string | null = null;
  setHandler(skeletonStateQuery, () => ({ completedSteps: completed, totalSteps: input.steps, lastBlobKey }));
  upsertSearchAttributes([
    { key: searchAttributes.kind, value: 'skeleton' },
    { key: searchAttributes.dataset, value: input.label },
    { key: searchAttributes.status, value: 'running' },
  ]);
  const { workflowId } = workflowInfo();
  while (completed < input.steps) {
    const result = await recordStep({ workflowId, step: completed, delayMs: input.stepDelayMs });
    if (completed === 0) firstBlobKey = result.blobKey;
    lastBlobKey = result.blobKey;
    completed += 1;
    upsertSearchAttributes([{ key: searchAttributes.turns, value: completed }]);
    if (completed < input.steps && workflowInfo().continueAsNewSuggested) {
      await continueAsNew<typeof skeletonTrajectory>({ ...input, startStep: completed });
    }
  }
  upsertSearchAttributes([{ key: searchAttributes.status, value: 'completed' }]);
  return { steps: completed, firstBlobKey, lastBlobKey };
}

/** A large activity result passes through a workflow: history holds only a blob reference. */
export async function payloadRoundTrip(rawInput: unknown): Promise<PayloadRoundTripResult> {
  const input = validated(() => parsePayloadRoundTripInput(rawInput));
  upsertSearchAttributes([{ key: searchAttributes.kind, value: 'payload-round-trip' }]);
  const payload = await makePayload({ bytes: input.bytes });
  const digest = await digestPayload({ payload });
  return { payload, ...digest };
}
