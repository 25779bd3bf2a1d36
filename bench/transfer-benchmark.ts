/**
 * Transfer by freezing (issue 13 item 6): one start version, one training set, one warm-start budget
 * (same gold paths, seed, epochs, batch, learning rate), trained once per trainable mode — the last N
 * layers with the rest frozen, LoRA of rank r, full fine-tuning — each result evaluated through the
 * `evaluation` workflow on the same held-out questions (Avg@k with its 95 % bootstrap interval), and
 * compared with full fine-tuning question by question (paired difference, bootstrap interval over
 * questions). Cost per mode comes from the engine's own metrics: update seconds per optimizer step,
 * trainable parameters, peak RSS of the engine process. The result is stored in benchmark_results
 * (benchmark "transfer", id = the run id), where `longhaul report --run <id>` finds it.
 */
import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Client, WorkflowHandle } from '@temporalio/client';
import { pairedDifference, type PerQuestionScore } from '../activities/evaluation/statistics.js';
import { questionScores } from '../activities/evaluation/compare.js';
import { evaluationResultSchema } from '../activities/ports/evaluation-result.schema.js';
import type { BenchmarkResultStore } from '../activities/ports/benchmark-result-store.port.js';
import type { BlobStore } from '../activities/ports/blob-store.port.js';
import type { PolicyVersionStore } from '../activities/ports/policy-version-store.port.js';
import { runStartVersion } from '../gpu/infer/policy-store.js';
import {
  evaluationKeys,
  evaluationStateQuery,
  evaluationWorkflowType,
  type EvaluationInput,
  type EvaluationOutcome,
  type EvaluationState,
} from '../workflows/contracts/evaluation.contract.js';
import type { QuestionRow } from '../workflows/contracts/learner.contract.js';
import type { QueueRole } from '../workflows/contracts/queues.js';
import type { TrajectorySettings } from '../workflows/contracts/trajectory.contract.js';
import {
  warmStartStateQuery,
  warmStartWorkflowType,
  type WarmStartInput,
  type WarmStartResult,
  type WarmStartState,
} from '../workflows/contracts/warm-start.contract.js';

export const transferBenchmarkName = 'transfer';

export const transferModeNames = ['freeze', 'lora', 'full'] as const;
export type TransferModeName = (typeof transferModeNames)[number];

export interface TransferMode {
  readonly mode: TransferModeName;
  /** What is trained, in words ("last 4 of 30 layers + final norm"). */
  readonly label: string;
  /** hyperparameters.trainable as the engine takes it. */
  readonly trainable: Readonly<Record<string, unknown>>;
}

/** Every linear projection of a Llama block: where LoRA adapters go. */
export const loraTargets = ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'] as const;

/**
 * The three modes for a model of `layers` decoder layers: the last `freezeLayers` layers and the final
 * norm trained (everything else frozen), LoRA of rank `loraRank` (α = 2r) on every projection, and full.
 */
export function transferModes(layers: number, freezeLayers: number, loraRank: number): TransferMode[] {
  if (!Number.isInteger(layers) || layers < 1) throw new Error(`layers: expected a positive layer count, got ${layers}`);
  if (!Number.isInteger(freezeLayers) || freezeLayers < 1 || freezeLayers > layers)
    throw new Error(`freezeLayers: expected 1..${layers} (the model has ${layers} layers), got ${freezeLayers}`);
  const trained = Array.from({ length: freezeLayers }, (_, index) => layers - freezeLayers + index);
  return [
    {
      mode: 'freeze',
      label: `last ${freezeLayers} of ${layers} layers + final norm`,
      trainable: { mode: 'freeze', trainPatterns: [`^model\\.layers\\.(${trained.join('|')})\\.`, '^model\\.norm\\.weight$'] },
    },
    {
      mode: 'lora',
      label: `LoRA rank ${loraRank} (α ${2 * loraRank}) on every projection`,
      trainable: { mode: 'lora', rank: loraRank, alpha: 2 * loraRank, targets: [...loraTargets] },
    },
    { mode: 'full', label: 'every parameter', trainable: { mode: 'full' } },
  ];
}

