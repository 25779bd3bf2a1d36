/**
 * Which policy versions' blob-store files may be deleted (`longhaul model prune`). Every training
 * step publishes a whole model (≈ 0.7–1.2 GB for SmolLM2-135M), and a run's intermediate versions are
 * needed only while it trains from them. Kept, always: versions no run trained (prepared models;
 * forks share their base's files), the last version of each training run (a warm start's or a
 * learner's result, what `--resume` and the demo's evaluations start from), versions an evaluation
 * measured (`eval --reproduce` and the reports load them), the highest `keepLast`, and those named.
 * A pruned version keeps its row (lineage, manifest, training metrics) with `pruned_at` set.
 */
import type { BlobStore } from '../../activities/ports/blob-store.port.js';
import type { PolicyVersionRow, PolicyVersionStore } from '../../activities/ports/policy-version-store.port.js';
import { trainingOf } from './version-files.js';
import { versionBytes } from '../infer/policy-store.js';

export type KeepReason = 'untrained' | 'last of its run' | 'evaluated' | 'latest' | 'named' | 'pruned already';

export interface RetentionOptions {
  /** The highest versions kept whatever they are. */
  readonly keepLast: number;
  /** Versions kept by name. */
  readonly keep?: readonly number[];
  /** Versions an evaluation measured. */
  readonly evaluated?: readonly number[];
}

export interface RetentionPlan {
  readonly kept: readonly { readonly version: number; readonly reason: KeepReason }[];
  /** deleteFiles: false when a kept version shares the files (a fork). */
  readonly pruned: readonly { readonly row: PolicyVersionRow; readonly deleteFiles: boolean }[];
  /** Bytes of the files deleted. */
  readonly freedBytes: number;
}

/** Decide, from the registry's rows alone, what `model prune` deletes (pure). */
export function planRetention(rows: readonly PolicyVersionRow[], options: RetentionOptions): RetentionPlan {
  const lastOfRun = new Map<string, number>();
  for (const row of rows) {
    const runId = trainingOf(row)?.runId;
    if (runId !== undefined) lastOfRun.set(runId, Math.max(lastOfRun.get(runId) ?? -1, row.version));
  }
  const latest = new Set(
    [...rows]
      .sort((left, right) => right.version - left.version)
      .slice(0, options.keepLast)
      .map((row) => row.version),
  );
  const named = new Set(options.keep ?? []);
  const evaluated = new Set(options.evaluated ?? []);
  const reasonOf = (row: PolicyVersionRow): KeepReason | undefined => {
    if (row.prunedAt) return 'pruned already';
    const training = trainingOf(row);
    if (training === undefined) return 'untrained';
    if (lastOfRun.get(training.runId) === row.version) return 'last of its run';
    if (named.has(row.version)) return 'named';
    if (evaluated.has(row.version)) return 'evaluated';
    if (latest.has(row.version)) return 'latest';
    return undefined;
  };
  const kept: { version: number; reason: KeepReason }[] = [];
  const doomed: PolicyVersionRow[] = [];
  const keptPrefixes = new Set<string>();
  for (const row of rows) {
    const reason = reasonOf(row);
    if (reason === undefined) doomed.push(row);
    else kept.push({ version: row.version, reason });
    if (reason !== undefined && reason !== 'pruned already') keptPrefixes.add(row.blobPrefix);
  }
  const pruned = doomed.map((row) => ({ row, deleteFiles: !keptPrefixes.has(row.blobPrefix) }));
  const freedBytes = pruned.filter((entry) => entry.deleteFiles).reduce((sum, entry) => sum + versionBytes(entry.row), 0);
  return { kept, pruned, freedBytes };
}

/**
 * Delete the plan's files (a prefix a kept version shares stays) and mark each row pruned. The row
 * is marked after its files are gone, so an interrupted prune is finished by the next one.
 */
export async function applyRetention(
  stores: { blobs: BlobStore; versions: PolicyVersionStore },
  plan: RetentionPlan,
  onVersion?: (row: PolicyVersionRow) => void,
): Promise<void> {
  for (const { row, deleteFiles } of plan.pruned) {
    if (deleteFiles) for (const file of row.files) await stores.blobs.delete(row.blobPrefix + file.name);
    await stores.versions.markPruned(row.version);
    onVersion?.(row);
  }
}
