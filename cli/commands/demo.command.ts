import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { config } from '../../infra/config.js';
import { buildDefaultCorpus } from '../../corpus/default-corpus.js';
import { repoRoot } from '../../infra/paths.js';
import { openServices } from '../../composition/services.js';
import { loadQuestionSet } from '../../composition/question-sets.js';
import { toQuestionRow } from '../../activities/question-sets/question-set.js';
import { stackUp } from '../../infra/services/stack.js';
import { startedLine } from './status.command.js';
import { parseRlHyperparameters, parseSftHyperparameters } from '../../gpu/train/train-step.schema.js';
import { parseEvaluationInput } from '../../workflows/contracts/evaluation.input.js';
import { parseLearnerCurriculum, parseLearnerSettings } from '../../workflows/contracts/learner.input.js';
import { taskQueueName } from '../../workflows/contracts/queues.js';
import { parseSynthesisRunInput } from '../../workflows/contracts/synthesis.input.js';
import { parseTrajectoryInput } from '../../workflows/contracts/trajectory.input.js';
import {
  learnerStateQuery,
  learnerWorkflowType,
  type LearnerResult,
  type LearnerState,
  type QuestionRow,
} from '../../workflows/contracts/learner.contract.js';
import { warmStartWorkflowType, type WarmStartResult } from '../../workflows/contracts/warm-start.contract.js';
import { parseFlags } from '../arguments.js';
import { UsageError, type Command } from '../command.js';
import { onInterrupt } from '../interrupt.js';
import { cancelLeftoverRollouts, leftoverRolloutsLine } from '../leftover-rollouts.js';
import { followWorkflow } from '../follow-workflow.js';
import { preflight } from '../preflight.js';
import { progressBar } from '../progress.js';
import { startVersionFlag } from '../start-version.js';
import { restartInference } from '../restart-inference.js';
import { followWarmStart } from './warm-start.command.js';
import { resolveDataset } from './eval.command.js';
import { describePending, pendingActivity } from '../activity-progress.js';
import { writeReport } from '../report/write-report.js';
import { advantageSummary, signalSummary } from '../report/rl-signal.js';
import { retentionPlan } from './model.command.js';
import { refuseConcurrentTraining } from '../training-guard.js';
import {
  continuedEvaluationPhase,
  continuedRuns,
  createManifest,
  createManifestContinuing,
  createManifestFrom,
  checkRunId,
  DemoPhases,
  newRunId,
  readManifest,
  stageTable,
  startOrAttach,
  type DemoManifest,
} from '../demo/manifest.js';
import {
  demoFlagOptions,
  demoPlan,
  demoRolloutTemperature,
  presets,
  probeTrajectory,
  rlContinuePlan,
  rlFromPlan,
  rolloutTemperature,
  trainedLabel,
  type DemoFlagValues,
  type DemoPlan,
} from '../demo/plan.js';
import { bestValidated, validationVersions } from '../demo/validation.js';
import { synthesisCacheKey, synthesizeOrReuse } from '../demo/synthesis-cache.js';
import { searchCorpusVersion } from '../../infra/postgres/evaluation-store.pg.js';
import { continuedPool, inBand, splitQuestions, trainingCandidates, trainingPool, withHops, type DemoSplit } from '../demo/split.js';
import { questionIdsOfRuns } from '../../infra/postgres/trajectory-store.pg.js';
import { curriculumBaseQuestionId } from '../../workflows/learner-curriculum.js';
import { measureGoldTurns } from '../gold-turn-lengths.js';
import { goldMeasures, type VersionBehaviour } from '../../activities/analysis/behaviour.js';
import { pairedDifference, type PairedDifference } from '../../activities/evaluation/statistics.js';
import {
  evaluate,
  jsonl,
  synthesize,
  synthesizedRows,
  type StageContext,
  type StageEvaluation,
  type SynthesizedSet,
} from '../demo/stages.js';
import { repositoryCommit } from '../../composition/benchmark-runner.js';

function runChild(args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [path.join(repoRoot, 'dist', 'cli', 'main.js'), ...args], {
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    const unregister = onInterrupt(`stopping longhaul ${args.join(' ')}`, () => {
      child.kill('SIGTERM');
    });
    child.once('exit', (code) => {
      unregister();
      if (code === 0) resolve();
      else reject(new Error(`longhaul ${args.join(' ')} exited with ${code}`));
    });
  });
}

/** "seen / stated / stated but missed" shares of a stage's behaviour, "-" where not measured. */
function goldLine(behaviour: VersionBehaviour | null): string {
  const gold = behaviour ? goldMeasures(behaviour) : null;
  return gold ? [gold.seen, gold.stated, gold.statedButMissed].map((value) => `${(value * 100).toFixed(0)} %`).join(' / ') : '-';
}

/** The flag behind each input field the demo's workflows get, for preflight refusals. */
const demoFlags = {
  batchSize: 'batch',
  groupSize: 'group',
  maxSteps: 'steps',
  maxInflight: 'batch',
  'limits.maxTurns': 'max-turns',
  'limits.maxNewTokensPerTurn': 'max-new-tokens',
  'hyperparameters.learningRate': 'lr',
  'trajectory.limits.maxTurns': 'max-turns',
  'trajectory.limits.maxNewTokensPerTurn': 'max-new-tokens',
  k: 'eval-k',
  concurrency: 'eval-concurrency',
  count: 'synth-count',
  'settings.targetHops': 'hops',
  'settings.targetFuzzes': 'fuzzes',
  'settings.difficultySamples': 'difficulty-samples',
  'settings.difficultyThreshold': 'difficulty-threshold',
  seed: 'seed',
};

/** Every workflow input of the plan, checked by the parsers the workflows run (exit 2 naming the flag). */
function checkPlan(plan: DemoPlan): void {
  preflight(() => {
    parseLearnerSettings(plan.rl.settings);
    parseTrajectoryInput({ question: 'preflight', ...plan.rl.trajectory });
    parseRlHyperparameters(plan.rl.hyperparameters, Number(plan.rl.settings.groupSize));
    if (plan.rl.curriculum) parseLearnerCurriculum({ ...plan.rl.curriculum, activeSize: 1 });
    if (plan.warmStart.source === 'gold') parseSftHyperparameters(plan.warmStart.hyperparameters);
    for (const hops of plan.synthesis.hops)
      parseSynthesisRunInput({
        datasetId: 'preflight',
        count: plan.synthesis.candidatesPerHop,
        seed: plan.synthesis.seed + hops,
        settings: {
          targetHops: hops,
          targetFuzzes: plan.synthesis.fuzzes,
          difficultySamples: plan.synthesis.difficultySamples,
          difficultyThreshold: plan.synthesis.difficultyThreshold,
        },
      });
    parseEvaluationInput({
      resultId: 'preflight',
      datasetKey: 'preflight',
      dataset: 'preflight',
      datasetVersion: 'preflight',
      questions: 1,
      k: plan.evaluation.k,
      policyVersion: 0,
      trajectory: plan.evaluation.trajectory,
    });
  }, demoFlags);
}

