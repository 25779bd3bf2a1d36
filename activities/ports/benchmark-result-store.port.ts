/** Port: results of scheduled system benchmarks (Postgres table benchmark_results), per policy version and per commit. */
import type { BenchmarkRecord } from '../../workflows/contracts/schedules.contract.js';

export interface BenchmarkResultStore {
  /** Insert once; a second insert of the same id changes nothing and returns false. */
  insert(record: BenchmarkRecord): Promise<{ inserted: boolean }>;
  get(id: string): Promise<BenchmarkRecord | undefined>;
  /** The newest results of `benchmark`, newest first. */
  recent(benchmark: string, limit: number): Promise<BenchmarkRecord[]>;
}

/** Runs `longhaul bench <benchmark> <args> --json` and returns its last JSON line; `onLine` sees each line of progress. */
export type BenchmarkRunner = (
  benchmark: string,
  args: readonly string[],
  onLine: (line: string) => void,
) => Promise<{ result: Record<string, unknown>; seconds: number }>;
