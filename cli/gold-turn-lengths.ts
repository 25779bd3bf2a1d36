/**
 * How long the turns of the gold paths are in tokens, against the most one policy turn may write. The
 * warm start replays a gold path with every turn forced, so nothing stops a turn longer than the limit
 * from being trained on; the policy can then never write it (it is cut at the limit, its tags
 * unclosed). Session 28's two-hop paths restated constraints in their thoughts and 109 of 156 had such
 * a turn: the demo and `longhaul warm-start` now say so before they train.
 */
import type { BlobStore } from '../activities/ports/blob-store.port.js';
import type { PolicyVersionStore } from '../activities/ports/policy-version-store.port.js';
import { BpeTokenizer } from '../gpu/infer/tokenizer.js';
import type { QuestionRow } from '../workflows/contracts/learner.contract.js';

export interface GoldTurnLengths {
  /** Gold paths measured. */
  readonly paths: number;
  /** Paths with at least one turn longer than the limit. */
  readonly overLimit: number;
  /** The longest turn, in tokens (its end token included). */
  readonly longest: number;
  readonly limit: number;
}

/** `encode` gives a turn's token ids; one more is counted for the end token the policy writes after it. */
export function goldTurnLengths(rows: readonly QuestionRow[], encode: (text: string) => readonly number[], limit: number): GoldTurnLengths {
  let paths = 0;
  let overLimit = 0;
  let longest = 0;
  for (const row of rows) {
    if (!row.goldTurns?.length) continue;
    paths += 1;
    const lengths = row.goldTurns.map((turn) => encode(turn).length + 1);
    longest = Math.max(longest, ...lengths);
    if (lengths.some((length) => length > limit)) overLimit += 1;
  }
  return { paths, overLimit, longest, limit };
}

export function goldTurnLengthsLine(lengths: GoldTurnLengths): string {
  if (lengths.paths === 0) return 'gold turns: no gold path to measure';
  return lengths.overLimit === 0
    ? `gold turns: the longest is ${lengths.longest} tokens, within the ${lengths.limit} a policy turn may write`
    : `gold turns: ${lengths.overLimit} of ${lengths.paths} paths have a turn longer than the ${lengths.limit} tokens a policy turn may write (longest ${lengths.longest}): the policy is trained on turns it cannot write (raise --max-new-tokens or shorten the thoughts)`;
}

/** The line for `rows` in the tokens of `version`'s tokenizer.json; says why when it cannot measure, never throws. */
export async function measureGoldTurns(
  stores: { readonly versions: Pick<PolicyVersionStore, 'get'>; readonly blobs: Pick<BlobStore, 'get'> },
  version: number,
  rows: readonly QuestionRow[],
  limit: number,
): Promise<string> {
  try {
    const row = await stores.versions.get(version);
    if (!row) return `gold turns: not measured (policy version ${version} is not registered)`;
    const tokenizer = new BpeTokenizer(JSON.parse((await stores.blobs.get(`${row.blobPrefix}tokenizer.json`)).toString('utf8')) as unknown);
    return goldTurnLengthsLine(goldTurnLengths(rows, (text) => tokenizer.encode(text), limit));
  } catch (error) {
    return `gold turns: not measured (${error instanceof Error ? error.message : String(error)})`;
  }
}
