/**
 * What a demo run will do, decided from its flags before anything starts (pure; the bad input of
 * issue 13 is refused here, exit 2 naming the flag): where the questions come from (the grounded
 * synthesizer, or a question-set file), how they are split into held-out, warm-start and training
 * candidates, the learnable band, the warm start, RL and the evaluations. A run's plan is stored in
 * its manifest, so that `--resume` continues with exactly the plan it began with.
 */
import {
  defaultRewardFormatCredit,
  formatRewardMetrics,
  groupScales,
  rewardFormatCredits,
  type GroupScale,
  type RewardFormatCredit,
  type RewardMetric,
  type TrajectorySettings,
} from '../../workflows/contracts/trajectory.contract.js';
import { integerFlag, rateFlag } from '../arguments.js';
import { UsageError } from '../command.js';
import { startVersionRequest } from '../start-version.js';

/**
 * RL trains the last four of SmolLM2-135M's 30 layers and the final norm: fits 2 CPU cores. Anchored:
 * until session 20 the second pattern was `norm\\.weight$`, which also matched every layer's two
 * layernorms (input_layernorm.weight), so layers 0–25 were not frozen whole and the engine could not run
 * them once per sample (gpu/engine/longhaul_engine/frozen_prefix.py).
 */
export const demoTrainable = { mode: 'freeze', trainPatterns: ['^model\\.layers\\.(2[6-9])\\.', '^model\\.norm\\.weight$'] };

/**
 * `--sft-trainable full`: the warm start trains every parameter. On one budget of gold paths (bench
 * transfer, docs/BENCHMARKS.md "Transfer by freezing") full fine-tuning reached held-out EM 0.333 where
 * the frozen tail reached 0, at 1.8× the seconds per update; in the demo (3 Dec, 4 gold paths × 2
 * epochs) it took ~4 min per update at load ~13 and left a policy that made no tool call, so the
 * default stays the measured freeze recipe.
 */
export const warmStartTrainable = { mode: 'full' };

/**
 * The temperature RL rollouts sample at, and the band probe with them (one value: the probe measures
 * the pass rates RL will see). Below 1 because at T = 1 the warm-started 135M policy solved none of
 * 48 probe samples (docs/BENCHMARKS.md, the default demo measured) while it solves some greedily;
 * above 0 so that a group's samples differ.
 */
export const demoRolloutTemperature = 0.7;

/** The outside reference sets of the data root (`--full`): Bamboogle, HotpotQA, 2Wiki, MuSiQue samples. */
export const referenceSets = [
  'r1searcher_eval_set/bamboogle',
  'r1searcher_eval_set/hotpotqa_500',
  'r1searcher_eval_set/2wiki_500',
  'r1searcher_eval_set/musique_500',
] as const;

export interface SynthesisPlan {
  /** Candidates per hop count (one synthesisRun each). */
  readonly candidatesPerHop: number;
  readonly hops: readonly number[];
  readonly fuzzes: number;
  readonly difficultySamples: number;
  readonly difficultyThreshold: number;
  readonly seed: number;
  readonly concurrency: number;
  /** Reuse a dataset an earlier run synthesized with the same key (cli/demo/synthesis-cache.ts); false: --fresh-synthesis. */
  readonly reuse?: boolean;
}

/**
 * Everything RL gets, in one object: the learner's settings, the trajectory settings of its rollouts
 * (reward metric included) and the train step's hyperparameters. A curriculum or another reward
 * metric plugs in here, and the manifest stores it with the run.
 */
export interface RlConfiguration {
  readonly settings: Record<string, unknown>;
  readonly trajectory: TrajectorySettings;
  readonly hyperparameters: Record<string, unknown>;
  /** The learner's curriculum (workflows/learner-curriculum.ts) without its activeSize, set from the band; null: off. */
  readonly curriculum: Record<string, unknown> | null;
  /**
   * Train only on candidates of these hop counts (`--train-hops`; null or absent: every candidate). Applied after the
   * split, so the held-out and warm-start sets do not change with it.
   */
  readonly trainHops?: readonly number[] | null;
  /**
   * RL draws the warm-start questions as well as the candidates (`--train-warm-start`), the two shuffled together. The
   * policy was trained on their gold paths, so it solves them often but not always at the RL temperature: groups with
   * variance where the candidates are mostly never solved. The held-out set does not change. Absent: false.
   */
  readonly trainWarmStart?: boolean;
  /**
   * Keep the best version, not the last (`--validation N`, `--validate-every K`): the last N of RL's training questions
   * are held out of RL as a validation set; after RL, the version RL started from and every K-th version after it (the
   * last one always) are evaluated on it greedily, and the best of them is evaluated on the held-out set too. Held-out
   * questions never choose a version. Absent or null: off.
   */
  readonly validation?: { readonly questions: number; readonly everyVersions: number } | null;
}

