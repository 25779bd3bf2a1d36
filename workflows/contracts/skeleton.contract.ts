/**
 * The skeleton trajectory: N steps, each an activity that writes one blob and one row. It exists to
 * prove durability end to end (kill -9 a worker mid-run: exactly N rows and N objects afterwards).
 */
import { defineQuery } from '@temporalio/workflow';
import { integerField, objectInput, rejectUnknown, stringField } from './validate.js';

export const skeletonWorkflowType = 'skeletonTrajectory';
export const payloadRoundTripWorkflowType = 'payloadRoundTrip';

export interface SkeletonInput {
  /** Number of steps. */
  readonly steps: number;
  /** Simulated work per step in milliseconds. @default 0 */
  readonly stepDelayMs?: number;
  /** Free-form label shown as the dataset search attribute. @default "skeleton" */
  readonly label?: string;
  /** Internal: first step to run, set by continue-as-new. @default 0 */
  readonly startStep?: number;
}

export interface SkeletonState {
  readonly completedSteps: number;
  readonly totalSteps: number;
  readonly lastBlobKey: string | null;
}

export interface SkeletonResult {
  readonly steps: number;
  readonly firstBlobKey: string | null;
  readonly lastBlobKey: string | null;
}

export interface RecordStepInput {
  readonly workflowId: string;
  readonly step: number;
  readonly delayMs: number;
}

export interface RecordStepResult {
  readonly blobKey: string;
  /** False when a retry found the row already written (the step ran before a crash). */
  readonly inserted: boolean;
}

export const skeletonStateQuery = defineQuery<SkeletonState>('state');

export function parseSkeletonInput(value: unknown): Required<SkeletonInput> {
  const input = objectInput(value, skeletonWorkflowType);
  rejectUnknown(input, ['steps', 'stepDelayMs', 'label', 'startStep']);
  const steps = integerField(input, 'steps', { min: 1, max: 100_000 });
  return {
    steps,
    stepDelayMs: integerField(input, 'stepDelayMs', { min: 0, max: 600_000, default: 0 }),
    label: stringField(input, 'label', { maxLength: 200, default: 'skeleton' }),
    startStep: integerField(input, 'startStep', { min: 0, max: steps, default: 0 }),
  };
}

export interface PayloadRoundTripInput {
  /** Size of the activity result to produce, in bytes. */
  readonly bytes: number;
}

export interface PayloadRoundTripResult {
  readonly payload: string;
  readonly sha256: string;
  readonly bytes: number;
}

export function parsePayloadRoundTripInput(value: unknown): PayloadRoundTripInput {
  const input = objectInput(value, payloadRoundTripWorkflowType);
  rejectUnknown(input, ['bytes']);
  return { bytes: integerField(input, 'bytes', { min: 1, max: 64 * 1024 * 1024 }) };
}
