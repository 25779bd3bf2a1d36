/**
 * Reads a claimed batch (trajectory rows + record blobs) and turns it into engine samples, refusing
 * anything wrong with a LonghaulInvalidInput error before the engine is started.
 */
import { z } from 'zod';
import type { BlobStore } from '../../activities/ports/blob-store.port.js';
import type { TrajectoryStore } from '../../activities/ports/trajectory-store.port.js';
import type { RlSample, SftSample } from './manifest.js';
import { trainingRecordSchema, type TrainingRecord } from '../../activities/ports/trajectory-record.schema.js';
import { rlSamples, sftSamples, type SampleRules } from './samples.js';
import { errorTypes, LonghaulError } from '../../workflows/contracts/errors.js';

export interface BatchSource {
  readonly blobs: BlobStore;
  readonly trajectories: TrajectoryStore;
}

async function readRecord(source: BatchSource, runId: string, id: string, index: number): Promise<TrainingRecord> {
  const where = `trajectoryIds[${index}] (${id})`;
  let row;
  try {
    row = await source.trajectories.get(id);
  } catch (error) {
    if (!(error instanceof z.ZodError)) throw error;
    const issue = error.issues[0]!;
    throw new LonghaulError(errorTypes.invalidInput, `${where}: its stored row is invalid: ${issue.path.join('.')}: ${issue.message}`);
  }
  if (!row) throw new LonghaulError(errorTypes.invalidInput, `${where}: no finished trajectory with this id`);
  if (row.runId !== runId) throw new LonghaulError(errorTypes.invalidInput, `${where}: belongs to run "${row.runId}", not "${runId}"`);
  if (!Number.isFinite(row.reward))
    throw new LonghaulError(errorTypes.invalidInput, `${where}: reward is ${row.reward}, must be a finite number`);
  let document: unknown;
  try {
    document = JSON.parse((await source.blobs.get(row.recordKey)).toString('utf8'));
  } catch (error) {
    throw new LonghaulError(errorTypes.invalidInput, `${where}: record ${row.recordKey} is unreadable (${(error as Error).message})`);
  }
  const parsed = trainingRecordSchema.safeParse(document);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new LonghaulError(errorTypes.invalidInput, `${where}: record ${row.recordKey}: ${issue.path.join('.')}: ${issue.message}`);
  }
  return parsed.data;
}

/** The records of a batch, in order (read a few at a time). */
export async function readBatch(source: BatchSource, runId: string, ids: readonly string[]): Promise<TrainingRecord[]> {
  const records: TrainingRecord[] = [];
  for (let start = 0; start < ids.length; start += 16) {
    records.push(...(await Promise.all(ids.slice(start, start + 16).map((id, offset) => readRecord(source, runId, id, start + offset)))));
  }
  return records;
}

/** RL samples of a batch; with group normalisation every question must have ≥ 2 trajectories in it. */
export function batchRlSamples(records: readonly TrainingRecord[], rules: SampleRules, groupNormalise: boolean): RlSample[] {
  if (groupNormalise) {
    const sizes = new Map<string, number>();
    for (const record of records)
      sizes.set(record.questionId || record.trajectoryId, (sizes.get(record.questionId || record.trajectoryId) ?? 0) + 1);
    const lone = [...sizes].find(([, size]) => size < 2);
    if (lone)
      throw new LonghaulError(
        errorTypes.invalidInput,
        `trajectoryIds: question ${lone[0]} has ${lone[1]} trajectory in the batch, hyperparameters.ppo.groupNormalise needs at least 2 per group (G >= 2)`,
      );
  }
  const samples = records.flatMap((record, index) => rlSamples(record, `trajectoryIds[${index}] (${record.trajectoryId})`, rules));
  if (samples.length === 0)
    throw new LonghaulError(errorTypes.invalidInput, 'trajectoryIds: no trajectory has a generated token to train on');
  return samples;
}

export function batchSftSamples(records: readonly TrainingRecord[]): SftSample[] {
  const samples = records.flatMap((record, index) => sftSamples(record, `trajectoryIds[${index}] (${record.trajectoryId})`));
  if (samples.length === 0)
    throw new LonghaulError(errorTypes.invalidInput, 'trajectoryIds: no trajectory has a generated token to train on');
  return samples;
}
