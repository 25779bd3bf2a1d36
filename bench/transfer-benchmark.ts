/**
 * Transfer by freezing (issue 13 item 6): one start version, one training set, one budget, trained
 * once per trainable mode — the last N layers with the rest frozen, LoRA of rank r, full fine-tuning —
 * each result evaluated through the `evaluation` workflow on the same held-out questions (Avg@k with its
 * 95 % bootstrap interval), and compared with full fine-tuning question by question (paired difference,
 * bootstrap interval over questions). Two stages: "sft" (the warm start: same gold paths, seed, epochs,
 * batch, learning rate) and "rl" (the learner: same questions in the same order, steps, batch, group,
 * temperature, reward, learning rate; the start version is evaluated too, and each mode is also compared
 * with it: the RL gain). Cost per mode comes from the engine's own metrics (the warm start's result, or
 * the manifests of the versions the learner published): update seconds per optimizer step, trainable
 * parameters, peak RSS of the engine process. The result is stored in benchmark_results (benchmark
 * "transfer", id = the run id), where `longhaul report --run <id>` finds it.
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
import { trainingOf } from '../gpu/train/version-files.js';
import {
  evaluationKeys,
  evaluationStateQuery,
  evaluationWorkflowType,
  type EvaluationInput,
  type EvaluationOutcome,
  type EvaluationState,
} from '../workflows/contracts/evaluation.contract.js';
import {
  learnerStateQuery,
  learnerWorkflowType,
  type LearnerInput,
  type LearnerResult,
  type LearnerState,
  type QuestionRow,
} from '../workflows/contracts/learner.contract.js';
import type { QueueRole } from '../workflows/contracts/queues.js';
import type { RewardMetric, TrajectorySettings } from '../workflows/contracts/trajectory.contract.js';
import {
  warmStartStateQuery,
  warmStartWorkflowType,
  type WarmStartInput,
  type WarmStartResult,
  type WarmStartState,
} from '../workflows/contracts/warm-start.contract.js';

export const transferBenchmarkName = 'transfer';

export const transferModeNames = ['freeze', 'lora', 'full'] as const;
/** What each mode trains: the warm start (gold paths, sftStep) or RL (the learner, trainStep). */
export const transferStages = ['sft', 'rl'] as const;
export type TransferStage = (typeof transferStages)[number];
export type TransferModeName = (typeof transferModeNames)[number];

/** A transfer's stage (its options or its stored result): none means the warm start, as in results stored before the RL stage. */
export const transferStageOf = (result: Pick<TransferResult, 'stage'>): TransferStage => result.stage ?? 'sft';

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
  /** Stage "rl": this mode's EM minus the start version's, question by question (the RL gain). */
  readonly em_vs_start?: number;
  readonly em_vs_start_ci95?: readonly [number, number];
  /** Stage "rl": the learner's share of settled groups with zero advantage, and its trainer-busy fraction. */
  readonly zero_advantage_group_share?: number | null;
  readonly trainer_busy?: number;
  /** Stage "rl": the mean rollout reward of the first and the last training step. */
  readonly reward_first_step?: number;
  readonly reward_last_step?: number;
}

/** Stage "rl": the start version's own evaluation, the baseline of every mode's RL gain. */
export interface TransferStartResult {
  readonly version: number;
  readonly evaluation: string;
  readonly em: number;
  readonly em_ci95: readonly [number, number];
  readonly f1: number | null;
}