export interface DemoPlan {
  readonly full: boolean;
  /** A question-set file instead of synthesis (`--dataset`). */
  readonly datasetFile: string | null;
  readonly synthesis: SynthesisPlan;
  readonly split: {
    readonly heldOut: number;
    readonly warmStart: number;
    readonly candidates: number;
    /** Absent in plans written before the flag: ngram. */
    readonly contamination?: 'ngram' | 'text';
  };
  readonly warmStart: { readonly source: 'gold' | 'none'; readonly epochs: number; readonly hyperparameters: Record<string, unknown> };
  /**
   * The learnable band LOW < p < HIGH. enabled: probe the candidates first (k samples each at the RL
   * temperature) and train on those inside; the curriculum applies the same bounds online either way.
   */
  readonly band: { readonly enabled: boolean; readonly low: number; readonly high: number; readonly k: number };
  readonly rl: RlConfiguration;
  readonly evaluation: {
    readonly k: number;
    readonly temperature: number;
    readonly concurrency: number;
    readonly trajectory: TrajectorySettings;
  };
  /** Outside reference sets evaluated at each stage (empty: none). */
  readonly references: { readonly sets: readonly string[]; readonly limit: number };
  readonly fromVersion: number | null;
  /**
   * `--rl-from RUN`: this run reuses RUN's corpus, questions, split, references, base and warm-start evaluations and
   * warm-started policy, and runs only RL and the evaluation after it (absent or null: a whole run).
   */
  readonly rlFrom?: string | null;
  /**
   * `--rl-continue RUN`: this run's RL starts from RUN's final RL policy (RUN: an `--rl-from` run, or a run whose warm
   * start it shares), on the same held-out questions; `rlFrom` names the run whose warm start both pair with. Absent
   * or null: RL starts from the warm start.
   */
  readonly rlContinue?: string | null;
}

/** The demo's flags (parseArgs options). */
export const demoFlagOptions = {
  full: { type: 'boolean' },
  resume: { type: 'string' },
  'run-id': { type: 'string' },
  json: { type: 'boolean' },
  dataset: { type: 'string' },
  'synth-count': { type: 'string' },
  hops: { type: 'string' },
  fuzzes: { type: 'string' },
  'difficulty-samples': { type: 'string' },
  'difficulty-threshold': { type: 'string' },
  seed: { type: 'string' },
  heldout: { type: 'string' },
  'sft-questions': { type: 'string' },
  'train-candidates': { type: 'string' },
  'warm-start': { type: 'string' },
  'no-warm-start': { type: 'boolean' },
  'sft-epochs': { type: 'string' },
  'sft-lr': { type: 'string' },
  'sft-trainable': { type: 'string' },
  'rl-trainable': { type: 'string' },
  band: { type: 'string' },
  'band-k': { type: 'string' },
  'band-probe': { type: 'boolean' },
  'no-band': { type: 'boolean' },
  temperature: { type: 'string' },
  'fresh-synthesis': { type: 'boolean' },
  reward: { type: 'string' },
  'format-credit': { type: 'string' },
  'unanswered-reward': { type: 'string' },
  'advantage-scale': { type: 'string' },
  'drop-equal-groups': { type: 'boolean' },
  'keep-equal-groups': { type: 'boolean' },
  validation: { type: 'string' },
  'validate-every': { type: 'string' },
  'no-curriculum': { type: 'boolean' },
  steps: { type: 'string' },
  batch: { type: 'string' },
  group: { type: 'string' },
  lr: { type: 'string' },
  'max-turns': { type: 'string' },
  'max-new-tokens': { type: 'string' },
  'eval-k': { type: 'string' },
  'eval-temperature': { type: 'string' },
  'eval-concurrency': { type: 'string' },
  'reference-limit': { type: 'string' },
  'from-version': { type: 'string' },
  contamination: { type: 'string' },
  'train-hops': { type: 'string' },
  'train-warm-start': { type: 'boolean' },
  'rl-from': { type: 'string' },
  'rl-continue': { type: 'string' },
} as const;

export type DemoFlagValues = Partial<Record<keyof typeof demoFlagOptions, string | boolean>>;