/** One mode's row of the result (snake_case: it is the `--json` line and the stored result). */
export interface TransferModeResult {
  readonly mode: TransferModeName;
  readonly label: string;
  readonly trainable: Readonly<Record<string, unknown>>;
  readonly start_version: number;
  readonly version: number;
  readonly trainable_parameters: number | null;
  readonly optimizer_steps: number | null;
  /** The engine's forward/backward/AdamW time over its optimizer steps. */
  readonly update_seconds_per_step: number | null;
  /** The sftStep activity's wall time (engine start, model load, updates, save, ONNX export). */
  readonly train_seconds: number;
  readonly peak_rss_mb: number | null;
  readonly final_loss: number | null;
  readonly kept_trajectories: number;
  readonly evaluation: string;
  readonly em: number;
  readonly em_ci95: readonly [number, number];
  readonly f1: number | null;
  /** This mode's EM minus full fine-tuning's, question by question (0 with [0, 0] for full itself). */
  readonly em_vs_full: number;
  readonly em_vs_full_ci95: readonly [number, number];
}

export interface TransferResult {
  readonly benchmark: typeof transferBenchmarkName;
  readonly run_id: string;
  readonly start_version: number;
  readonly train_questions: number;
  readonly heldout_dataset: string;
  readonly heldout_questions: number;
  readonly k: number;
  readonly budget: {
    readonly epochs: number;
    readonly batch: number;
    readonly micro_batch: number;
    readonly learning_rate: number;
    readonly seed: number;
  };
  readonly modes: readonly TransferModeResult[];
  readonly seconds: number;
}

export interface TransferDependencies {
  readonly client: Client;
  readonly queue: (role: QueueRole) => string;
  readonly blobs: BlobStore;
  readonly versions: PolicyVersionStore;
  readonly results: BenchmarkResultStore;
  /** Make the gpu-infer side serve `version` (restart the worker, or a weight sync). */
  readonly serveVersion: (version: number) => Promise<void>;
  /** One line of progress (stderr in the CLI). */
  readonly log: (line: string) => void;
}

export interface TransferOptions {
  readonly runId: string;
  readonly startVersion: number;
  /** Training questions, each with goldTurns (replayed by the warm start). */
  readonly train: readonly QuestionRow[];
  readonly heldOut: { readonly name: string; readonly rows: readonly QuestionRow[] };
  readonly modes: readonly TransferMode[];
  readonly budget: {
    readonly epochs: number;
    readonly batch: number;
    readonly microBatch: number;
    readonly learningRate: number;
    readonly seed: number;
  };
  /** Trajectory limits of the warm-start replays and of the evaluation samples. */
  readonly trajectory: TrajectorySettings;
  readonly k: number;
  readonly concurrency: number;
  /** Flags as given, stored with the result. */
  readonly args: readonly string[];
  readonly commit?: string;
}

/** Follow a workflow to its end, logging its state (as `describe` words it) whenever that changes. */
async function follow<R, S>(
  handle: WorkflowHandle,
  query: Parameters<WorkflowHandle['query']>[0],
  describe: (state: S) => string,
  log: (line: string) => void,
): Promise<R> {
  let finished = false;
  const result = (handle.result() as Promise<R>).finally(() => {
    finished = true;
  });
  let last = '';
  while (!finished) {
    await Promise.race([result.catch(() => undefined), sleep(2000)]);
    if (finished) break;
    try {
      const line = describe((await handle.query(query)) as S);
      if (line !== last) log(line);
      last = line;
    } catch {
      // not queryable yet (no worker has taken its first task): try again on the next tick
    }
  }
  return result;
}

const numberOr = (value: unknown): number | null => (typeof value === 'number' && Number.isFinite(value) ? value : null);

const jsonl = (rows: readonly QuestionRow[]) => rows.map((row) => JSON.stringify(row)).join('\n') + '\n';

