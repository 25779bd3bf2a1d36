/**
 * Scheduled work (`longhaul schedule`): a Temporal Schedule starts `scheduledEvaluation` or
 * `scheduledBenchmark` every interval. Both resolve what they measure at run time: the newest
 * policy version (through the policy version store), and the git commit of the worker's code.
 */
import type { EvaluationInput } from './evaluation.contract.js';

export const scheduledEvaluationWorkflowType = 'scheduledEvaluation';
export const scheduledBenchmarkWorkflowType = 'scheduledBenchmark';

/** Every Longhaul schedule id starts with this; `longhaul schedule list` shows only these. */
export const scheduleIdPrefix = 'longhaul-';

/** The benchmarks a schedule may run (`longhaul bench <name>`). */
export const schedulableBenchmarks = ['search', 'overhead', 'async'] as const;
export type SchedulableBenchmark = (typeof schedulableBenchmarks)[number];

/**
 * An evaluation of the newest policy version: the evaluation input without its result id and version,
 * which each run fills in (result id = the run's workflow id, which the schedule makes unique).
 */
export type ScheduledEvaluationInput = Omit<EvaluationInput, 'resultId' | 'policyVersion' | 'carried' | 'reproduces' | 'corpusVersion'>;

export interface ScheduledBenchmarkInput {
  readonly benchmark: SchedulableBenchmark;
  /** Flags passed on to `longhaul bench <benchmark>` (--json is added). */
  readonly args?: readonly string[];
}

/** One stored benchmark result (table benchmark_results). */
export interface BenchmarkRecord {
  readonly id: string;
  readonly benchmark: string;
  readonly args: readonly string[];
  /** The newest policy version when it ran (null: none registered). */
  readonly policyVersion: number | null;
  /** git commit of the code that ran it ('' when unknown). */
  readonly gitCommit: string;
  readonly seconds: number;
  /** The benchmark's JSON line. */
  readonly result: Record<string, unknown>;
}

/** Agent-queue activities of the scheduled workflows. */
export interface ScheduleActivities {
  /** The highest registered policy version (null when none is) and the git commit of the worker's code ('' when unknown). */
  scheduledRunContext(): Promise<{ policyVersion: number | null; commit: string }>;
  /** Run `longhaul bench <benchmark> … --json` and store its result under `id`; idempotent per id. */
  runScheduledBenchmark(input: ScheduledBenchmarkInput & { readonly id: string }): Promise<BenchmarkRecord>;
}

/** A workflow id turned into a result id (letters, digits, ".", "_", "-"). */
export function resultIdOf(workflowId: string): string {
  return workflowId
    .replace(/[^A-Za-z0-9._-]/g, '-')
    .replace(/^[^A-Za-z0-9]+/, '')
    .slice(0, 120);
}
