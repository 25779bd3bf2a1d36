/**
 * Port: the frozen tool observations of evaluations (table evaluation_observations). An observation
 * is stored once per (scope, tool, normalised input, corpus version); the first writer wins, so
 * every later reader (a concurrent sample, a retry, a `--reproduce` run) sees the same one.
 */
import type { ToolResult } from '../../workflows/contracts/tools.contract.js';

export interface FrozenObservationKey {
  /** The evaluation result that first recorded the observations. */
  readonly scope: string;
  readonly tool: string;
  /** The call's input, normalised (tools/registry.ts defaultCacheKey), with the observation limit. */
  readonly inputKey: string;
  readonly corpusVersion: string;
}

export interface FrozenObservationStore {
  get(key: FrozenObservationKey): Promise<ToolResult | null>;
  /** Store `result` unless one is stored already; returns the stored one. */
  putIfAbsent(key: FrozenObservationKey, result: ToolResult): Promise<ToolResult>;
  /** How many observations a scope holds. */
  count(scope: string): Promise<number>;
}