/** The warm-start input of one mode (also checked by the CLI's preflight before anything starts). */
export function warmStartInputFor(options: TransferOptions, mode: TransferMode, startVersion: number, datasetKey: string): WarmStartInput {
  return {
    runId: `${options.runId}-${mode.mode}`,
    datasetKey,
    startVersion,
    settings: { source: 'gold', maxQuestions: Math.max(1, options.train.length), trajectoriesPerStep: 4096 },
    trajectory: options.trajectory,
    hyperparameters: {
      learningRate: options.budget.learningRate,
      epochs: options.budget.epochs,
      batchSize: options.budget.batch,
      microBatchSize: options.budget.microBatch,
      seed: options.budget.seed,
      trainable: mode.trainable,
    },
  };
}

/** The evaluation input of one mode's trained version (greedy unless the trajectory settings say otherwise). */
export function evaluationInputFor(options: TransferOptions, mode: TransferMode, version: number, datasetVersion: string): EvaluationInput {
  return {
    resultId: `${options.runId}-${mode.mode}`,
    datasetKey: evaluationKeys.dataset(datasetVersion),
    dataset: options.heldOut.name,
    datasetVersion,
    questions: options.heldOut.rows.length,
    k: options.k,
    concurrency: Math.max(options.k, options.concurrency),
    policyVersion: version,
    trajectory: options.trajectory,
    seed: options.budget.seed,
    runId: options.runId,
    ...(options.commit ? { commit: options.commit } : {}),
  };
}

