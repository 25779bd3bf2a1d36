/**
 * Synthesized datasets reused across demo runs. A published synthesis dataset never changes (its
 * blob is written once, its content hash is fixed in Postgres), so a demo run whose synthesis would
 * be made from the same corpus, by the same policy weights, with the same settings and seed, takes
 * the dataset an earlier run published instead of spending most of its time making it again.
 *
 * The index is one small JSON object per key in the blob store (`demo/synthesis-cache/<key>.json`):
 * which run made the sets, and each set's blob with the SHA-256 of its bytes at that time. An entry
 * is used only while every blob it names is still there with those bytes; `--fresh-synthesis`
 * synthesizes anyway and points the entry at the new sets.
 */
import { createHash } from 'node:crypto';
import type { BlobStore } from '../../activities/ports/blob-store.port.js';
import { goldTurnsFormat } from '../../activities/synthesis/grounded.synthesizer.js';
import type { SynthesisPlan } from './plan.js';
import type { SynthesizedSet } from './stages.js';

/** Bump when the synthesizer changes what it accepts, so that older entries stop matching (its gold paths' wording has its own number, goldTurnsFormat). */
export const synthesisCacheFormat = 2;

export interface SynthesisCacheKeyParts {
  /** The search corpus's version (documents and their content hashes): the synthesizer's knowledge base and tools. */
  readonly corpusVersion: string;
  /**
   * The blob folder of the policy whose closed-book answers decide difficulty: its weights, not its
   * number, so that a run from a fork (`--from-version`, a new number over the same files) reuses.
   */
  readonly policyFiles: string;
  readonly synthesis: SynthesisPlan;
}

/** The key: a hash of what decides a synthesized dataset (not the concurrency, which only sets its pace). */
export function synthesisCacheKey(parts: SynthesisCacheKeyParts): string {
  const { synthesis } = parts;
  const decided = {
    format: synthesisCacheFormat,
    goldTurns: goldTurnsFormat,
    corpusVersion: parts.corpusVersion,
    policyFiles: parts.policyFiles,
    candidatesPerHop: synthesis.candidatesPerHop,
    hops: [...synthesis.hops],
    fuzzes: synthesis.fuzzes,
    difficultySamples: synthesis.difficultySamples,
    difficultyThreshold: synthesis.difficultyThreshold,
    seed: synthesis.seed,
  };
  return createHash('sha256').update(JSON.stringify(decided)).digest('hex').slice(0, 32);
}

export const synthesisCacheBlobKey = (key: string) => `demo/synthesis-cache/${key}.json`;

export interface SynthesisCacheEntry {
  readonly key: string;
  /** The demo run that synthesized the sets. */
  readonly runId: string;
  readonly createdAt: string;
  readonly sets: readonly SynthesizedSet[];
  /** Blob key → SHA-256 of its bytes when the entry was written. */
  readonly blobHashes: Readonly<Record<string, string>>;
}

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

/** The entry of `key` when every dataset blob it names is still there, unchanged; otherwise null and why. */
export async function reusableSynthesis(
  blobs: BlobStore,
  key: string,
): Promise<{ entry: SynthesisCacheEntry; why?: undefined } | { entry: null; why: string }> {
  const entryKey = synthesisCacheBlobKey(key);
  if (!(await blobs.exists(entryKey))) return { entry: null, why: 'no earlier run with these settings' };
  const entry = JSON.parse((await blobs.get(entryKey)).toString('utf8')) as SynthesisCacheEntry;
  for (const set of entry.sets) {
    if (!(await blobs.exists(set.blobKey))) return { entry: null, why: `dataset ${set.datasetId} of run ${entry.runId} is gone` };
    if (sha256(await blobs.get(set.blobKey)) !== entry.blobHashes[set.blobKey])
      return { entry: null, why: `dataset ${set.datasetId} of run ${entry.runId} changed since it was published` };
  }
  return { entry };
}

/** Record `sets` (just published by run `runId`) as the datasets of `key`, replacing an earlier entry. */
export async function rememberSynthesis(blobs: BlobStore, key: string, runId: string, sets: readonly SynthesizedSet[]): Promise<void> {
  const blobHashes: Record<string, string> = {};
  for (const set of sets) blobHashes[set.blobKey] = sha256(await blobs.get(set.blobKey));
  const entry: SynthesisCacheEntry = { key, runId, createdAt: new Date().toISOString(), sets, blobHashes };
  await blobs.put(synthesisCacheBlobKey(key), JSON.stringify(entry, null, 2), 'application/json');
}

/**
 * The run's synthesized sets: those of an earlier run with the same key (marked `reusedFrom`), unless
 * `fresh`, or else `make()`'s, then remembered under the key.
 */
export async function synthesizeOrReuse(
  blobs: BlobStore,
  options: { readonly key: string; readonly runId: string; readonly fresh: boolean; readonly log: (line: string) => void },
  make: () => Promise<SynthesizedSet[]>,
): Promise<SynthesizedSet[]> {
  if (!options.fresh) {
    const found = await reusableSynthesis(blobs, options.key);
    if (found.entry) {
      const names = found.entry.sets.map((set) => set.datasetId).join(', ');
      options.log(`synthesis: reused dataset ${names} (made by run ${found.entry.runId}); --fresh-synthesis makes a new one`);
      return found.entry.sets.map((set) => ({ ...set, reusedFrom: found.entry.runId }));
    }
    options.log(`synthesis: nothing to reuse (${found.why}); synthesizing`);
  } else options.log('synthesis: --fresh-synthesis, not reusing an earlier dataset');
  const sets = await make();
  await rememberSynthesis(blobs, options.key, options.runId, sets);
  return sets;
}
