import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Context } from '@temporalio/activity';
import { z } from 'zod';
import type { BlobStore } from './ports/blob-store.port.js';
import type { SkeletonStepStore } from './ports/skeleton-step-store.port.js';
import type { RecordStepInput, RecordStepResult } from '../workflows/contracts/skeleton.contract.js';
import { parseActivityInput } from './activity-input.js';

const recordStepSchema = z.object({ workflowId: z.string().min(1), step: z.number().int().min(0), delayMs: z.number().int().min(0) });

export interface SkeletonDependencies {
  readonly blobs: BlobStore;
  readonly steps: SkeletonStepStore;
}

export function createSkeletonActivities({ blobs, steps }: SkeletonDependencies) {
  return {
    /** Idempotent by (workflowId, step): the blob is overwritten with identical bytes, the row inserted once. */
    async recordStep(rawInput: RecordStepInput): Promise<RecordStepResult> {
      const input = parseActivityInput('recordStep', recordStepSchema, rawInput);
      if (input.delayMs > 0) await sleep(input.delayMs);
      const blobKey = `skeleton/${input.workflowId}/${String(input.step).padStart(6, '0')}.json`;
      const body = JSON.stringify({ workflowId: input.workflowId, step: input.step });
      await blobs.put(blobKey, body, 'application/json');
      const { inserted } = await steps.record({
        workflowId: input.workflowId,
        step: input.step,
        blobKey,
        attempt: Context.current().info.attempt,
      });
      return { blobKey, inserted };
    },

    /** A deterministic text of exactly `bytes` ASCII bytes. */
    async makePayload(rawInput: { bytes: number }): Promise<string> {
      const { bytes } = parseActivityInput(
        'makePayload',
        z.object({
          bytes: z
            .number()
            .int()
            .min(1)
            .max(64 * 1024 * 1024),
        }),
        rawInput,
      );
      const line = 'longhaul large payload line 0123456789abcdefghijklmnopqrstuvwxyz\n';
      return line.repeat(Math.ceil(bytes / line.length)).slice(0, bytes);
    },

    async digestPayload(rawInput: { payload: string }): Promise<{ sha256: string; bytes: number }> {
      const { payload } = parseActivityInput('digestPayload', z.object({ payload: z.string() }), rawInput);
      return { sha256: createHash('sha256').update(payload).digest('hex'), bytes: Buffer.byteLength(payload) };
    },
  };
}

export type SkeletonActivities = ReturnType<typeof createSkeletonActivities>;