export async function runTransferBenchmark(deps: TransferDependencies, options: TransferOptions): Promise<TransferResult> {
  const startedAt = Date.now();
  const { log, client } = deps;
  const elapsed = () => `${((Date.now() - startedAt) / 1000).toFixed(0)} s`;
  const withGold = options.train.filter((row) => row.goldTurns?.length);
  if (withGold.length === 0) throw new Error('train: no question has goldTurns; the warm start replays gold paths');
  if (options.heldOut.rows.length === 0) throw new Error('heldOut: the held-out set is empty');
  if (!options.modes.some((mode) => mode.mode === 'full')) throw new Error('modes: full fine-tuning is the reference and must be run');

  const trainKey = `datasets/${options.runId}/transfer-train.jsonl`;
  await deps.blobs.put(trainKey, jsonl(options.train), 'application/x-ndjson');
  const heldOutText = jsonl(options.heldOut.rows.map(({ id, question, answers }) => ({ id, question, answers })));
  const datasetVersion = createHash('sha256').update(heldOutText).digest('hex');
  await deps.blobs.put(evaluationKeys.dataset(datasetVersion), heldOutText, 'application/x-ndjson');

  // 1. Train: the gold paths are replayed under the start version (the same tokens and observations for
  // every mode), then each mode fine-tunes its own copy of the start version with the same budget.
  log(`▶ serving the start version v${options.startVersion} for the gold replays (${elapsed()})`);
  await deps.serveVersion(options.startVersion);
  const trained: { mode: TransferMode; startVersion: number; result: WarmStartResult }[] = [];
  for (const mode of options.modes) {
    const { version: startVersion, forkedFrom } = await runStartVersion(deps.versions, options.startVersion);
    log(
      `▶ ${mode.mode}: ${mode.label}, from v${startVersion}${forkedFrom === null ? '' : ` (v${forkedFrom} registered again: versions only grow)`} (${elapsed()})`,
    );
    const input = warmStartInputFor(options, mode, startVersion, trainKey);
    const handle = await client.workflow.start(warmStartWorkflowType, {
      taskQueue: deps.queue('agent'),
      workflowId: `warm-start-${input.runId}`,
      staticSummary: `transfer ${options.runId}: warm start, ${mode.mode} (${mode.label})`,
      args: [input],
    });
    const result = await follow<WarmStartResult, WarmStartState>(
      handle,
      warmStartStateQuery,
      (state) =>
        `  ${mode.mode}: ${state.phase}, ${state.finished}/${withGold.length} gold paths replayed, ${state.kept} kept${state.phase === 'training' ? ' · sftStep running' : ''}`,
      log,
    );
    if (result.steps.length === 0)
      throw new Error(`${mode.mode}: the warm start kept no trajectory (no gold path earned its reward); nothing was trained`);
    const step = result.steps.at(-1)!;
    log(
      `  ${mode.mode} → v${result.finalVersion}: ${String(step.metrics.trainableParameters ?? '?')} trainable parameters, ${step.trainSeconds.toFixed(1)} s in sftStep (${elapsed()})`,
    );
    trained.push({ mode, startVersion, result });
  }

  // 2. Evaluate each trained version on the same held-out questions, through the evaluation workflow.
  const evaluated: { em: PerQuestionScore[]; outcome: EvaluationOutcome }[] = [];
  for (const { mode, result } of trained) {
    log(
      `▶ evaluating ${mode.mode} (v${result.finalVersion}) on ${options.heldOut.rows.length} held-out questions × ${options.k} (${elapsed()})`,
    );
    await deps.serveVersion(result.finalVersion);
    const input = evaluationInputFor(options, mode, result.finalVersion, datasetVersion);
    const resultId = input.resultId;
    const handle = await client.workflow.start(evaluationWorkflowType, {
      taskQueue: deps.queue('agent'),
      workflowId: `evaluation-${resultId}`,
      staticSummary: `transfer ${options.runId}: evaluation of ${mode.mode} (v${result.finalVersion})`,
      args: [input],
    });
    const outcome = await follow<EvaluationOutcome, EvaluationState>(
      handle,
      evaluationStateQuery,
      (state) => `  ${mode.mode}: ${state.done}/${state.questions} questions scored, ${state.inflight} trajectories running`,
      log,
    );
    const stored = evaluationResultSchema.parse(JSON.parse((await deps.blobs.get(outcome.resultKey)).toString('utf8')));
    const em = questionScores(stored, 'em');
    log(
      `  ${mode.mode}: EM Avg@${outcome.k} ${(outcome.avgAtK.em ?? 0).toFixed(3)} [${(outcome.avgAtKCi95.em?.[0] ?? 0).toFixed(3)}, ${(outcome.avgAtKCi95.em?.[1] ?? 0).toFixed(3)}] (${elapsed()})`,
    );
    evaluated.push({ em, outcome });
  }

  // 3. Side by side, each against full fine-tuning on the same questions.
  const fullIndex = trained.findIndex(({ mode }) => mode.mode === 'full');
  const modes = trained.map(({ mode, startVersion, result }, index): TransferModeResult => {
    const { em, outcome } = evaluated[index]!;
    const metrics = result.steps.map((step) => step.metrics);
    const sum = (field: string) => {
      const values = metrics.map((entry) => numberOr(entry[field]));
      return values.every((value) => value !== null) ? values.reduce((total, value) => total + value!, 0) : null;
    };
    const steps = sum('optimizerSteps');
    const updateSeconds = sum('updateSeconds');
    const rss = metrics.map((entry) => numberOr(entry.peakRssBytes)).filter((value) => value !== null);
    const difference = pairedDifference(evaluated[fullIndex]!.em, em, options.budget.seed);
    return {
      mode: mode.mode,
      label: mode.label,
      trainable: mode.trainable,
      start_version: startVersion,
      version: result.finalVersion,
      trainable_parameters: numberOr(metrics.at(-1)?.trainableParameters),
      optimizer_steps: steps,
      update_seconds_per_step: steps && updateSeconds !== null ? updateSeconds / steps : null,
      train_seconds: result.steps.reduce((total, step) => total + step.trainSeconds, 0),
      peak_rss_mb: rss.length ? Math.max(...rss) / 2 ** 20 : null,
      final_loss: numberOr(metrics.at(-1)?.loss),
      kept_trajectories: result.kept,
      evaluation: outcome.resultId,
      em: outcome.avgAtK.em ?? 0,
      em_ci95: outcome.avgAtKCi95.em ?? [outcome.avgAtK.em ?? 0, outcome.avgAtK.em ?? 0],
      f1: outcome.avgAtK.f1_flashrag ?? null,
      em_vs_full: difference.mean,
      em_vs_full_ci95: difference.ci95,
    };
  });
  const transfer: TransferResult = {
    benchmark: transferBenchmarkName,
    run_id: options.runId,
    start_version: options.startVersion,
    train_questions: options.train.length,
    heldout_dataset: options.heldOut.name,
    heldout_questions: options.heldOut.rows.length,
    k: options.k,
    budget: {
      epochs: options.budget.epochs,
      batch: options.budget.batch,
      micro_batch: options.budget.microBatch,
      learning_rate: options.budget.learningRate,
      seed: options.budget.seed,
    },
    modes,
    seconds: (Date.now() - startedAt) / 1000,
  };
  await deps.results.insert({
    id: options.runId,
    benchmark: transferBenchmarkName,
    args: options.args,
    policyVersion: options.startVersion,
    gitCommit: options.commit ?? '',
    seconds: transfer.seconds,
    result: transfer as unknown as Record<string, unknown>,
  });
  return transfer;
}