export interface TransferResult {
  readonly benchmark: typeof transferBenchmarkName;
  readonly run_id: string;
  /** Absent in results stored before the RL stage: "sft". */
  readonly stage?: TransferStage;
  readonly start_version: number;
  readonly train_questions: number;
  readonly heldout_dataset: string;
  readonly heldout_questions: number;
  readonly k: number;
  readonly budget: {
    /** Stage "sft". */
    readonly epochs?: number;
    /** Stage "rl": training steps, samples per question, rollout temperature, reward. */
    readonly steps?: number;
    readonly group?: number;
    readonly temperature?: number;
    readonly reward?: RewardMetric;
    readonly batch: number;
    readonly micro_batch: number;
    readonly learning_rate: number;
    readonly seed: number;
  };
  /** Stage "rl": the start version evaluated alike. */
  readonly start?: TransferStartResult;
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
  /** Stage "rl": cancel the trajectories a finished learner run left generating; resolves to how many. */
  readonly cancelLeftoverRollouts?: (runId: string) => Promise<number>;
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
  /** @default "sft" */
  readonly stage?: TransferStage;
  readonly budget: {
    /** Warm-start epochs (stage "sft"). */
    readonly epochs: number;
    /** Trajectories per optimizer step (sft) or per training step (rl: a multiple of rl.group). */
    readonly batch: number;
    readonly microBatch: number;
    readonly learningRate: number;
    readonly seed: number;
  };
  /** Stage "rl": the learner's budget, the same for every mode. */
  readonly rl?: TransferRlBudget;
  /** Trajectory limits of the warm-start replays, the RL rollouts and the evaluation samples (greedy unless set). */
  readonly trajectory: TrajectorySettings;
  readonly k: number;
  readonly concurrency: number;
  /** Flags as given, stored with the result. */
  readonly args: readonly string[];
  readonly commit?: string;
}

/** Stage "rl": the learner's steps and rollouts, the same for every mode. */
export interface TransferRlBudget {
  readonly steps: number;
  /** Samples per question (G). */
  readonly group: number;
  /** Max staleness in versions. */
  readonly eta: number;
  readonly temperature: number;
  readonly reward: RewardMetric;
  /** Train on groups whose rewards are all equal too (dropped otherwise). */
  readonly keepEqualGroups: boolean;
}

/** Stage "rl"'s budget, or an error naming what is missing (the one check: the run and every learner input use it). */
function rlBudgetOf(options: TransferOptions): TransferRlBudget {
  if (!options.rl) throw new Error('rl: stage "rl" needs its budget (steps, group, eta, temperature, reward)');
  return options.rl;
}

/** " (v9 registered again: versions only grow)" when the start version was registered again as a copy, or nothing. */
const forkNote = (forkedFrom: number | null) => (forkedFrom === null ? '' : ` (v${forkedFrom} registered again: versions only grow)`);

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

/**
 * The learner input of one mode (stage "rl"; also checked by the CLI's preflight): every question once in
 * file order, the rollouts at the RL temperature, the mode's trainable parameters.
 */
export function learnerInputFor(options: TransferOptions, mode: TransferMode, startVersion: number, datasetKey: string): LearnerInput {
  const rl = rlBudgetOf(options);
  return {
    runId: `${options.runId}-${mode.mode}`,
    datasetKey,
    startVersion,
    settings: {
      mode: 'async',
      maxSteps: rl.steps,
      batchSize: options.budget.batch,
      groupSize: rl.group,
      eta: rl.eta,
      maxInflight: 2 * options.budget.batch,
      dropEqualRewardGroups: !rl.keepEqualGroups,
    },
    trajectory: {
      ...options.trajectory,
      options: { ...options.trajectory.options, temperature: rl.temperature },
      rewardMetric: rl.reward,
    },
    hyperparameters: {
      learningRate: options.budget.learningRate,
      microBatchSize: options.budget.microBatch,
      trainable: mode.trainable,
    },
  };
}

