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

export async function pendingActivityProgress(
  client: Client,
  handle: WorkflowHandle,
  activityType: string,
): Promise<EngineProgress | null> {
  try {
    const description = await handle.describe();
    const pending = (description.raw.pendingActivities ?? []).find((activity) => activity.activityType?.name === activityType);
    if (!pending?.heartbeatDetails?.payloads?.length) return null;
    const details = await decodeFromPayloadsAtIndex<unknown>(client.options.loadedDataConverter, 0, pending.heartbeatDetails.payloads);
    return typeof details === 'object' && details !== null ? (details as EngineProgress) : null;
  } catch {
    return null;
  }
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