/** A stored result read back (benchmark_results.result), or null when it is not a transfer result of this shape. */
export function readTransferResult(value: unknown): TransferResult | null {
  if (value === null || typeof value !== 'object') return null;
  const result = value as Partial<TransferResult>;
  if (result.benchmark !== transferBenchmarkName || !Array.isArray(result.modes) || result.modes.length === 0) return null;
  const numbers = (row: Record<string, unknown>, fields: readonly string[]) => fields.every((field) => typeof row[field] === 'number');
  const pair = (entry: unknown) => Array.isArray(entry) && entry.length === 2 && entry.every((bound) => typeof bound === 'number');
  for (const row of result.modes as unknown as Record<string, unknown>[])
    if (
      typeof row.mode !== 'string' ||
      !numbers(row, ['version', 'em', 'em_vs_full', 'train_seconds']) ||
      !pair(row.em_ci95) ||
      !pair(row.em_vs_full_ci95)
    )
      return null;
  return result as TransferResult;
}

/** The side-by-side table as text lines (the CLI's output without --json). */
export function formatTransfer(result: TransferResult): string[] {
  const percent = (value: number) => `${(value * 100).toFixed(1)}`;
  const signed = (value: number) => `${value >= 0 ? '+' : ''}${percent(value)}`;
  const lines = [
    `transfer ${result.run_id}: from v${result.start_version}, ${result.train_questions} training questions, ${result.heldout_questions} held-out (${result.heldout_dataset}) × ${result.k}; ` +
      `budget ${result.budget.epochs} epochs, batch ${result.budget.batch}, lr ${result.budget.learning_rate}, seed ${result.budget.seed}`,
    `${'mode'.padEnd(7)} ${'version'.padEnd(9)} ${'trainable'.padStart(12)} ${'s/step'.padStart(8)} ${'peak RSS'.padStart(9)} ${'EM % [95 % CI]'.padEnd(20)} vs full [95 % CI]`,
  ];
  for (const row of result.modes)
    lines.push(
      `${row.mode.padEnd(7)} ${`v${row.version}`.padEnd(9)} ${String(row.trainable_parameters ?? '?').padStart(12)} ${(row.update_seconds_per_step?.toFixed(2) ?? '?').padStart(8)} ${(row.peak_rss_mb === null ? '?' : `${row.peak_rss_mb.toFixed(0)} MB`).padStart(9)} ${`${percent(row.em)} [${percent(row.em_ci95[0])}, ${percent(row.em_ci95[1])}]`.padEnd(20)} ${row.mode === 'full' ? '—' : `${signed(row.em_vs_full)} [${signed(row.em_vs_full_ci95[0])}, ${signed(row.em_vs_full_ci95[1])}]`}`,
    );
  return lines;
}