/** The two presets: the default (≤ 30 minutes on a 2-core CPU) and `--full` (≥ 200 held-out questions, reference sets). */
export const presets = {
  default: {
    // 24 gold paths, not 10: the warm start then follows the search → read → search → read → answer
    // pattern on held-out questions (EM 10 %, 4.2 tool calls) where 10 paths gave EM 0 and 2.1 calls.
    synthCount: 72,
    hops: [1],
    fuzzes: 0,
    heldout: 20,
    sftQuestions: 24,
    trainCandidates: 8,
    // 8, not 4: with layers 0–25 frozen whole (session 20) 4 epochs left loss 0.11 and a policy that scored
    // 0.05 on the first RL batches; 8 reach 0.017 (held-out EM 5 %, 3.85 tool calls) in 339 s.
    sftEpochs: 8,
    // No separate probe: the curriculum applies the band online (a question leaves once mastered or too hard).
    bandProbe: false,
    bandK: 4,
    steps: 2,
    batch: 8,
    group: 4,
    // The last 4 layers: a full-parameter RL step takes ~4× as long here (docs/BENCHMARKS.md, session 24).
    rlTrainable: 'freeze',
    maxTurns: 6,
    maxNewTokens: 48,
    evalK: 1,
    evalConcurrency: 8,
    referenceLimit: 0,
  },
  full: {
    // 170 candidates per hop count for 200 + 64 + 48 picks: 2 × 160 gave 304 accepted (s28-full). Of the 200
    // held-out asked, those that share a trained question's template are dropped (44 of 180 with 112 trained,
    // s28-f64; 35 of 234 with 56), so ~150 remain: more held-out here costs ~5.7 s each per evaluation stage (803 s for 141).
    synthCount: 170,
    hops: [1, 2],
    fuzzes: 1,
    heldout: 200,
    // 64 gold paths × 6 epochs, not 24 × 8: 24 left held-out EM at 0.0 on 199 mixed-hop questions (s28-full,
    // F1 0.5 %), 64 reached 2.1 [0, 4.3] on 141 (s28-f64) and 11.4 on 70 1-hop ones (s22-sft64).
    sftQuestions: 64,
    trainCandidates: 48,
    sftEpochs: 6,
    // No probe: 48 candidates × 4 samples at ~5.7 s a trajectory would be ~18 min of the 90; the curriculum
    // applies the band online instead.
    bandProbe: false,
    bandK: 4,
    // 8 steps of 16 (4 questions a step): the recipe whose first 8 steps raised held-out EM (+4.3 greedy,
    // session 24); a step of 16 takes ~4 min here.
    steps: 8,
    batch: 16,
    group: 4,
    // Every parameter: the only RL in this project whose held-out EM rose (v9 → v59: +4.3 greedy, +4.6
    // [+0.7, +9.6] Avg@4 at T = 0.7, while the 4-layer tail on the same questions fell 4.3; docs/BENCHMARKS.md,
    // session 24), at lr 5e-6.
    rlTrainable: 'full',
    maxTurns: 8,
    maxNewTokens: 48,
    evalK: 1,
    // 16 sequences decode ×1.1–1.5 the tokens per second of 8 (docs/BENCHMARKS.md, "Policy inference").
    evalConcurrency: 16,
    // 10 per set: every stage of every run so far scored 0 on all four (s21-full, s28-full, s28-f64).
    referenceLimit: 10,
  },
} as const;

function numberIn(value: string | boolean | undefined, flag: string, fallback: number, min: number, max: number): number {
  if (value === undefined) return fallback;
  const parsed = Number(value);
  if (typeof value !== 'string' || value.trim() === '' || !Number.isFinite(parsed) || parsed < min || parsed > max)
    throw new UsageError(`--${flag} expects a number between ${min} and ${max}, got "${String(value)}"`);
  return parsed;
}

const text = (value: string | boolean | undefined): string | undefined => (typeof value === 'string' ? value : undefined);

/** The rewards RL may train on in the demo (the judge needs a model server). */
export const rlRewardMetrics = ['f1_format', 'em_format', 'f1', 'em', 'cover_em'] as const;

/** `--band LOW,HIGH`: both in [0, 1], LOW < HIGH. */
export function parseBand(value: string | undefined): { low: number; high: number } {
  if (value === undefined) return { low: 0, high: 1 };
  const parts = value.split(',').map((part) => part.trim());
  const [low, high] = parts.map(Number);
  if (parts.length !== 2 || parts.some((part) => part === '') || !Number.isFinite(low) || !Number.isFinite(high))
    throw new UsageError(`--band expects LOW,HIGH (pass rates, e.g. 0,1 keeps 0 < p < 1), got "${value}"`);
  if (low! < 0 || high! > 1 || low! > 1 || high! < 0)
    throw new UsageError(`--band: LOW and HIGH are pass rates and must lie in [0, 1], got "${value}"`);
  if (!(low! < high!)) throw new UsageError(`--band: LOW must be below HIGH (the band keeps LOW < p < HIGH), got "${value}"`);
  return { low: low!, high: high! };
}