/** `--dataset FILE`: its rows, refused (exit 2 naming the flag) when it cannot serve the plan. */
async function datasetRows(plan: DemoPlan): Promise<QuestionRow[]> {
  const file = plan.datasetFile!;
  const set = await loadQuestionSet(file).catch((error: unknown) => {
    throw new UsageError(`--dataset: ${(error as Error).message}`);
  });
  const rows = set.items.map(toQuestionRow);
  if (rows.length === 0) throw new UsageError(`--dataset: ${file} has no usable question (${set.skipped.length} rows skipped)`);
  if (plan.warmStart.source === 'gold' && !rows.some((row) => row.goldTurns && row.goldTurns.length > 0))
    throw new UsageError(
      `--dataset: ${file} has no gold paths (no row has "goldTurns"), which the gold warm start replays; give a synthesized set (longhaul synth) or --warm-start none`,
    );
  const split = splitQuestions(rows, plan.split, plan.synthesis.seed);
  if (split.heldOut.length === 0)
    throw new UsageError(
      `--heldout: the held-out set of ${file} would be empty (${rows.length} rows, ${split.contaminated.length} held-out questions overlap training ones); give a larger set`,
    );
  if (split.candidates.length === 0)
    throw new UsageError(`--train-candidates: ${file} leaves no training question after ${split.heldOut.length} held-out; lower --heldout`);
  trainingCandidates(split.candidates, plan.rl.trainHops ?? null);
  return rows;
}

interface StageResult {
  readonly stage: string;
  readonly version: number;
  readonly heldOut: StageEvaluation;
  readonly references: readonly StageEvaluation[];
}

interface SplitRecord {
  readonly heldOut: number;
  readonly warmStart: number;
  readonly candidates: number;
  readonly unused: number;
  readonly contaminated: DemoSplit['contaminated'];
  readonly keys: { readonly heldOut: string; readonly warmStart: string; readonly candidates: string };
}

/** The `--validation` questions and the training set without them. */
interface ValidationSplit {
  readonly rows: QuestionRow[];
  readonly trainKey: string;
  readonly training: number;
}

interface BandRecord {
  readonly probed: number;
  readonly kept: number;
  readonly passRates: Readonly<Record<string, number>>;
  readonly histogram: Readonly<Record<string, number>>;
  readonly fallback: boolean;
  readonly trainKey: string;
  readonly seconds: number;
}

const pct = (value: number) => `${(value * 100).toFixed(1)}`;
const interval = (bounds: readonly [number, number]) => `[${pct(bounds[0])}, ${pct(bounds[1])}]`;