/** The evaluation input of a version (`name`: the mode, or "start"), greedy unless the trajectory settings say otherwise. */
export function evaluationInputFor(options: TransferOptions, name: string, version: number, datasetVersion: string): EvaluationInput {
  return {
    resultId: `${options.runId}-${name}`,
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

/** One mode trained: its start copy, the version it ended at, and the engine metrics of each training step. */
interface TrainedMode {
  readonly mode: TransferMode;
  readonly startVersion: number;
  readonly finalVersion: number;
  readonly metrics: readonly Readonly<Record<string, unknown>>[];
  readonly trainSeconds: number;
  readonly kept: number;
  readonly learner?: LearnerResult;
}

/** Stage "sft": the mode's warm start (gold replays, then sftStep) from its own copy of the start version. */
async function warmStartMode(
  deps: TransferDependencies,
  options: TransferOptions,
  mode: TransferMode,
  trainKey: string,
  gold: number,
  elapsed: () => string,
): Promise<TrainedMode> {
  const { version: startVersion, forkedFrom } = await runStartVersion(deps.versions, options.startVersion);
  deps.log(`▶ ${mode.mode}: ${mode.label}, from v${startVersion}${forkNote(forkedFrom)} (${elapsed()})`);
  const input = warmStartInputFor(options, mode, startVersion, trainKey);
  const handle = await deps.client.workflow.start(warmStartWorkflowType, {
    taskQueue: deps.queue('agent'),
    workflowId: `warm-start-${input.runId}`,
    staticSummary: `transfer ${options.runId}: warm start, ${mode.mode} (${mode.label})`,
    args: [input],
  });
  const result = await follow<WarmStartResult, WarmStartState>(
    handle,
    warmStartStateQuery,
    (state) =>
      `  ${mode.mode}: ${state.phase}, ${state.finished}/${gold} gold paths replayed, ${state.kept} kept${state.phase === 'training' ? ' · sftStep running' : ''}`,
    deps.log,
  );
  if (result.steps.length === 0)
    throw new Error(`${mode.mode}: the warm start kept no trajectory (no gold path earned its reward); nothing was trained`);
  const step = result.steps.at(-1)!;
  deps.log(
    `  ${mode.mode} → v${result.finalVersion}: ${String(step.metrics.trainableParameters ?? '?')} trainable parameters, ${step.trainSeconds.toFixed(1)} s in sftStep (${elapsed()})`,
  );
  return {
    mode,
    startVersion,
    finalVersion: result.finalVersion,
    metrics: result.steps.map((entry) => entry.metrics),
    trainSeconds: result.steps.reduce((total, entry) => total + entry.trainSeconds, 0),
    kept: result.kept,
  };
}

/**
 * Stage "rl": the learner from the mode's own copy of the start version (served before it starts, so its
 * rollouts are that version's), over the same questions in the same order as every other mode.
 */
async function reinforceMode(
  deps: TransferDependencies,
  options: TransferOptions,
  mode: TransferMode,
  trainKey: string,
  elapsed: () => string,
): Promise<TrainedMode> {
  const { steps } = rlBudgetOf(options);
  const { version: startVersion, forkedFrom } = await runStartVersion(deps.versions, options.startVersion);
  const input = learnerInputFor(options, mode, startVersion, trainKey);
  deps.log(
    `▶ ${mode.mode}: RL of ${mode.label}, ${steps} step${steps === 1 ? '' : 's'} of ${options.budget.batch}, from v${startVersion}${forkNote(forkedFrom)} (${elapsed()})`,
  );
  await deps.serveVersion(startVersion);
  const handle = await deps.client.workflow.start(learnerWorkflowType, {
    taskQueue: deps.queue('agent'),
    workflowId: `learner-${input.runId}`,
    staticSummary: `transfer ${options.runId}: RL, ${mode.mode} (${mode.label})`,
    args: [input],
  });
  const result = await follow<LearnerResult, LearnerState>(
    handle,
    learnerStateQuery,
    (state) =>
      `  ${mode.mode}: step ${state.step}/${steps}, v${state.version}, ${state.inflight} in flight, ${state.ready} ready${state.training ? ' · training' : ''}`,
    deps.log,
  );
  const cancelled = (await deps.cancelLeftoverRollouts?.(input.runId)) ?? 0;
  // The engine's metrics of each step are kept in the manifest of the version it published.
  const metrics: Readonly<Record<string, unknown>>[] = [];
  for (let version = startVersion + 1; version <= result.finalVersion; version += 1) {
    const row = await deps.versions.get(version);
    const training = row ? trainingOf(row) : undefined;
    if (training) metrics.push(training.metrics);
  }
  const rewards = result.history.map((step) => step.meanReward);
  deps.log(
    `  ${mode.mode} → v${result.finalVersion}: ${result.steps} step${result.steps === 1 ? '' : 's'}, rollout reward ${rewards.map((reward) => reward.toFixed(3)).join(' → ')}, trainer busy ${(result.trainerBusy * 100).toFixed(0)} %${cancelled ? `, ${cancelled} leftover rollouts cancelled` : ''} (${elapsed()})`,
  );
  return {
    mode,
    startVersion,
    finalVersion: result.finalVersion,
    metrics,
    trainSeconds: result.history.reduce((total, step) => total + step.trainSeconds, 0),
    kept: result.consumed,
    learner: result,
  };
}

export async function runTransferBenchmark(deps: TransferDependencies, options: TransferOptions): Promise<TransferResult> {
  const startedAt = Date.now();
  const { log, client } = deps;
  const stage = transferStageOf(options);
  const elapsed = () => `${((Date.now() - startedAt) / 1000).toFixed(0)} s`;
  const withGold = options.train.filter((row) => row.goldTurns?.length);
  if (stage === 'sft' && withGold.length === 0) throw new Error('train: no question has goldTurns; the warm start replays gold paths');
  const rl = stage === 'rl' ? rlBudgetOf(options) : null;
  if (options.train.length === 0) throw new Error('train: the training set is empty');
  if (options.heldOut.rows.length === 0) throw new Error('heldOut: the held-out set is empty');
  if (!options.modes.some((mode) => mode.mode === 'full')) throw new Error('modes: full fine-tuning is the reference and must be run');

  const trainKey = `datasets/${options.runId}/transfer-train.jsonl`;
  await deps.blobs.put(trainKey, jsonl(options.train), 'application/x-ndjson');
  const heldOutText = jsonl(options.heldOut.rows.map(({ id, question, answers }) => ({ id, question, answers })));
  const datasetVersion = createHash('sha256').update(heldOutText).digest('hex');
  await deps.blobs.put(evaluationKeys.dataset(datasetVersion), heldOutText, 'application/x-ndjson');

  // 1. Train each mode from its own copy of the start version with the same budget. The warm start
  // replays the gold paths under the start version (the same tokens and observations for every mode);
  // RL serves each mode's copy before its learner starts.
  const trained: TrainedMode[] = [];
  if (stage === 'sft') {
    log(`▶ serving the start version v${options.startVersion} for the gold replays (${elapsed()})`);
    await deps.serveVersion(options.startVersion);
  }
  for (const mode of options.modes)
    trained.push(
      stage === 'sft'
        ? await warmStartMode(deps, options, mode, trainKey, withGold.length, elapsed)
        : await reinforceMode(deps, options, mode, trainKey, elapsed),
    );

  // 2. Evaluate each trained version (and for RL the start version first) on the same held-out questions.
  const evaluate = async (name: string, version: number) => {
    log(`▶ evaluating ${name} (v${version}) on ${options.heldOut.rows.length} held-out questions × ${options.k} (${elapsed()})`);
    await deps.serveVersion(version);
    const input = evaluationInputFor(options, name, version, datasetVersion);
    const handle = await client.workflow.start(evaluationWorkflowType, {
      taskQueue: deps.queue('agent'),
      workflowId: `evaluation-${input.resultId}`,
      staticSummary: `transfer ${options.runId}: evaluation of ${name} (v${version})`,
      args: [input],
    });
    const outcome = await follow<EvaluationOutcome, EvaluationState>(
      handle,
      evaluationStateQuery,
      (state) => `  ${name}: ${state.done}/${state.questions} questions scored, ${state.inflight} trajectories running`,
      log,
    );
    const stored = evaluationResultSchema.parse(JSON.parse((await deps.blobs.get(outcome.resultKey)).toString('utf8')));
    log(
      `  ${name}: EM Avg@${outcome.k} ${(outcome.avgAtK.em ?? 0).toFixed(3)} [${(outcome.avgAtKCi95.em?.[0] ?? 0).toFixed(3)}, ${(outcome.avgAtKCi95.em?.[1] ?? 0).toFixed(3)}] (${elapsed()})`,
    );
    return { em: questionScores(stored, 'em'), outcome };
  };
  const emOf = (outcome: EvaluationOutcome) => ({
    em: outcome.avgAtK.em ?? 0,
    em_ci95: outcome.avgAtKCi95.em ?? ([outcome.avgAtK.em ?? 0, outcome.avgAtK.em ?? 0] as const),
    f1: outcome.avgAtK.f1_flashrag ?? null,
  });
  const start = stage === 'rl' ? await evaluate('start', options.startVersion) : null;
  const evaluated: { em: PerQuestionScore[]; outcome: EvaluationOutcome }[] = [];
  for (const { mode, finalVersion } of trained) evaluated.push(await evaluate(mode.mode, finalVersion));

  // 3. Side by side, each against full fine-tuning (and for RL against the start) on the same questions.
  const fullIndex = trained.findIndex(({ mode }) => mode.mode === 'full');
  const modes = trained.map((entry, index): TransferModeResult => {
    const { mode, startVersion, finalVersion, metrics, learner } = entry;
    const { em, outcome } = evaluated[index]!;
    const sum = (field: string) => {
      const values = metrics.map((step) => numberOr(step[field]));
      return values.length > 0 && values.every((value) => value !== null) ? values.reduce((total, value) => total + value!, 0) : null;
    };
    const steps = sum('optimizerSteps');
    const updateSeconds = sum('updateSeconds');
    const rss = metrics.map((step) => numberOr(step.peakRssBytes)).filter((value) => value !== null);
    const difference = pairedDifference(evaluated[fullIndex]!.em, em, options.budget.seed);
    const gain = start ? pairedDifference(start.em, em, options.budget.seed) : null;
    return {
      mode: mode.mode,
      label: mode.label,
      trainable: mode.trainable,
      start_version: startVersion,
      version: finalVersion,
      trainable_parameters: numberOr(metrics.at(-1)?.trainableParameters),
      optimizer_steps: steps,
      update_seconds_per_step: steps && updateSeconds !== null ? updateSeconds / steps : null,
      train_seconds: entry.trainSeconds,
      peak_rss_mb: rss.length ? Math.max(...rss) / 2 ** 20 : null,
      final_loss: numberOr(metrics.at(-1)?.loss),
      kept_trajectories: entry.kept,
      evaluation: outcome.resultId,
      ...emOf(outcome),
      em_vs_full: difference.mean,
      em_vs_full_ci95: difference.ci95,
      ...(gain ? { em_vs_start: gain.mean, em_vs_start_ci95: gain.ci95 } : {}),
      ...(learner
        ? {
            zero_advantage_group_share: learner.zeroAdvantageGroupShare ?? null,
            trainer_busy: learner.trainerBusy,
            ...(learner.history.length
              ? { reward_first_step: learner.history[0]!.meanReward, reward_last_step: learner.history.at(-1)!.meanReward }
              : {}),
          }
        : {}),
    };
  });
  const transfer: TransferResult = {
    benchmark: transferBenchmarkName,
    run_id: options.runId,
    stage,
    start_version: options.startVersion,
    train_questions: options.train.length,
    heldout_dataset: options.heldOut.name,
    heldout_questions: options.heldOut.rows.length,
    k: options.k,
    budget: {
      ...(rl ? { steps: rl.steps, group: rl.group, temperature: rl.temperature, reward: rl.reward } : { epochs: options.budget.epochs }),
      batch: options.budget.batch,
      micro_batch: options.budget.microBatch,
      learning_rate: options.budget.learningRate,
      seed: options.budget.seed,
    },
    ...(start ? { start: { version: options.startVersion, evaluation: start.outcome.resultId, ...emOf(start.outcome) } } : {}),
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
      !pair(row.em_vs_full_ci95) ||
      (row.em_vs_start !== undefined && (typeof row.em_vs_start !== 'number' || !pair(row.em_vs_start_ci95)))
    )
      return null;
  if (result.stage !== undefined && !(transferStages as readonly string[]).includes(result.stage)) return null;
  const start = result.start as unknown as Record<string, unknown> | undefined;
  if (start !== undefined && (start === null || !numbers(start, ['version', 'em']) || !pair(start.em_ci95))) return null;
  return result as TransferResult;
}

/** The budget in words, the same for every mode: "3 epochs, batch 4, lr 0.0001, seed 0" or, for RL, "4 steps of 16 (G = 4, T = 0.7, reward f1_format), lr 5e-6, seed 0". */
export function transferBudgetText(result: TransferResult): string {
  const { budget } = result;
  const what =
    transferStageOf(result) === 'rl'
      ? `${String(budget.steps)} step${budget.steps === 1 ? '' : 's'} of ${budget.batch} (G = ${String(budget.group)}, T = ${String(budget.temperature)}, reward ${String(budget.reward)})`
      : `${String(budget.epochs)} epochs, batch ${budget.batch}`;
  return `${what}, micro-batch ${budget.micro_batch}, lr ${budget.learning_rate}, seed ${budget.seed}`;
}

/** The side-by-side table as text lines (the CLI's output without --json). */
export function formatTransfer(result: TransferResult): string[] {
  const percent = (value: number) => `${(value * 100).toFixed(1)}`;
  const signed = (value: number) => `${value >= 0 ? '+' : ''}${percent(value)}`;
  const interval = (value: number, ci95: readonly [number, number]) => `${signed(value)} [${signed(ci95[0])}, ${signed(ci95[1])}]`;
  const rl = transferStageOf(result) === 'rl';
  const lines = [
    `transfer ${result.run_id} (${rl ? 'RL' : 'warm start'}): from v${result.start_version}, ${result.train_questions} training questions, ${result.heldout_questions} held-out (${result.heldout_dataset}) × ${result.k}; ` +
      `budget ${transferBudgetText(result)}`,
    ...(result.start
      ? [
          `start v${result.start.version}: EM ${percent(result.start.em)} [${percent(result.start.em_ci95[0])}, ${percent(result.start.em_ci95[1])}]`,
        ]
      : []),
    `${'mode'.padEnd(7)} ${'version'.padEnd(9)} ${'trainable'.padStart(12)} ${'s/step'.padStart(8)} ${'peak RSS'.padStart(9)} ${'EM % [95 % CI]'.padEnd(20)} ${'vs full [95 % CI]'.padEnd(24)}${rl ? ' vs start [95 % CI]' : ''}`,
  ];
  for (const row of result.modes)
    lines.push(
      `${row.mode.padEnd(7)} ${`v${row.version}`.padEnd(9)} ${String(row.trainable_parameters ?? '?').padStart(12)} ${(row.update_seconds_per_step?.toFixed(2) ?? '?').padStart(8)} ${(row.peak_rss_mb === null ? '?' : `${row.peak_rss_mb.toFixed(0)} MB`).padStart(9)} ${`${percent(row.em)} [${percent(row.em_ci95[0])}, ${percent(row.em_ci95[1])}]`.padEnd(20)} ${(row.mode === 'full' ? '—' : interval(row.em_vs_full, row.em_vs_full_ci95)).padEnd(24)}${rl && row.em_vs_start !== undefined && row.em_vs_start_ci95 ? ` ${interval(row.em_vs_start, row.em_vs_start_ci95)}` : ''}`.trimEnd(),
    );
  return lines;
}