/** `--hops LIST`: hop counts of the synthesizer, e.g. "1,2". */
export function parseHops(value: string | undefined, fallback: readonly number[], flag = 'hops'): number[] {
  if (value === undefined) return [...fallback];
  const hops = value.split(',').map((part) => (part.trim() === '' ? Number.NaN : Number(part.trim())));
  if (hops.length === 0 || hops.some((hop) => !Number.isInteger(hop) || hop < 1 || hop > 8) || new Set(hops).size !== hops.length)
    throw new UsageError(`--${flag} expects distinct hop counts between 1 and 8 separated by commas (e.g. 1,2), got "${value}"`);
  return hops;
}

/** The run's plan from its flags; a UsageError (exit 2) names the flag of any bad value. */
/** What a stage's hyperparameters train and at which rate, for the summary: "every parameter, lr 2e-5". */
export function trainedLabel(hyperparameters: Readonly<Record<string, unknown>>): string {
  const mode = (hyperparameters.trainable as { mode?: unknown } | undefined)?.mode;
  const what =
    mode === 'full' ? 'every parameter' : mode === 'freeze' ? 'the last 4 layers and the norm' : String(mode ?? 'every parameter');
  return `${what}, lr ${String(hyperparameters.learningRate)}`;
}

/** `--sft-trainable` / `--rl-trainable`: freeze (the last 4 layers and the norm) or full. */
function trainableFlag(values: DemoFlagValues, flag: 'sft-trainable' | 'rl-trainable', fallback: 'freeze' | 'full'): 'freeze' | 'full' {
  const value = text(values[flag]) ?? fallback;
  if (value !== 'full' && value !== 'freeze')
    throw new UsageError(`--${flag} expects freeze (the last 4 layers and the norm) or full (every parameter), got "${String(value)}"`);
  return value;
}

