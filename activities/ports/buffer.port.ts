/**
 * Port: the training buffer (Postgres tables buffer_batches, buffer_uses over trajectories). Every
 * finished trajectory of a run is used at most once: consumed by exactly one training step, or
 * dropped. A step's claim is keyed by (runId, step), so a retried claim returns the same batch.
 */
export type { BatchSelection } from '../../workflows/contracts/learner.contract.js';
import type { BatchSelection } from '../../workflows/contracts/learner.contract.js';

export interface ClaimBatchRequest {
  readonly runId: string;
  readonly step: number;
  /** Trajectories per batch at most. */
  readonly batchSize: number;
  /** The learner's current policy version. */
  readonly currentVersion: number;
  /** Staleness bound η: a trajectory is eligible when its oldest token version ≥ currentVersion − η. */
  readonly eta: number;
  /**
   * freshest: newest oldest-token version first, then newest row. priority: groups by the mean of
   * |reward − group mean| · ln(e + generated tokens) (the seed's prioritised replay), highest first.
   * expiring: freshest, but groups this step is the last able to train (their oldest token at
   * currentVersion − η: stale after it) first, so that settled groups are not passed over until they go stale.
   */
  readonly selection: BatchSelection;
  /**
   * Whole groups (same question) only, and only groups with at least this many eligible
   * trajectories; a group is never split across steps. @default 1
   */
  readonly minGroupSize?: number;
}

export interface ClaimedBatch {
  readonly trajectoryIds: string[];
  /** False when this (runId, step) had claimed its batch before (a retry). */
  readonly claimedNow: boolean;
}

export interface BufferCounts {
  /** Finished trajectories of the run not yet consumed or dropped. */
  readonly unconsumed: number;
  /** Of those, how many are eligible at (currentVersion, eta). */
  readonly eligible: number;
  readonly consumed: number;
  /** Dropped for any reason; `droppedStale` of them as too stale. */
  readonly dropped: number;
  readonly droppedStale: number;
}

export interface TrajectoryBuffer {
  claimBatch(request: ClaimBatchRequest): Promise<ClaimedBatch>;
  /** Mark unconsumed trajectories dropped (never consumed later); already used ones are left alone. Returns how many were dropped now. */
  drop(runId: string, trajectoryIds: readonly string[], reason: string): Promise<number>;
  /** Drop every unconsumed trajectory of the run that is staler than η at currentVersion (it can only get staler). */
  releaseStale(runId: string, currentVersion: number, eta: number): Promise<number>;
  counts(runId: string, currentVersion: number, eta: number): Promise<BufferCounts>;
}
