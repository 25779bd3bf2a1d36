/**
 * The learner's buffer activities (agent queue): claim a step's batch (a retry of the same step gets
 * the same trajectories; no trajectory is ever in two steps), drop trajectories, release the ones
 * too stale to ever be used, and count what is there. Inputs are validated; a bad one fails
 * without retrying, naming the field.
 */
import { z } from 'zod';
import type { BufferCounts, ClaimedBatch, TrajectoryBuffer } from './ports/buffer.port.js';
import { parseActivityInput } from './activity-input.js';
import { batchSelections } from '../workflows/contracts/learner.contract.js';

const runId = z.string().min(1).max(200);
const version = z.number().int().min(0);
const eta = z.number().int().min(0);

const claimSchema = z
  .object({
    runId,
    step: z.number().int().min(0),
    batchSize: z.number().int().min(1).max(100_000),
    currentVersion: version,
    eta,
    selection: z.enum(batchSelections).default('expiring'),
    minGroupSize: z.number().int().min(1).optional(),
  })
  .strict();
const dropSchema = z.object({ runId, trajectoryIds: z.array(z.string().min(1)).max(100_000), reason: z.string().min(1).max(200) }).strict();
const staleSchema = z.object({ runId, currentVersion: version, eta }).strict();

export function createBufferActivities({ buffer }: { buffer: TrajectoryBuffer }) {
  return {
    /** The batch of training step `step`: claimed now, or the one this step claimed before. Empty when nothing is eligible yet. */
    async claimBatch(raw: unknown): Promise<ClaimedBatch> {
      return buffer.claimBatch(parseActivityInput('claimBatch', claimSchema, raw));
    },
    /** Drop trajectories (e.g. a group whose rewards are all equal); used ones stay as they are. */
    async dropTrajectories(raw: unknown): Promise<{ dropped: number }> {
      const input = parseActivityInput('dropTrajectories', dropSchema, raw);
      return { dropped: await buffer.drop(input.runId, input.trajectoryIds, input.reason) };
    },
    /** Drop every unconsumed trajectory staler than η at currentVersion. */
    async releaseStaleTrajectories(raw: unknown): Promise<{ dropped: number }> {
      const input = parseActivityInput('releaseStaleTrajectories', staleSchema, raw);
      return { dropped: await buffer.releaseStale(input.runId, input.currentVersion, input.eta) };
    },
    async bufferCounts(raw: unknown): Promise<BufferCounts> {
      const input = parseActivityInput('bufferCounts', staleSchema, raw);
      return buffer.counts(input.runId, input.currentVersion, input.eta);
    },
  };
}

export type BufferActivities = ReturnType<typeof createBufferActivities>;