export function demoPlan(values: DemoFlagValues): DemoPlan {
  const full = values.full === true;
  const preset = full ? presets.full : presets.default;
  const integer = (flag: keyof typeof demoFlagOptions, fallback: number, min: number, max: number) =>
    integerFlag(text(values[flag]), flag, fallback, min, max);

  const datasetFile = text(values.dataset) ?? null;
  const hops = parseHops(text(values.hops), preset.hops);
  const synthCount = integer('synth-count', preset.synthCount, 1, 100_000);
  const heldOut = integer('heldout', preset.heldout, 0, 100_000);
  if (heldOut === 0)
    throw new UsageError(`--heldout: the held-out set would be empty (0 questions); give at least 1 (default ${preset.heldout})`);
  const warmFlag = text(values['warm-start']);
  if (warmFlag !== undefined && warmFlag !== 'gold' && warmFlag !== 'none')
    throw new UsageError(`--warm-start expects gold (SFT on the gold paths) or none, got "${warmFlag}"`);
  if (warmFlag === 'gold' && values['no-warm-start'] === true)
    throw new UsageError('--no-warm-start contradicts --warm-start gold; give one');
  const warmSource: 'gold' | 'none' = values['no-warm-start'] === true || warmFlag === 'none' ? 'none' : 'gold';
  const warmStart = warmSource === 'gold' ? integer('sft-questions', preset.sftQuestions, 1, 100_000) : 0;
  const candidates = integer('train-candidates', preset.trainCandidates, 1, 100_000);
  if (datasetFile === null && heldOut + warmStart + candidates > synthCount * hops.length)
    throw new UsageError(
      `--synth-count: ${synthCount} candidates per hop count × ${hops.length} cannot give ${heldOut} held-out + ${warmStart} warm-start + ${candidates} training questions; raise --synth-count or lower --heldout`,
    );
  const contamination = text(values.contamination) ?? 'ngram';
  if (contamination !== 'ngram' && contamination !== 'text')
    throw new UsageError(
      `--contamination expects ngram (text or shared word 6-grams, the default) or text (equal text only), got "${contamination}"`,
    );
  const band = parseBand(text(values.band));
  if (values['band-probe'] === true && values['no-band'] === true) throw new UsageError('--band-probe contradicts --no-band; give one');
  const probe = values['band-probe'] === true || (preset.bandProbe && values['no-band'] !== true);
  if (!probe && values['band-k'] !== undefined)
    throw new UsageError(
      `--band-k sets the band probe's samples, and this run has no probe (${values['no-band'] === true ? '--no-band' : 'the curriculum applies the band online'}); add --band-probe or leave out --band-k`,
    );
  const bandK = integer('band-k', preset.bandK, 2, 64);
  const temperature = numberIn(values.temperature, 'temperature', demoRolloutTemperature, 0, 5);
  if (temperature === 0)
    throw new UsageError('--temperature 0 is greedy: every sample of a group is the same text and RL gets no signal; give e.g. 0.7');
  const sftTrainable = trainableFlag(values, 'sft-trainable', 'freeze');
  const rlTrainable = trainableFlag(values, 'rl-trainable', preset.rlTrainable);
  if (values['fresh-synthesis'] === true && datasetFile !== null)
    throw new UsageError('--fresh-synthesis has no effect with --dataset (nothing is synthesized); leave one out');
  const steps = integer('steps', preset.steps, 1, 100_000);
  const batchSize = integer('batch', preset.batch, 1, 100_000);
  const groupSize = integer('group', preset.group, 2, 256);
  // Without the curriculum every training question gets one group: too few and RL would end early.
  const questionsNeeded = Math.ceil((steps * batchSize) / groupSize);
  const trainWarmStart = values['train-warm-start'] === true;
  if (trainWarmStart && warmSource === 'none')
    throw new UsageError('--train-warm-start draws the warm-start questions, and without a warm start there are none; leave one out');
  const validation = validationFlags(values);
  const heldBack = validation?.questions ?? 0;
  if (values['no-curriculum'] === true && candidates + (trainWarmStart ? warmStart : 0) - heldBack < questionsNeeded)
    throw new UsageError(
      `--train-candidates ${candidates} is too few for --no-curriculum: ${steps} steps × ${batchSize} trajectories in groups of ${groupSize} draw ${questionsNeeded} questions, each once${trainWarmStart ? ` (${warmStart} of them can be --train-warm-start's)` : ''}${heldBack ? `, and --validation holds ${heldBack} back` : ''}; give --train-candidates ${questionsNeeded + heldBack - (trainWarmStart ? warmStart : 0)} or more`,
    );
  const maxTurns = integer('max-turns', preset.maxTurns, 1, 1000);
  const maxNewTokens = integer('max-new-tokens', preset.maxNewTokens, 8, 65_536);
  // Full-parameter RL at 3e-5 broke the policy's output format within 4 steps (docs/BENCHMARKS.md, session 24).
  const learningRate = rateFlag(text(values.lr), 'lr', rlTrainable === 'full' ? 5e-6 : 2e-5);
  const sftEpochs = integer('sft-epochs', preset.sftEpochs, 1, 1000);
  const sftLearningRate = rateFlag(text(values['sft-lr']), 'sft-lr', sftTrainable === 'full' ? 1e-4 : 3e-4);
  const evalK = integer('eval-k', preset.evalK, 1, 256);
  const evalTemperature = numberIn(values['eval-temperature'], 'eval-temperature', 0, 0, 5);
  const evalConcurrency = integer('eval-concurrency', preset.evalConcurrency, 1, 256);
  if (evalK > 1 && evalTemperature === 0)
    throw new UsageError(
      `--eval-k ${evalK} with --eval-temperature 0 gives ${evalK} identical greedy samples; set --eval-temperature (e.g. 0.7)`,
    );
  const referenceLimit = integer('reference-limit', preset.referenceLimit, 0, 100_000);
  const trainHops = values['train-hops'] === undefined ? null : parseHops(text(values['train-hops']), [], 'train-hops');
  if (trainHops !== null && datasetFile === null && !trainHops.every((hop) => hops.includes(hop)))
    throw new UsageError(
      `--train-hops ${trainHops.join(',')}: this run synthesizes ${hops.join(',')}-hop questions only (--hops); give hop counts among them`,
    );
  const reward = text(values.reward) ?? 'f1_format';
  if (!(rlRewardMetrics as readonly string[]).includes(reward))
    throw new UsageError(`--reward expects one of ${rlRewardMetrics.join(', ')} (the RL reward), got "${reward}"`);
  const formatCredit = text(values['format-credit']) ?? defaultRewardFormatCredit;
  if (!(rewardFormatCredits as readonly string[]).includes(formatCredit))
    throw new UsageError(
      `--format-credit expects one of ${rewardFormatCredits.join(', ')} (who earns the format term), got "${formatCredit}"`,
    );
  if (values['format-credit'] !== undefined && !formatRewardMetrics.includes(reward as RewardMetric))
    throw new UsageError(`--format-credit applies to a reward with a format term (f1_format, em_format), not --reward ${reward}`);
  const unanswered = values['unanswered-reward'] === undefined ? 0 : numberIn(values['unanswered-reward'], 'unanswered-reward', 0, -1, 0);
  if (values['drop-equal-groups'] === true && values['keep-equal-groups'] === true)
    throw new UsageError('--drop-equal-groups and --keep-equal-groups contradict each other; give one');
  const advantageScale = text(values['advantage-scale']) ?? 'std';
  if (!(groupScales as readonly string[]).includes(advantageScale))
    throw new UsageError(
      `--advantage-scale expects one of ${groupScales.join(', ')} (std: (reward − group mean) / group std; none: reward − group mean), got "${advantageScale}"`,
    );

  const limits = { maxTurns, maxNewTokensPerTurn: maxNewTokens, maxRepeats: 2 };
  const options = { maxObservationChars: 600 };
  return {
    full,
    datasetFile,
    synthesis: {
      candidatesPerHop: synthCount,
      hops,
      fuzzes: integer('fuzzes', preset.fuzzes, 0, 8),
      difficultySamples: integer('difficulty-samples', 4, 1, 256),
      difficultyThreshold: numberIn(values['difficulty-threshold'], 'difficulty-threshold', 0.45, 0, 1),
      seed: integer('seed', 13, 0, 2 ** 31 - 1),
      concurrency: 4,
      reuse: values['fresh-synthesis'] !== true,
    },
    split: { heldOut, warmStart, candidates, contamination },
    warmStart: {
      source: warmSource,
      epochs: sftEpochs,
      hyperparameters: {
        learningRate: sftLearningRate,
        epochs: sftEpochs,
        batchSize: 4,
        microBatchSize: 2,
        trainable: sftTrainable === 'full' ? warmStartTrainable : demoTrainable,
      },
    },
    band: { enabled: probe, ...band, k: bandK },
    rl: {
      settings: {
        mode: 'async',
        maxSteps: steps,
        batchSize,
        groupSize,
        eta: 4,
        maxInflight: 2 * batchSize,
        // Kept by default (the zero-advantage share is part of what the demo shows); --drop-equal-groups drops them
        // before the trainer, so a step's batch holds only groups that carry a gradient.
        dropEqualRewardGroups: values['drop-equal-groups'] === true,
        interruptOnPublish: false,
      },
      // Rollouts sample (at demoRolloutTemperature unless --temperature) so that a group's samples differ.
      // Graded credit (0.9·F1 + 0.1·format by default) so that partly right answers differ from wrong ones; the format
      // term only for an answer that scores (--format-credit), so a group with no right answer teaches nothing.
      trajectory: {
        limits,
        options: { ...options, temperature },
        rewardMetric: reward as (typeof rlRewardMetrics)[number],
        ...(formatRewardMetrics.includes(reward as RewardMetric) ? { rewardFormatCredit: formatCredit as RewardFormatCredit } : {}),
        ...(unanswered !== 0 ? { rewardUnanswered: unanswered } : {}),
      },
      hyperparameters: {
        learningRate,
        microBatchSize: 2,
        trainable: rlTrainable === 'full' ? warmStartTrainable : demoTrainable,
        ...(advantageScale !== 'std' ? { ppo: { groupScale: advantageScale as GroupScale } } : {}),
      },
      // The band online: a question leaves as mastered after 2 groups in a row with pass rate ≥ HIGH, as too hard
      // after 3 in a row ≤ LOW (--band; default 0,1: all passing, none passing).
      curriculum:
        values['no-curriculum'] === true ? null : { lower: band.low, upper: band.high, masteredAfter: 2, tooHardAfter: 3, passReward: 0.5 },
      trainHops,
      trainWarmStart,
      validation,
    },
    evaluation: {
      k: evalK,
      temperature: evalTemperature,
      concurrency: evalConcurrency,
      trajectory: { limits, options: { ...options, temperature: evalTemperature } },
    },
    references: { sets: referenceLimit > 0 ? [...referenceSets] : [], limit: referenceLimit },
    fromVersion: startVersionRequest(text(values['from-version']), 'from-version') ?? null,
    rlFrom: null,
  };
}

/** `--validation N` and `--validate-every K` (K only with N); null when off. */
function validationFlags(values: DemoFlagValues): { questions: number; everyVersions: number } | null {
  if (values.validation === undefined) {
    if (values['validate-every'] !== undefined)
      throw new UsageError('--validate-every chooses which versions --validation evaluates: give --validation N too');
    return null;
  }
  const questions = integerFlag(text(values.validation), 'validation', 1, 1, 100_000);
  const everyVersions = integerFlag(text(values['validate-every']), 'validate-every', 2, 1, 1000);
  return { questions, everyVersions };
}

/** The flags an `--rl-from` run may give: RL's own (what it changes against the run it starts from) and the run's name. */
export const rlFromFlags = [
  'rl-from',
  'run-id',
  'json',
  'steps',
  'batch',
  'group',
  'lr',
  'rl-trainable',
  'temperature',
  'reward',
  'format-credit',
  'unanswered-reward',
  'advantage-scale',
  'drop-equal-groups',
  'keep-equal-groups',
  'validation',
  'validate-every',
  'no-curriculum',
  'band',
  'band-probe',
  'band-k',
  'no-band',
  'train-hops',
  'train-warm-start',
] as const;

/** A run that reuses `sourceRunId`'s stages before RL (`--<flag>`) takes only RL's flags: any other exits 2 naming it. */
function refuseEarlierStageFlags(values: DemoFlagValues, flag: string, sourceRunId: string): void {
  const others = Object.keys(values).filter((name) => !(rlFromFlags as readonly string[]).includes(name));
  if (others.length > 0)
    throw new UsageError(
      `--${flag} reuses ${sourceRunId}'s questions, warm start and evaluation settings; leave out --${others.join(', --')} (RL's flags: --${rlFromFlags.slice(3).join(', --')})`,
    );
}

/**
 * The plan of `--rl-from SOURCE`: SOURCE's plan (its questions, split, warm start, evaluation settings and reference
 * sets, so that the held-out scores pair question by question), with the RL flags given here replacing SOURCE's RL
 * settings one by one; a flag of an earlier stage is refused (exit 2), since those stages are not run again.
 */
export function rlFromPlan(source: DemoPlan, sourceRunId: string, values: DemoFlagValues): DemoPlan {
  refuseEarlierStageFlags(values, 'rl-from', sourceRunId);
  if (source.rlContinue)
    throw new UsageError(
      `--rl-from ${sourceRunId}: that run continued ${source.rlContinue}'s RL; take the warm start of ${source.rlFrom ?? source.rlContinue} (--rl-from ${source.rlFrom ?? source.rlContinue}), or continue it (--rl-continue ${sourceRunId})`,
    );
  if (source.warmStart.source !== 'gold')
    throw new UsageError(
      `--rl-from: ${sourceRunId} has no warm start (--warm-start none); run RL from its base with --from-version instead`,
    );
  const given = (flag: keyof typeof demoFlagOptions) => values[flag] !== undefined;
  // The RL flags read as a whole run would read them (the same checks and defaults); --no-curriculum is checked below
  // against the source's candidates.
  const { 'rl-from': _source, 'no-curriculum': _noCurriculum, ...rlValues } = values;
  const fresh = demoPlan({ ...(source.full ? { full: true } : {}), ...rlValues });
  const sourceTemperature = rolloutTemperature(source);
  const settings = {
    ...source.rl.settings,
    ...(given('steps') ? { maxSteps: fresh.rl.settings.maxSteps } : {}),
    ...(given('batch') ? { batchSize: fresh.rl.settings.batchSize, maxInflight: fresh.rl.settings.maxInflight } : {}),
    ...(given('group') ? { groupSize: fresh.rl.settings.groupSize } : {}),
    ...(given('drop-equal-groups') || given('keep-equal-groups') ? { dropEqualRewardGroups: fresh.rl.settings.dropEqualRewardGroups } : {}),
  };
  const trainable = given('rl-trainable') ? fresh.rl.hyperparameters.trainable : source.rl.hyperparameters.trainable;
  const hyperparameters = {
    ...source.rl.hyperparameters,
    trainable,
    // A new --rl-trainable without --lr takes that mode's default rate, as a whole run would.
    ...(given('lr') || given('rl-trainable') ? { learningRate: fresh.rl.hyperparameters.learningRate } : {}),
    ...(given('advantage-scale')
      ? {
          ppo: {
            ...(source.rl.hyperparameters.ppo as Record<string, unknown> | undefined),
            // Checked by demoPlan above (fresh): one of groupScales.
            groupScale: text(values['advantage-scale']) as GroupScale,
          },
        }
      : {}),
  };
  const trainWarmStart = given('train-warm-start') || source.rl.trainWarmStart === true;
  const validation = given('validation') || given('validate-every') ? fresh.rl.validation : (source.rl.validation ?? null);
  if (given('no-curriculum')) {
    const needed = Math.ceil((Number(settings.maxSteps) * Number(settings.batchSize)) / Number(settings.groupSize));
    const heldBack = validation?.questions ?? 0;
    if (source.split.candidates + (trainWarmStart ? source.split.warmStart : 0) - heldBack < needed)
      throw new UsageError(
        `--no-curriculum: ${sourceRunId} has ${source.split.candidates} training candidates${trainWarmStart ? ` and ${source.split.warmStart} warm-start questions` : ''}${heldBack ? ` (--validation holds ${heldBack} back)` : ''} and ${String(settings.maxSteps)} steps × ${String(settings.batchSize)} trajectories in groups of ${String(settings.groupSize)} draw ${needed} questions, each once; lower --steps or keep the curriculum`,
      );
  }
  // The format credit follows the reward: a new --reward takes this run's (--format-credit or its default), and a run
  // recorded before the setting existed keeps none (its trajectories take the contract's default, when-scored).
  const { rewardFormatCredit: sourceCredit, ...sourceTrajectory } = source.rl.trajectory;
  const reward = given('reward') ? fresh.rl.trajectory.rewardMetric : source.rl.trajectory.rewardMetric;
  if (given('format-credit') && !formatRewardMetrics.includes(reward ?? 'f1'))
    throw new UsageError(
      `--format-credit applies to a reward with a format term (f1_format, em_format); the RL reward reused from ${sourceRunId} is ${reward ?? 'f1'}: give --reward too`,
    );
  const formatCredit = given('reward') || given('format-credit') ? fresh.rl.trajectory.rewardFormatCredit : sourceCredit;
  const bandGiven = given('band') || given('band-probe') || given('band-k') || given('no-band');
  const band = bandGiven ? fresh.band : source.band;
  const curriculum = given('no-curriculum')
    ? null
    : given('band') && source.rl.curriculum
      ? { ...source.rl.curriculum, lower: band.low, upper: band.high }
      : source.rl.curriculum;
  return {
    ...source,
    band,
    rl: {
      settings,
      trajectory: {
        ...sourceTrajectory,
        options: {
          ...(source.rl.trajectory.options ?? {}),
          temperature: given('temperature') ? rolloutTemperature(fresh) : sourceTemperature,
        },
        ...(given('reward') ? { rewardMetric: fresh.rl.trajectory.rewardMetric } : {}),
        ...(formatCredit ? { rewardFormatCredit: formatCredit } : {}),
        ...(given('unanswered-reward') ? { rewardUnanswered: fresh.rl.trajectory.rewardUnanswered ?? 0 } : {}),
      },
      hyperparameters,
      curriculum,
      trainHops: given('train-hops') ? fresh.rl.trainHops : (source.rl.trainHops ?? null),
      trainWarmStart,
      validation,
    },
    rlFrom: sourceRunId,
  };
}

/**
 * The plan of `--rl-continue PREVIOUS`: PREVIOUS's plan (its questions, split, warm start, evaluations and RL
 * settings) with the RL flags given here replacing its RL settings, as `--rl-from` does; RL starts from PREVIOUS's
 * final policy, and the gains pair with the warm start PREVIOUS's own RL started from. Any other flag exits 2.
 */
export function rlContinuePlan(previous: DemoPlan, previousRunId: string, values: DemoFlagValues): DemoPlan {
  const { 'rl-continue': _previous, ...rest } = values;
  if (rest['rl-from'] !== undefined)
    throw new UsageError(`--rl-continue ${previousRunId} takes the warm start ${previousRunId}'s RL started from; leave out --rl-from`);
  refuseEarlierStageFlags(rest, 'rl-continue', previousRunId);
  if (previous.warmStart.source !== 'gold')
    throw new UsageError(`--rl-continue: ${previousRunId} has no warm start (--warm-start none); there is no warm start to pair with`);
  const warmFrom = previous.rlFrom ?? previousRunId;
  // rlFromPlan reads PREVIOUS's plan as a source whose warm start is warmFrom's; a continued run is continued again.
  return { ...rlFromPlan({ ...previous, rlContinue: null }, warmFrom, rest), rlContinue: previousRunId };
}

/** The RL rollouts' sampling temperature (a stored plan always has one). */
export const rolloutTemperature = (plan: DemoPlan): number => plan.rl.trajectory.options?.temperature ?? demoRolloutTemperature;

/** The trajectory settings of the band probe: the evaluation's, sampled at the RL rollouts' temperature. */
export function probeTrajectory(plan: DemoPlan): TrajectorySettings {
  return {
    ...plan.evaluation.trajectory,
    options: { ...(plan.evaluation.trajectory.options ?? {}), temperature: rolloutTemperature(plan) },
  };
}
