/**
 * What a running workflow's pending activity last reported by heartbeat (e.g. the engine's
 * {"event":"progress","step":3,"of":12,"loss":…}), decoded with the client's data converter.
 * Used for progress bars of long activities; null when there is none or it cannot be read.
 */
import type { Client, WorkflowHandle } from '@temporalio/client';
import { decodeFromPayloadsAtIndex } from '@temporalio/common/lib/internal-non-workflow/index.js';

export interface EngineProgress {
  readonly event?: string;
  readonly phase?: string;
  readonly step?: number;
  readonly of?: number;
  readonly loss?: number;
  readonly tokens?: number;
  readonly elapsedSeconds?: number;
}

/** A workflow's pending activity of one type: its last heartbeat, and when it is being retried, why. */
export interface PendingActivity {
  readonly progress: EngineProgress | null;
  /** 1 on the first try. */
  readonly attempt: number;
  /** The last failure's message when the activity failed before and waits or runs again (e.g. a full disk). */
  readonly lastFailure: string | null;
}

export async function pendingActivity(client: Client, handle: WorkflowHandle, activityType: string): Promise<PendingActivity | null> {
  try {
    const description = await handle.describe();
    const pending = (description.raw.pendingActivities ?? []).find((activity) => activity.activityType?.name === activityType);
    if (!pending) return null;
    let progress: EngineProgress | null = null;
    if (pending.heartbeatDetails?.payloads?.length) {
      const details = await decodeFromPayloadsAtIndex<unknown>(client.options.loadedDataConverter, 0, pending.heartbeatDetails.payloads);
      progress = typeof details === 'object' && details !== null ? (details as EngineProgress) : null;
    }
    return { progress, attempt: pending.attempt ?? 1, lastFailure: pending.lastFailure?.message || null };
  } catch {
    return null;
  }
}

/**
 * "retrying (attempt 35): trainStep: disk: … has 6.8 GiB free …", cut to `width` characters; '' when the activity
 * has not failed. A step that waits on a retryable failure (a full disk, an engine that died) says so on the
 * progress line instead of "training" alone.
 */
export function describeRetry(pending: PendingActivity | null, width = 160): string {
  if (!pending?.lastFailure || pending.attempt <= 1) return '';
  const line = `retrying (attempt ${pending.attempt}): ${pending.lastFailure.replace(/\s+/g, ' ')}`;
  return line.length > width ? `${line.slice(0, width - 1)}…` : line;
}

/** The engine's progress, or why the activity is being retried. */
export function describePending(pending: PendingActivity | null): string {
  return describeRetry(pending) || describeProgress(pending?.progress ?? null);
}

/** "step 3/12 · loss 1.234 · 41 tok/s" from an engine progress heartbeat. */
export function describeProgress(progress: EngineProgress | null): string {
  if (!progress) return '';
  const parts: string[] = [];
  if (progress.event && progress.event !== 'progress') parts.push(progress.event);
  if (progress.step !== undefined && progress.of !== undefined) parts.push(`update ${progress.step}/${progress.of}`);
  if (typeof progress.loss === 'number') parts.push(`loss ${progress.loss.toFixed(3)}`);
  if (progress.tokens && progress.elapsedSeconds) parts.push(`${(progress.tokens / progress.elapsedSeconds).toFixed(0)} tok/s`);
  return parts.join(' · ');
}
