/**
 * The trajectory's transcript in the blob store. Every turn's generation and tool results are
 * immutable blobs; the context after turn N is derived from them and cached as its own blob, so a
 * retried or resumed activity always sees the same history.
 */
import type { BlobStore } from '../ports/blob-store.port.js';
import type { GenerateResult } from '../ports/policy.port.js';
import type { ParsedAction } from '../../workflows/contracts/trajectory.contract.js';
import type { ToolResult } from '../../workflows/contracts/tools.contract.js';
import type { ContextSegment } from './prompt.js';

/** One turn's generation as stored: the backend's result plus what the agent made of it. */
export interface GenerationRecord extends GenerateResult {
  readonly turn: number;
  readonly promptChars: number;
  readonly action: ParsedAction;
  /** How many times this generation was interrupted and resumed. */
  readonly interruptions: number;
  /** The sampling temperature of the turn (0 = greedy); the logprobs are at this temperature (greedy: at 1). */
  readonly temperature?: number;
}

/** What an interrupted generation had produced, to resume after it. */
export interface PartialGeneration extends Pick<GenerateResult, 'text' | 'tokenIds' | 'logprobs' | 'tokenVersions'> {
  readonly interruptions: number;
}

export interface ToolsRecord {
  readonly turn: number;
  readonly results: readonly ToolResult[];
}

const pad = (turn: number) => String(turn).padStart(5, '0');

export const transcriptKeys = {
  generation: (id: string, turn: number) => `trajectories/${id}/turns/${pad(turn)}.generation.json`,
  partial: (id: string, turn: number) => `trajectories/${id}/turns/${pad(turn)}.partial.json`,
  tools: (id: string, turn: number) => `trajectories/${id}/turns/${pad(turn)}.tools.json`,
  record: (id: string) => `trajectories/${id}/record.json`,
};

export async function readJson<T>(blobs: BlobStore, key: string): Promise<T | undefined> {
  if (!(await blobs.exists(key))) return undefined;
  return JSON.parse((await blobs.get(key)).toString('utf8')) as T;
}

export async function writeJson(blobs: BlobStore, key: string, value: unknown): Promise<void> {
  await blobs.put(key, JSON.stringify(value), 'application/json');
}

export function invalidObservation(reason: string): string {
  return `Invalid action: ${reason}. Take exactly one action with the tags described above.`;
}

/** The observation text the agent sees for a turn's tool results. */
export function observationText(results: readonly ToolResult[]): string {
  if (results.length === 1) return results[0]!.observation;
  return results.map((result, index) => `[${index + 1}: ${result.tool}]\n${result.observation}`).join('\n\n');
}

/** Segments contributed by one finished turn. */
export function turnSegments(generation: GenerationRecord, tools: ToolsRecord | undefined): ContextSegment[] {
  const segments: ContextSegment[] = [{ kind: 'generated', text: generation.text }];
  if (generation.action.kind === 'invalid') segments.push({ kind: 'observation', text: invalidObservation(generation.action.reason) });
  else if (generation.action.kind === 'tools' && tools) segments.push({ kind: 'observation', text: observationText(tools.results) });
  return segments;
}

/**
 * Context after `turn` (turns 0..turn), derived from the turn blobs. Kept in memory per trajectory
 * (consecutive turns extend it by one turn's blobs); after a worker restart it is rebuilt once by
 * reading the turn blobs in parallel. No cumulative copy is stored: that would grow quadratically.
 */
export function createContextLoader(blobs: BlobStore, cacheSize = 256) {
  const cache = new Map<string, { turn: number; segments: ContextSegment[] }>();

  async function turnOf(id: string, turn: number): Promise<ContextSegment[]> {
    const generation = await readJson<GenerationRecord>(blobs, transcriptKeys.generation(id, turn));
    if (!generation) throw new Error(`transcript of ${id} has no generation for turn ${turn}`);
    const tools = generation.action.kind === 'tools' ? await readJson<ToolsRecord>(blobs, transcriptKeys.tools(id, turn)) : undefined;
    return turnSegments(generation, tools);
  }

  return async function load(id: string, turn: number): Promise<ContextSegment[]> {
    if (turn < 0) return [];
    const cached = cache.get(id);
    let segments: ContextSegment[];
    if (cached?.turn === turn) segments = cached.segments;
    else if (cached?.turn === turn - 1) segments = [...cached.segments, ...(await turnOf(id, turn))];
    else {
      const turns = Array.from({ length: turn + 1 }, (_, index) => index);
      const parts: ContextSegment[][] = [];
      for (let start = 0; start < turns.length; start += 32) {
        parts.push(...(await Promise.all(turns.slice(start, start + 32).map((index) => turnOf(id, index)))));
      }
      segments = parts.flat();
    }
    cache.delete(id);
    cache.set(id, { turn, segments });
    if (cache.size > cacheSize) cache.delete(cache.keys().next().value!);
    return segments;
  };
}