export const demoCommand: Command = {
  name: 'demo',
  summary: 'the main job: synthesized questions, evaluation, warm start, learnable band, async RL, evaluation again, report',
  usage: `longhaul demo [--full] [--json] [--run-id ID] [flags below]
longhaul demo --resume RUN-ID [--json]

From nothing, on a 2-core machine with no GPU. Stages (each a durable workflow; watch them in the Web UI):
  1. the stack, the default corpus and its knowledge base, SmolLM2-135M-Instruct as policy version 0
     (or --from-version N)
  2. data: the grounded synthesizer (synthesisRun, docs/SYNTHESIS.md) makes questions with proved
     answers and gold search/access/answer paths, one run per hop count; they are split into a
     held-out set, a warm-start set (its gold paths) and training candidates. Whole answer groups go
     to one side, and every held-out question is checked against the trained ones with the
     contamination index (equal text or ≥ 60 % shared word 6-grams): an overlapping one is dropped.
     A published dataset never changes, so a later run with the same corpus, policy weights (a fork reuses its base's),
     synthesis settings and seed reuses it ("synthesis: reused dataset X (made by run Y)");
     --fresh-synthesis synthesizes anyway.
  3. evaluation of the base policy (the evaluation workflow: Avg@k with a 95 % bootstrap interval)
  4. warm start: SFT on the gold paths (the warmStart workflow), then evaluation again
  5. the learnable band LOW < pass rate < HIGH (default 0 < p < 1: a question always or never
     solved gives a group with zero advantage). Both presets apply it online: the learner's
     curriculum retires a question once its groups pass at ≥ HIGH (mastered) or ≤ LOW (too hard)
     and the next one enters, so no separate probe runs. --band-probe first probes
     every candidate with k samples at the RL temperature through the evaluation workflow and
     starts RL on the band (then the harder ones).
  6. async RL (the learner workflow), then evaluation again. Rollouts and the probe sample at one
     temperature, T = ${demoRolloutTemperature} by default (--temperature): the probe measures the pass rates RL
     will see. Not 1: at T = 1 the warm-started 135M policy solved none of 48 probe samples while
     it solves some greedily; not 0: greedy samples of a group are identical text.
  7. the RL gain: the paired difference RL − warm start per held-out question with its 95 %
     bootstrap interval; the report (LONGHAUL_HOME/reports/<run>.html, its path printed last):
     held-out accuracy per stage with intervals, tool calls per question and behaviour per version

Defaults (aimed at ≤ 30 minutes here): 1-hop questions without fuzz (two documents to find: the
named entity's, then the answer's), ${presets.default.synthCount} candidates, ${presets.default.heldout} held-out, ${presets.default.sftQuestions} warm-start and ${presets.default.trainCandidates} training
candidates; the closed-book difficulty check draws 4 samples with threshold 0.45, so a question is
kept only when all 4 are wrong (Wilson bound 0.51): the fewest generations that still reject what the
model knows without tools (16, the synthesizer's default, costs 4× the tokens); warm start: the last
4 layers and the norm, ${presets.default.sftEpochs} epochs, lr 3e-4; no band probe (the curriculum); 2 RL steps of 8
trajectories (G = 4) training the last 4 layers; ≤ 6 turns × 48 tokens; evaluation k = 1, greedy. A
per-stage wall-time table ends the summary.
--full: 1- and 2-hop questions with one fuzz, ${presets.full.synthCount} candidates per hop count, ≥ ${presets.full.heldout} held-out
asked (--heldout ${presets.full.heldout}; those sharing a trained question's template are dropped), ${presets.full.sftQuestions} warm-start
(${presets.full.sftEpochs} epochs) and ${presets.full.trainCandidates} training candidates, no band probe (the curriculum; --band-probe adds it),
${presets.full.steps} RL steps of ${presets.full.batch} trajectories training every parameter at lr 5e-6 (--rl-trainable full), ≤ ${presets.full.maxTurns} turns,
evaluations ${presets.full.evalConcurrency} at a time, and the outside reference sets of LONGHAUL_DATA_ROOT (Bamboogle, HotpotQA, 2Wiki,
MuSiQue; --reference-limit ${presets.full.referenceLimit} each) at every stage.

Resumable: the run's plan and each finished phase are kept in LONGHAUL_HOME/demo-runs/<run>.json, and
its workflows have ids derived from the run id. --resume RUN-ID skips the finished phases, re-attaches
to a workflow that still runs (this process was killed) and restarts one that was stopped (Ctrl-C
terminates them; an evaluation then keeps the questions it had scored).

  --full                 the preset above             --json   end stdout with one JSON line (below)
  --run-id ID            name the run (default demo-<time>)    --resume ID   continue run ID
  --dataset FILE         a question-set file instead of synthesis (the gold warm start needs goldTurns)
  --synth-count N        candidates per hop count (default ${presets.default.synthCount})
  --hops LIST            hop counts, e.g. 1,2 (default 1)    --fuzzes N   fuzzed literals (default 0)
  --difficulty-samples N closed-book samples (default 4)     --difficulty-threshold X   (default 0.45)
  --seed S               synthesis and split seed (default 13)
  --fresh-synthesis      synthesize even when an earlier run made a dataset with the same key
  --heldout N            held-out questions (default ${presets.default.heldout}; ≥ 1)
  --contamination MODE   which overlap with a trained question drops a held-out one: ngram (equal
                         text or ≥ 60 % shared word 6-grams, default: also a template sibling with
                         another entity) or text (equal text only: held-out questions may share the
                         trained templates; answers stay apart either way)
  --sft-questions N      warm-start gold paths (default ${presets.default.sftQuestions})
  --train-candidates N   RL's training questions (default ${presets.default.trainCandidates}; probed first with --band-probe)
  --warm-start gold|none SFT on gold paths, or none (--no-warm-start)
  --sft-epochs N         passes over the gold paths (default ${presets.default.sftEpochs})
  --sft-trainable MODE   freeze (the last 4 layers and the norm, default; --sft-lr 3e-4) or full
                         (every parameter, --sft-lr 1e-4: ~2× the seconds per update, 5.2 GiB)
  --rl-trainable MODE    what RL trains: freeze (the last 4 layers and the norm, the default's) or full
                         (every parameter, the default of --full, --lr 5e-6: at 3e-5 the policy lost its output format within
                         4 steps; ~6 min a step of 16 here, 7.2 GiB)
  --band LOW,HIGH        the learnable band: LOW < pass rate < HIGH, both in [0, 1] (default 0,1),
                         for the probe and the curriculum alike
  --band-probe           probe the candidates before RL (neither preset does: ~18 min for --full's 48 × 4)
  --band-k K             probe samples per candidate (default 4)   --no-band   no probe (both presets)
  --temperature T        RL rollouts' sampling temperature, the probe's too (default ${demoRolloutTemperature}; > 0)
  --reward METRIC        RL reward: f1_format (0.9·F1 + 0.1·format, default), em_format (0.9·EM +
                         0.1·format: no credit for a sentence that contains the gold), f1, em, cover_em
  --format-credit C      who earns the format term: when-scored (default: only an answer whose F1 or EM is
                         above 0; a group with no right answer has no advantage) or always (every trajectory:
                         on questions the policy rarely gets right, RL learned to answer anything one step
                         early, held-out EM −15.6, docs/BENCHMARKS.md "Session 39")
  --unanswered-reward R  the reward of a trajectory that ends without an answer (repeated a call, ran out of
                         turns), in [−1, 0] (default 0, a wrong answer's): below 0 makes answering worth more than
                         giving up. Pair a small R with --advantage-scale none, or it counts as much as a right answer;
                         even then it can outweigh rare right answers (R −0.1 collapsed a run: docs/BENCHMARKS.md s42)
  --advantage-scale S    how a group's rewards become advantages: std ((reward − mean) / std, GRPO, default) or
                         none (reward − mean, Dr. GRPO: a small reward gap stays a small push)
  --drop-equal-groups    drop a group whose rewards are all equal before the trainer (zero advantage: no gradient,
                         but its tokens cost the trainer as much as any): a step's batch then holds only groups that
                         teach, and rollouts run until it is full (more rollouts per step). Default: kept, as the
                         zero-advantage share per step is shown either way; --keep-equal-groups undoes it for --rl-from/--rl-continue
  --validation N         keep the best RL version, not the last: the last N training candidates are held out of
                         RL; after RL the start and every K-th version (--validate-every K, default 2; the last
                         always) are evaluated greedily on them, and the best (the latest of equals) is evaluated
                         on the held-out set as stage rl-best, with its own paired gain. Held-out questions never
                         choose. Costs one evaluation of N questions per version validated
  --no-curriculum        one group per training question, each question once, in order (RL ends
                         early when they run out: steps × batch / group questions are needed). The
                         default, the learner's curriculum, keeps drawing groups of an active set and
                         retires a question after 2 groups in a row passing at ≥ HIGH or 3 at ≤ LOW;
                         the next one enters: band questions first, then the harder ones
  --steps N              RL steps (default 2)      --batch N   trajectories per step (default 8)
  --group N              samples per question (default 4)      --lr X   RL learning rate (default 2e-5; full 5e-6)
  --max-turns N          turns per trajectory (default 6)      --max-new-tokens N   per turn (default 48)
  --eval-k K             samples per held-out question (default 1)   --eval-temperature T   (default 0)
  --eval-concurrency C   evaluation trajectories at once (default 8; the band probe's too)
  --reference-limit N    questions per reference set (--full: 20; 0: none)
  --from-version N       policy version to start from (default: the latest registered; 0 = the base model)
  --train-hops LIST      RL trains only on candidates of these hop counts, e.g. 1 (default: all); the split
                         and so the held-out set stay as they are
  --train-warm-start     RL draws the warm-start questions too, shuffled in with the candidates: the policy
                         learned their gold paths and solves them more often than new questions, so more
                         groups mix right and wrong answers. The held-out set stays as it is
  --rl-from RUN          an RL ablation: reuse run RUN's questions, split, base and warm-start evaluations
                         and warm-started policy (no stage before RL runs again), with RUN's RL settings
                         changed by the RL flags given here (--steps --batch --group --lr --rl-trainable
                         --temperature --reward --format-credit --unanswered-reward --advantage-scale
                         --drop-equal-groups --keep-equal-groups --validation --validate-every --no-curriculum --band… --train-hops --train-warm-start);
                         the RL gain pairs with RUN's warm start on the same held-out questions. Any other
                         flag: exit 2
  --rl-continue RUN      more RL steps after run RUN's (an --rl-from run, or a whole one): RL starts from RUN's
                         final policy with RUN's settings and the RL flags given here, drawing first the training
                         questions RUN's RL (and any run it continued) did not draw; the RL gain still pairs
                         with the warm start, and "RL gain of this run" with RUN's RL evaluation (stage rl-start).
                         A chain of these trains longer than one session and measures held-out EM at each link

--json ends stdout with {"run_id","minutes","heldout_questions","em":{"base","warm_start","rl"},
"em_ci95":{…},"rl_gain_em","rl_gain_em_ci95":[lo,hi],"warm_gain_em","warm_gain_em_ci95",
"zero_advantage_group_share","trainer_busy","band":{…},"references":{…},"report":"<html path>",
"stage_seconds":{stage: wall seconds}}; with --rl-continue also em.rl_start, "rl_continue",
"continued_gain_em" and "continued_gain_em_ci95".

Bad input exits 2 naming the flag before anything starts: a --dataset without gold paths for the gold
warm start, a --band outside [0, 1], an empty held-out set (--heldout 0, or a --dataset too small).`,
  async run(args) {
    const { values } = parseFlags(args, demoFlagOptions);
    const settings = config();
    let manifest: DemoManifest;
    let plan: DemoPlan;
    let givenRows: QuestionRow[] | null = null;
    if (values.resume !== undefined) {
      const others = Object.keys(values).filter((flag) => !['resume', 'json'].includes(flag));
      if (others.length > 0) throw new UsageError(`--resume continues with the run's own plan; leave out --${others.join(', --')}`);
      manifest = readManifest(settings.home, checkRunId(values.resume, 'resume'));
      plan = manifest.plan;
      if (plan.datasetFile) givenRows = await datasetRows(plan);
    } else if (values['rl-continue'] !== undefined || values['rl-from'] !== undefined) {
      // A run that reuses another's phases before RL: from its warm start (--rl-from) or after its RL (--rl-continue).
      const continuing = values['rl-continue'] !== undefined;
      const flag = continuing ? 'rl-continue' : 'rl-from';
      const source = readManifest(settings.home, checkRunId(String(values[flag]), flag), flag);
      plan = (continuing ? rlContinuePlan : rlFromPlan)(source.plan, source.runId, values as DemoFlagValues);
      checkPlan(plan);
      if (plan.datasetFile) givenRows = await datasetRows(plan);
      const runId = checkRunId(values['run-id'] ?? newRunId(), 'run-id');
      manifest = (continuing ? createManifestContinuing : createManifestFrom)(settings.home, runId, plan, source);
    } else {
      plan = demoPlan(values as DemoFlagValues);
      checkPlan(plan);
      if (plan.datasetFile) givenRows = await datasetRows(plan);
      const runId = checkRunId(values['run-id'] ?? newRunId(), 'run-id');
      manifest = createManifest(settings.home, runId, plan);
    }
    const runId = manifest.runId;
    const startedAt = Date.now();
    const phase = (name: string) => console.error(`\n▶ ${name} (${((Date.now() - startedAt) / 1000).toFixed(0)} s)`);
    const phases = new DemoPhases(settings.home, manifest, (name, reusedFrom) =>
      console.error(`  ${name}: ${reusedFrom ? `reused from run ${reusedFrom}` : `done before (${runId})`}, skipped`),
    );
    console.error(
      `demo run ${runId}${values.resume ? ' (resumed)' : ''}${plan.rlContinue ? ` · RL continues run ${plan.rlContinue}'s (warm start of ${plan.rlFrom})` : plan.rlFrom ? ` · RL from run ${plan.rlFrom}'s warm start` : ''} · manifest ${path.join(settings.home, 'demo-runs', `${runId}.json`)}`,
    );

    phase('1/7 starting the stack');
    const stackStartedAt = Date.now();
    await stackUp(settings, {
      workers: false,
      onStarted: (name, seconds, outcome) => console.error(startedLine(name, seconds, outcome)),
    });
    const webUi = settings.temporal.embedded
      ? `http://127.0.0.1:${settings.temporal.uiPort}/namespaces/${settings.temporal.namespace}/workflows`
      : null;
    if (webUi) console.error(`  Web UI: ${webUi}`);
    const stackSeconds = Math.round((Date.now() - stackStartedAt) / 100) / 10;
    const services = openServices(settings, { poolSize: 4 });
    const { pool, blobs } = services;
    try {
      const corpus = await phases.run('corpus', async () => {
        const built = await buildDefaultCorpus(pool, {
          toolsDir: settings.toolsDir,
          onProgress: (message) => console.error(`  ${message}`),
        });
        return { sources: built.sources.map((source) => ({ source: source.source, documents: source.documents })), skipped: built.skipped };
      });
      const { versions } = services;
      await refuseConcurrentTraining(await services.client(), [`warm-start-${runId}`, `learner-${runId}`]);
      const startVersion = await phases.run('start-version', async () => {
        if (!(await versions.latest())) await runChild(['model', 'prepare']);
        return startVersionFlag(versions, plan.fromVersion ?? undefined, 'from-version');
      });
      console.error(`  starting from policy version ${startVersion}`);
      const workersStartedAt = Date.now();
      await restartInference(startVersion);
      await stackUp(settings, { workers: true });
      const workersSeconds = Math.round((Date.now() - workersStartedAt) / 100) / 10;
      const client = await services.client();
      const taskQueue = taskQueueName('agent', settings.taskQueuePrefix);
      const commit = repositoryCommit() || undefined;
      const context: StageContext = { client, blobs, taskQueue, runId, ...(commit ? { commit } : {}) };

      phase(
        plan.datasetFile
          ? `2/7 questions from ${plan.datasetFile}`
          : `2/7 synthesizing questions (hop counts ${plan.synthesis.hops.join(', ')}, fuzzes ${plan.synthesis.fuzzes}, ${plan.synthesis.candidatesPerHop} candidates per hop count)`,
      );
      const synthesized = await phases.run<SynthesizedSet[]>('synthesis', async () => {
        if (plan.datasetFile) return [];
        const key = synthesisCacheKey({
          corpusVersion: await searchCorpusVersion(pool),
          policyFiles: (await versions.get(startVersion))?.blobPrefix ?? `v${startVersion}`,
          synthesis: plan.synthesis,
        });
        return synthesizeOrReuse(
          blobs,
          { key, runId, fresh: plan.synthesis.reuse === false, log: (line) => console.error(`  ${line}`) },
          () => synthesize(context, plan.synthesis),
        );
      });
      const split = await phases.run<SplitRecord>('split', async () => {
        const rows = givenRows ?? (await Promise.all(synthesized.map((set) => synthesizedRows(blobs, set.blobKey)))).flat();
        const parts = splitQuestions(rows, plan.split, plan.synthesis.seed);
        if (parts.heldOut.length === 0)
          throw new Error(`no held-out question left of ${rows.length} questions: synthesize more (--synth-count)`);
        if (parts.candidates.length === 0)
          throw new Error(`no training question left of ${rows.length} questions: synthesize more (--synth-count)`);
        const keys = {
          heldOut: `datasets/${runId}/heldout.jsonl`,
          warmStart: `datasets/${runId}/warm-start.jsonl`,
          candidates: `datasets/${runId}/candidates.jsonl`,
        };
        await blobs.put(keys.heldOut, jsonl(parts.heldOut), 'application/x-ndjson');
        await blobs.put(keys.warmStart, jsonl(parts.warmStart), 'application/x-ndjson');
        await blobs.put(keys.candidates, jsonl(parts.candidates), 'application/x-ndjson');
        return {
          heldOut: parts.heldOut.length,
          warmStart: parts.warmStart.length,
          candidates: parts.candidates.length,
          unused: parts.unused,
          contaminated: parts.contaminated,
          keys,
        };
      });
      for (const set of synthesized)
        console.error(
          `  ${set.hops} hop${set.hops > 1 ? 's' : ''}: ${set.accepted}/${set.candidates} accepted${
            Object.keys(set.rejectionsByReason).length
              ? ` (rejected: ${Object.entries(set.rejectionsByReason)
                  .map(([reason, count]) => `${count} ${reason}`)
                  .join('; ')})`
              : ''
          }${set.reusedFrom ? ` · reused dataset ${set.datasetId} (made by run ${set.reusedFrom})` : ''}`,
        );
      console.error(
        `  split: ${split.heldOut} held-out, ${split.warmStart} warm-start, ${split.candidates} training candidates; ${split.contaminated.length} held-out dropped as contaminated`,
      );
      if (split.heldOut < plan.split.heldOut)
        console.error(
          `  note: ${split.heldOut} held-out questions, fewer than the ${plan.split.heldOut} asked (too few accepted or contaminated)`,
        );
      const readRows = async (key: string) =>
        (await blobs.get(key))
          .toString('utf8')
          .split('\n')
          .filter((line) => line.trim())
          .map((line) => JSON.parse(line) as QuestionRow);
      const heldOutRows = await readRows(split.keys.heldOut);
      // The rows the split was made of (a split stored before rows carried their hop count lacks it: --train-hops reads it here).
      const sourceRows = async () => givenRows ?? (await Promise.all(synthesized.map((set) => synthesizedRows(blobs, set.blobKey)))).flat();

      const trainingQuestions = async () => {
        const questions = trainingPool(
          await readRows(split.keys.candidates),
          plan.rl.trainWarmStart ? await readRows(split.keys.warmStart) : null,
          plan.synthesis.seed,
        );
        if (!plan.rlContinue) return questions;
        // A continued run goes on to the questions the RL it continues did not draw before it repeats any.
        const earlier = continuedRuns(settings.home, plan);
        const drawn = new Set((await questionIdsOfRuns(pool, earlier)).map(curriculumBaseQuestionId));
        const ordered = continuedPool(questions, drawn);
        console.error(
          `  --rl-continue: ${questions.filter((row) => !drawn.has(row.id)).length} of ${questions.length} training questions not drawn by ${earlier.join(', ')} come first`,
        );
        return ordered;
      };

      const references = await phases.run('references', async () => {
        const sets = [];
        for (const name of plan.references.sets) {
          const set = await resolveDataset(name, { limit: plan.references.limit });
          sets.push({ name: set.name, rows: set.items.map(toQuestionRow) });
        }
        return sets;
      });

      const evaluateStage = (stage: string, version: number) =>
        phases.run<StageResult>(`evaluation-${stage}`, async () => {
          await restartInference(version);
          const heldOut = await evaluate(context, {
            resultId: `${runId}-eval-${stage}`,
            dataset: `demo-heldout`,
            rows: heldOutRows,
            k: plan.evaluation.k,
            trajectory: plan.evaluation.trajectory,
            policyVersion: version,
            seed: 0,
            concurrency: plan.evaluation.concurrency,
            label: `held-out, ${stage} (v${version})`,
          });
          console.error(
            `  held-out EM ${pct(heldOut.em)} ${interval(heldOut.emCi95)} · F1 ${pct(heldOut.f1)} · ${heldOut.meanToolCalls.toFixed(2)} tool calls per sample`,
          );
          const outside: StageEvaluation[] = [];
          for (const reference of references) {
            const result = await evaluate(context, {
              resultId: `${runId}-ref-${reference.name.replace(/[^A-Za-z0-9]+/g, '-')}-${stage}`,
              dataset: reference.name,
              rows: reference.rows,
              k: plan.evaluation.k,
              trajectory: plan.evaluation.trajectory,
              policyVersion: version,
              seed: 0,
              concurrency: plan.evaluation.concurrency,
              label: `${reference.name}, ${stage} (v${version})`,
            });
            console.error(`  ${reference.name} EM ${pct(result.em)} ${interval(result.emCi95)}`);
            outside.push(result);
          }
          return { stage, version, heldOut, references: outside };
        });

      phase(`3/7 evaluating the base policy (v${startVersion}) on ${split.heldOut} held-out questions`);
      const base = await evaluateStage('base', startVersion);

      let warm: { result: WarmStartResult; evaluation: StageResult } | null = null;
      let rlStartVersion = startVersion;
      if (plan.warmStart.source === 'gold') {
        phase(`4/7 warm start: SFT on ${split.warmStart} gold paths × ${plan.warmStart.epochs} epochs, then evaluation`);
        console.error(
          `  ${await measureGoldTurns(
            services,
            startVersion,
            await readRows(split.keys.warmStart),
            parseTrajectoryInput({ question: 'gold turns', ...plan.rl.trajectory }).limits.maxNewTokensPerTurn,
          )}`,
        );
        const result = await phases.run<WarmStartResult>('warm-start', async () => {
          const { handle, how } = await startOrAttach(client, warmStartWorkflowType, {
            taskQueue,
            workflowId: `warm-start-${runId}`,
            staticSummary: `demo warm start ${runId}`,
            args: [
              {
                runId: `${runId}-sft`,
                datasetKey: split.keys.warmStart,
                startVersion,
                settings: { source: 'gold', minReward: 1, concurrency: 4 },
                trajectory: { ...plan.evaluation.trajectory, rewardMetric: 'em' },
                hyperparameters: plan.warmStart.hyperparameters,
              },
            ],
          });
          if (how !== 'started') console.error(`  warm-start-${runId}: ${how}, followed`);
          return followWarmStart(client, handle, split.warmStart);
        });
        console.error(
          `  ${result.kept}/${result.finished} gold paths confirmed by the reward · v${result.startVersion} → v${result.finalVersion}`,
        );
        rlStartVersion = result.finalVersion;
        warm = { result, evaluation: await evaluateStage('warm', rlStartVersion) };
      } else {
        phase('4/7 warm start skipped (--warm-start none)');
      }
      // An --rl-continue run starts from the final policy of the RL it continues, measured by that run's RL evaluation.
      const continued = plan.rlContinue
        ? { ...(phases.manifest.phases[continuedEvaluationPhase]!.result as StageResult), stage: 'rl-start' }
        : null;
      // The weights RL starts from (and the band probe samples): the warm start's, or those of the RL continued.
      const rlPolicyVersion = continued?.version ?? rlStartVersion;

      phase(
        plan.band.enabled
          ? `5/7 learnable band: ${split.candidates} candidates${plan.rl.trainWarmStart ? ` and ${split.warmStart} warm-start questions` : ''} × ${plan.band.k} samples at T = ${rolloutTemperature(plan)} (the RL temperature), keeping ${plan.band.low} < pass rate < ${plan.band.high}`
          : `5/7 no band probe: RL starts on every ${plan.rl.trainHops ? `${plan.rl.trainHops.join('- or ')}-hop ` : ''}candidate${plan.rl.trainWarmStart ? ' and warm-start question' : ''}${plan.rl.curriculum ? `; the curriculum retires a question online once its groups pass at ≥ ${plan.band.high} or ≤ ${plan.band.low}` : ' (--no-curriculum)'}`,
      );
      const band = await phases.run<BandRecord>('band', async () => {
        const candidates = trainingCandidates(
          withHops(await trainingQuestions(), plan.rl.trainHops ? await sourceRows() : []),
          plan.rl.trainHops ?? null,
        );
        const trainKey = `datasets/${runId}/train.jsonl`;
        if (!plan.band.enabled) {
          await blobs.put(trainKey, jsonl(candidates), 'application/x-ndjson');
          return { probed: 0, kept: candidates.length, passRates: {}, histogram: {}, fallback: false, trainKey, seconds: 0 };
        }
        await restartInference(rlPolicyVersion);
        const probe = await evaluate(context, {
          resultId: `${runId}-probe`,
          dataset: 'demo-band-probe',
          rows: candidates,
          k: plan.band.k,
          trajectory: probeTrajectory(plan),
          policyVersion: rlPolicyVersion,
          seed: 1000,
          concurrency: plan.evaluation.concurrency,
          label: `band probe (v${rlPolicyVersion})`,
        });
        const passRates = Object.fromEntries(probe.perQuestion.map((item) => [item.questionId, item.score]));
        const histogram: Record<string, number> = {};
        for (const item of probe.perQuestion) histogram[item.score.toFixed(2)] = (histogram[item.score.toFixed(2)] ?? 0) + 1;
        const kept = new Set(
          inBand(
            probe.perQuestion.map((item) => ({ ...item, passRate: item.score })),
            plan.band,
          ).map((item) => item.questionId),
        );
        const fallback = kept.size === 0;
        // The band first; with the curriculum the harder questions (pass rate at or below LOW) follow as its
        // reserve, entering as band questions are mastered. Questions already at or above HIGH are left out.
        const harder = plan.rl.curriculum ? candidates.filter((row) => !kept.has(row.id) && (passRates[row.id] ?? 0) <= plan.band.low) : [];
        const train = fallback ? candidates : [...candidates.filter((row) => kept.has(row.id)), ...harder];
        await blobs.put(trainKey, jsonl(train), 'application/x-ndjson');
        return { probed: candidates.length, kept: kept.size, passRates, histogram, fallback, trainKey, seconds: probe.seconds };
      });
      if (plan.rl.trainHops)
        console.error(
          `  --train-hops ${plan.rl.trainHops.join(',')}: ${plan.band.enabled ? band.probed : band.kept} of the ${split.candidates} candidates${plan.rl.trainWarmStart ? ` and ${split.warmStart} warm-start questions` : ''}`,
        );
      else if (plan.rl.trainWarmStart)
        console.error(
          `  --train-warm-start: ${plan.band.enabled ? band.probed : band.kept} training questions (${split.candidates} candidates, ${split.warmStart} warm-start)`,
        );
      if (plan.band.enabled) {
        console.error(
          `  pass rates: ${Object.entries(band.histogram)
            .sort()
            .map(([rate, count]) => `${count}× ${rate}`)
            .join(', ')} → ${band.kept} of ${band.probed} in the band`,
        );
        if (band.fallback)
          console.error(
            '  note: no candidate is in the band; RL trains on every candidate (expect groups with zero advantage; widen the band or synthesize easier questions)',
          );
      }

      phase(
        `6/7 async RL: ${String(plan.rl.settings.maxSteps)} steps of ${String(plan.rl.settings.batchSize)} trajectories (G=${String(plan.rl.settings.groupSize)})`,
      );
      // An --rl-from run starts from its source's warm-started version registered again (versions only grow: the
      // source's own RL published the versions after it), once: a resumed run keeps the one it registered.
      const learnerStartVersion = plan.rlFrom
        ? await phases.run('rl-start-version', () =>
            startVersionFlag(versions, rlPolicyVersion, plan.rlContinue ? 'rl-continue' : 'rl-from'),
          )
        : rlStartVersion;
      if (learnerStartVersion !== rlPolicyVersion)
        console.error(
          `  RL starts from v${learnerStartVersion} (the weights of ${continued ? `${plan.rlContinue}'s RL v${rlPolicyVersion}` : `${plan.rlFrom}'s warm start v${rlStartVersion}`})`,
        );
      // --validation: the last N training candidates of the split leave RL's questions and choose the version kept.
      const validation = plan.rl.validation
        ? await phases.run<ValidationSplit>('validation-split', async () => {
            const held = (await readRows(split.keys.candidates)).slice(-plan.rl.validation!.questions);
            const heldIds = new Set(held.map((row) => row.id));
            const train = (await readRows(band.trainKey)).filter((row) => !heldIds.has(row.id));
            if (train.length === 0)
              throw new UsageError(
                `--validation ${plan.rl.validation!.questions} holds back every training question; give a smaller --validation`,
              );
            const trainKey = `datasets/${runId}/train-without-validation.jsonl`;
            await blobs.put(trainKey, jsonl(train), 'application/x-ndjson');
            return { rows: held, trainKey, training: train.length };
          })
        : null;
      if (validation)
        console.error(
          `  --validation: ${validation.rows.length} of the training candidates held out of RL to choose the version kept; ${validation.training} training questions`,
        );
      const learned = await phases.run<LearnerResult>('rl', async () => {
        // A learner of this run still running (this process was killed) has published newer versions: serve the newest.
        const running = await client.workflow
          .getHandle(`learner-${runId}`)
          .describe()
          .then((description) => description.status.name === 'RUNNING')
          .catch(() => false);
        await restartInference(running ? ((await versions.latest())?.version ?? rlStartVersion) : learnerStartVersion);
        const { handle, how } = await startOrAttach(client, learnerWorkflowType, {
          taskQueue,
          workflowId: `learner-${runId}`,
          staticSummary: `demo learner ${runId}`,
          args: [
            {
              runId,
              datasetKey: validation?.trainKey ?? band.trainKey,
              startVersion: learnerStartVersion,
              settings: plan.rl.settings,
              trajectory: plan.rl.trajectory,
              hyperparameters: plan.rl.hyperparameters,
              // The active set starts as the band (or every candidate when the band came out empty).
              ...(plan.rl.curriculum
                ? {
                    curriculum: {
                      ...plan.rl.curriculum,
                      activeSize: Math.max(1, Math.min(band.fallback ? band.probed : band.kept, Number(plan.rl.settings.batchSize))),
                    },
                  }
                : {}),
            },
          ],
        });
        const steps = Number(plan.rl.settings.maxSteps);
        const bar = progressBar(`training steps${how === 'started' ? '' : ` (${how})`}`, steps);
        const result = await followWorkflow<LearnerResult, LearnerState>(handle, {
          query: learnerStateQuery,
          intervalMs: 2000,
          async onState(state) {
            const engine = state.training ? describePending(await pendingActivity(client, handle, 'trainStep')) : '';
            bar.update(
              state.step,
              `v${state.version} · ${state.inflight} in flight · ${state.ready} ready${state.training ? ` · training${engine ? ` (${engine})` : ''}` : ''}`,
            );
          },
        });
        bar.finish(`v${result.finalVersion}`, result.steps);
        const leftovers = leftoverRolloutsLine(await cancelLeftoverRollouts(client, runId));
        if (leftovers) console.error(leftovers);
        return result;
      });
      const rl = await evaluateStage('rl', learned.finalVersion);
      // --validation: the start and every K-th version after it (the last always) on the validation set; the best of
      // them (the latest of equals) is evaluated on the held-out set as stage rl-best.
      const validated: { version: number; em: number; emCi95: readonly [number, number] }[] = [];
      let best: StageResult | null = null;
      if (validation && plan.rl.validation) {
        const every = plan.rl.validation.everyVersions;
        const versions = validationVersions(learnerStartVersion, learned.finalVersion, every);
        for (const version of versions) {
          const result = await phases.run<StageEvaluation>(`validation-v${version}`, async () => {
            await restartInference(version);
            return evaluate(context, {
              resultId: `${runId}-validation-v${version}`,
              dataset: 'demo-validation',
              rows: validation.rows,
              k: 1,
              trajectory: plan.evaluation.trajectory,
              policyVersion: version,
              seed: 0,
              concurrency: plan.evaluation.concurrency,
              label: `validation (v${version})`,
            });
          });
          validated.push({ version, em: result.em, emCi95: result.emCi95 });
        }
        const chosen = bestValidated(validated);
        console.error(`  validation EM: ${validated.map((row) => `v${row.version} ${pct(row.em)}`).join(' → ')} · kept v${chosen.version}`);
        best =
          chosen.version === learned.finalVersion
            ? { ...rl, stage: 'rl-best' }
            : chosen.version === learnerStartVersion
              ? { ...(continued ?? warm?.evaluation ?? base), stage: 'rl-best' }
              : await evaluateStage('rl-best', chosen.version);
      }

      phase('7/7 the RL gain and the report');
      const scores = (stage: StageResult) => stage.heldOut.perQuestion.map((item) => ({ questionId: item.questionId, score: item.score }));
      const reference = warm?.evaluation ?? base;
      const rlGain: PairedDifference = pairedDifference(scores(reference), scores(rl), 13);
      const warmGain: PairedDifference | null = warm ? pairedDifference(scores(base), scores(warm.evaluation), 14) : null;
      const stages = [
        base,
        ...(warm ? [warm.evaluation] : []),
        ...(continued ? [continued] : []),
        rl,
        // The best version by validation, when it is neither the last nor the start (those are shown already).
        ...(best && best.version !== rl.version && best.version !== rlPolicyVersion ? [best] : []),
      ];
      // The part of the gain this run's RL made: paired against the policy it started from.
      const continuedGain: PairedDifference | null = continued ? pairedDifference(scores(continued), scores(rl), 15) : null;
      const bestGain: PairedDifference | null = best ? pairedDifference(scores(reference), scores(best), 16) : null;
      const seconds = Math.round((Date.now() - startedAt) / 1000) + priorSeconds(manifest);
      const report = {
        runId,
        seconds,
        webUi,
        corpus,
        plan,
        synthesis: synthesized,
        split,
        band,
        policy: { startVersion, warmStartVersion: warm?.result.finalVersion ?? null, finalVersion: learned.finalVersion },
        stages,
        rlGain,
        warmGain,
        ...(continued ? { continued: { run: plan.rlContinue, version: continued.version }, continuedGain } : {}),
        ...(best ? { validation: { questions: validation?.rows.length, versions: validated, best: best.version }, best, bestGain } : {}),
        warmStart: warm
          ? { kept: warm.result.kept, finished: warm.result.finished, steps: warm.result.steps, wallSeconds: warm.result.wallSeconds }
          : null,
        learning: {
          steps: learned.steps,
          history: learned.history,
          samplesPerHour: learned.samplesPerHour,
          trainerBusy: learned.trainerBusy,
          maxStaleness: learned.maxStaleness,
          consumed: learned.consumed,
          dropped: learned.dropped,
          zeroAdvantageGroupShare: learned.zeroAdvantageGroupShare ?? null,
        },
      };
      const reportDir = path.join(settings.home, 'reports');
      fs.mkdirSync(reportDir, { recursive: true });
      const reportPath = path.join(reportDir, `${runId}.json`);
      fs.writeFileSync(reportPath, JSON.stringify(report, null, 2));
      await phases.run('finished', async () => ({ seconds }));
      const reportStartedAt = Date.now();
      const html = await writeReport(services, settings.home, { runId, out: reportPath.replace(/\.json$/, '.html'), pages: true });
      const stageSeconds = [
        { stage: 'stack', seconds: stackSeconds },
        // The workers start (this session) after the model is there, before synthesis.
        ...phases
          .stageSeconds()
          .flatMap((row) =>
            row.stage === 'finished' ? [] : row.stage === 'start-version' ? [row, { stage: 'workers', seconds: workersSeconds }] : [row],
          ),
        { stage: 'report', seconds: Math.round((Date.now() - reportStartedAt) / 100) / 10 },
      ];

      console.log(`\nLonghaul demo ${runId} — ${seconds} s`);
      console.log(
        `held-out EM (${split.heldOut} questions × ${plan.evaluation.k}): ${stages.map((stage) => `${stage.stage} v${stage.version} ${pct(stage.heldOut.em)} ${interval(stage.heldOut.emCi95)}`).join(' → ')}`,
      );
      console.log(
        `RL gain (paired, RL − ${warm ? 'warm start' : 'base'}, ${rlGain.n} questions): ${rlGain.mean >= 0 ? '+' : ''}${pct(rlGain.mean)} points ${interval(rlGain.ci95)}${warmGain ? ` · warm-start gain ${warmGain.mean >= 0 ? '+' : ''}${pct(warmGain.mean)} ${interval(warmGain.ci95)}` : ''}`,
      );
      if (continuedGain)
        console.log(
          `RL gain of this run (paired, RL − ${plan.rlContinue}'s RL v${continued?.version}, ${continuedGain.n} questions): ${continuedGain.mean >= 0 ? '+' : ''}${pct(continuedGain.mean)} points ${interval(continuedGain.ci95)}`,
        );
      if (best && bestGain)
        console.log(
          `RL gain of the best version by validation (v${best.version} of ${validated.map((row) => `v${row.version} ${pct(row.em)}`).join(', ')} on ${validation?.rows.length} validation questions; held-out ${pct(best.heldOut.em)} ${interval(best.heldOut.emCi95)}): ${bestGain.mean >= 0 ? '+' : ''}${pct(bestGain.mean)} points ${interval(bestGain.ci95)}`,
        );
      console.log(
        `tool calls per question: ${stages.map((stage) => `${stage.stage} ${stage.heldOut.meanToolCalls.toFixed(2)}`).join(' → ')} · verified by a further search: ${stages.map((stage) => `${stage.stage} ${stage.heldOut.behaviour?.verifiedShare === null || stage.heldOut.behaviour === null ? '-' : pct(stage.heldOut.behaviour.verifiedShare)}`).join(' → ')} · documents: ${stages.map((stage) => `${stage.stage} ${stage.heldOut.behaviour ? stage.heldOut.behaviour.meanDistinctDocuments.toFixed(2) : '-'}`).join(' → ')}`,
      );
      console.log(
        `where right answers are lost (gold seen in an observation / stated in its reasoning / stated but not answered): ${stages.map((stage) => `${stage.stage} ${goldLine(stage.heldOut.behaviour)}`).join(' → ')}`,
      );
      for (const [index, set] of (stages[0]?.references ?? []).entries())
        console.log(
          `${set.dataset} EM: ${stages.map((stage) => `${stage.stage} ${pct(stage.references[index]?.em ?? 0)} ${interval(stage.references[index]?.emCi95 ?? [0, 0])}`).join(' → ')}`,
        );
      console.log(
        `RL (${trainedLabel(plan.rl.hyperparameters)}): reward per step ${learned.history.map((stats) => `v${stats.version} ${stats.meanReward.toFixed(3)}`).join(' → ') || '(no step)'} · zero-advantage groups ${learned.zeroAdvantageGroupShare === undefined ? '-' : pct(learned.zeroAdvantageGroupShare)} % · trainer busy ${(learned.trainerBusy * 100).toFixed(0)} % · max staleness ${learned.maxStaleness}`,
      );
      const signal = signalSummary(html.model.rlSignal ?? []);
      if (signal) console.log(signal);
      const advantage = advantageSummary(html.model.rlAdvantage ?? []);
      if (advantage) console.log(advantage);
      console.log(stageTable(stageSeconds));
      console.log(`report: ${reportPath}`);
      console.log(`HTML report: ${html.path}`);
      const storage = await retentionPlan(services, { keepLast: 3 });
      if (storage.plan.pruned.length > 0)
        console.log(
          `policy versions: ${storage.storedVersions} in the blob store (${gib(storage.storedBytes)}); \`longhaul model prune --yes\` frees ${gib(storage.plan.freedBytes)} (${storage.plan.pruned.length} intermediate versions; see --help)`,
        );
      if (values.json === true)
        console.log(
          JSON.stringify({
            run_id: runId,
            minutes: Number((seconds / 60).toFixed(2)),
            heldout_questions: split.heldOut,
            em: {
              base: base.heldOut.em,
              warm_start: warm?.evaluation.heldOut.em ?? null,
              ...(continued ? { rl_start: continued.heldOut.em } : {}),
              rl: rl.heldOut.em,
            },
            em_ci95: {
              base: base.heldOut.emCi95,
              warm_start: warm?.evaluation.heldOut.emCi95 ?? null,
              ...(continued ? { rl_start: continued.heldOut.emCi95 } : {}),
              rl: rl.heldOut.emCi95,
            },
            rl_gain_em: rlGain.mean,
            rl_gain_em_ci95: rlGain.ci95,
            ...(continuedGain
              ? { rl_continue: plan.rlContinue, continued_gain_em: continuedGain.mean, continued_gain_em_ci95: continuedGain.ci95 }
              : {}),
            ...(best && bestGain
              ? {
                  rl_best: {
                    version: best.version,
                    validation_questions: validation?.rows.length ?? 0,
                    validation_em: Object.fromEntries(validated.map((row) => [`v${row.version}`, row.em])),
                    em: best.heldOut.em,
                    em_ci95: best.heldOut.emCi95,
                    gain_em: bestGain.mean,
                    gain_em_ci95: bestGain.ci95,
                  },
                }
              : {}),
            warm_gain_em: warmGain?.mean ?? null,
            warm_gain_em_ci95: warmGain?.ci95 ?? null,
            zero_advantage_group_share: learned.zeroAdvantageGroupShare ?? null,
            trainer_busy: learned.trainerBusy,
            tool_calls_per_question: Object.fromEntries(stages.map((stage) => [stage.stage, stage.heldOut.meanToolCalls])),
            band: { probed: band.probed, kept: band.kept, fallback: band.fallback },
            references: Object.fromEntries(
              (stages[0]?.references ?? []).map((set, index) => [
                set.dataset,
                Object.fromEntries(stages.map((stage) => [stage.stage, stage.references[index]?.em ?? null])),
              ]),
            ),
            report: html.path,
            stage_seconds: Object.fromEntries(stageSeconds.map((row) => [row.stage, row.seconds])),
          }),
        );
      return 0;
    } finally {
      await services.close();
    }
  },
};

const gib = (bytes: number) => `${(bytes / 2 ** 30).toFixed(1)} GiB`;

/** Wall seconds of earlier sessions of a resumed run: from its creation to its last finished phase before this session. */
function priorSeconds(manifest: DemoManifest): number {
  const finished = Object.values(manifest.phases).map((phase) => Date.parse(phase.finishedAt));
  if (finished.length === 0) return 0;
  return Math.max(0, Math.round((Math.max(...finished) - Date.parse(manifest.createdAt)) / 1000));
}
