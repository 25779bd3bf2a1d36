import fs from 'node:fs';
import path from 'node:path';
import { config } from '../../infra/config.js';
import { openServices } from '../../composition/services.js';
import { stackUp } from '../../infra/services/stack.js';
import { parseQuestions } from '../../activities/learner.activities.js';
import { parseRlHyperparameters } from '../../gpu/train/train-step.schema.js';
import { parseLearnerInput } from '../../workflows/contracts/learner.input.js';
import { taskQueueName } from '../../workflows/contracts/queues.js';
import { parseTrajectoryInput } from '../../workflows/contracts/trajectory.input.js';
import { formatRewardMetrics } from '../../workflows/contracts/trajectory.contract.js';
import { rlRolloutTemperature } from '../../workflows/trajectory-child.js';
import {
  batchSelections,
  learnerStateQuery,
  learnerWorkflowType,
  type CurriculumCounts,
  type TrainPhases,
  type LearnerResult,
  type LearnerState,
  shownSyncPhases,
} from '../../workflows/contracts/learner.contract.js';
import { integerFlag, parseFlags, rateFlag } from '../arguments.js';
import { UsageError, type Command } from '../command.js';
import { cancelLeftoverRollouts, leftoverRolloutsLine } from '../leftover-rollouts.js';
import { followWorkflow } from '../follow-workflow.js';
import { jsonObjectFlag, preflight } from '../preflight.js';
import { describePending, pendingActivity } from '../activity-progress.js';
import { progressBar } from '../progress.js';
import { startVersionFlag, startVersionRequest } from '../start-version.js';
import { refuseConcurrentTraining, refuseUsedRunIds } from '../training-guard.js';
import { createPgReportSource } from '../../infra/postgres/report-source.pg.js';

/** The flag behind each learner input field, for preflight refusals. */
const learnerFlags = {
  runId: 'run-id',
  'settings.mode': 'mode',
  'settings.maxSteps': 'steps',
  'settings.batchSize': 'batch',
  'settings.groupSize': 'group',
  groupSize: 'group',
  'settings.eta': 'eta',
  'settings.maxInflight': 'max-inflight',
  'limits.maxTurns': 'max-turns',
  'limits.maxNewTokensPerTurn': 'max-new-tokens',
  'options.temperature': 'temperature',
  'options.maxObservationChars': 'max-observation-chars',
  rewardMetric: 'reward',
  rewardFormatWeight: 'format-weight',
  rewardFormatCredit: 'format-credit',
  rewardUnanswered: 'unanswered-reward',
  curriculum: 'curriculum',
  'curriculum.activeSize': 'curriculum',
  'curriculum.lower': 'curriculum-lower',
  'curriculum.upper': 'curriculum-upper',
  'curriculum.masteredAfter': 'mastered-after',
  'curriculum.tooHardAfter': 'too-hard-after',
  'curriculum.passReward': 'pass-reward',
  hyperparameters: 'hyperparameters',
  'hyperparameters.learningRate': 'lr',
};

/** --temperature: a number in [0, 5], default rlRolloutTemperature (RL samples). */
function temperatureFlag(text: string | undefined): number {
  if (text === undefined) return rlRolloutTemperature;
  const value = Number(text);
  if (text.trim() === '' || !Number.isFinite(value) || value < 0 || value > 5)
    throw new UsageError(`--temperature expects a number between 0 and 5 (e.g. 1; 0 = greedy), got "${text}"`);
  return value;
}

/** A number flag passed on as it is (the learner's and trajectory's checks give the range), or a UsageError when it is no number. */
function numberFlag(text: string | undefined, flag: string): number | undefined {
  if (text === undefined) return undefined;
  const value = Number(text);
  if (text.trim() === '' || !Number.isFinite(value)) throw new UsageError(`--${flag} expects a number, got "${text}"`);
  return value;
}

/** The curriculum flags as the learner's `curriculum` input; absent unless one of them is given. */
function curriculumInput(values: Record<string, string | boolean | undefined>): Record<string, number> | undefined {
  const fields = {
    activeSize: ['curriculum', true],
    lower: ['curriculum-lower', false],
    upper: ['curriculum-upper', false],
    masteredAfter: ['mastered-after', true],
    tooHardAfter: ['too-hard-after', true],
    passReward: ['pass-reward', false],
  } as const;
  const curriculum: Record<string, number> = {};
  for (const [field, [flag, integer]] of Object.entries(fields)) {
    const text = values[flag] as string | undefined;
    const value = integer ? (text === undefined ? undefined : integerFlag(text, flag, 0, 1, 100_000)) : numberFlag(text, flag);
    if (value !== undefined) curriculum[field] = value;
  }
  return Object.keys(curriculum).length > 0 ? curriculum : undefined;
}

function curriculumLine(counts: CurriculumCounts): string {
  return `${counts.active} active, ${counts.mastered} mastered, ${counts.tooHard} too hard, ${counts.entered} entered`;
}

/** " (files 3.1, open 8.2)": the sync's phases of ≥ 0.05 s, or nothing. */
function syncBreakdown(phases: Readonly<Record<string, number>> | undefined): string {
  const parts = shownSyncPhases(phases);
  return parts.length ? ` (${parts.map(([name, value]) => `${name} ${value.toFixed(1)}`).join(', ')})` : '';
}

/** "stage 1.2 s, engine 98.0 s (proximal 46.5, update 24.3, save 30.8), sync 12.5 s": where a step's time went. */
export function trainPhasesLine(phases: TrainPhases, syncSeconds?: number, syncPhases?: Readonly<Record<string, number>>): string {
  const seconds = (value: number) => value.toFixed(1);
  const inner = (
    [
      ['proximal', phases.proximalSeconds],
      ['update', phases.updateSeconds],
      ['save', phases.saveSeconds],
    ] as const
  )
    .filter(([, value]) => value !== undefined)
    .map(([name, value]) => `${name} ${seconds(value!)}`);
  const parts = [
    ...(phases.stageSeconds !== undefined ? [`stage ${seconds(phases.stageSeconds)} s`] : []),
    ...(phases.engineSeconds !== undefined
      ? [`engine ${seconds(phases.engineSeconds)} s${inner.length ? ` (${inner.join(', ')})` : ''}`]
      : []),
    ...(phases.engineSeconds === undefined && inner.length ? [inner.join(', ')] : []),
    ...(syncSeconds !== undefined ? [`sync ${seconds(syncSeconds)} s${syncBreakdown(syncPhases)}`] : []),
  ];
  return parts.join(', ');
}

export const trainCommand: Command = {
  name: 'train',
  summary: 'run the RL learner (async by default) on a question set, with live progress',
  usage: `longhaul train --dataset FILE [--run-id ID] [--mode async|sync] [--steps N] [--batch N] [--group N] [--eta N]
               [--max-inflight N] [--max-turns N] [--max-new-tokens N] [--max-observation-chars N] [--temperature T] [--lr X]
               [--keep-equal-groups] [--selection S] [--reward METRIC] [--format-weight W] [--format-credit C] [--unanswered-reward R] [--curriculum N] [--curriculum-lower X] [--curriculum-upper X]
               [--mastered-after N] [--too-hard-after N] [--pass-reward X]
               [--start-version N] [--hyperparameters JSON] [--json]

FILE is JSONL of {"id","question","answers":[…]}. The learner keeps trajectories streaming while
training steps run on the gpu-train queue; it survives any worker or server crash. Watch it in the
Web UI (search attribute LonghaulRunId) or with \`longhaul temporal workflow query\`.

  --mode M            async (default) or sync (generate a whole batch, then train)
  --steps N           training steps (default 10)      --batch N   trajectories per step (default 16)
  --group N           samples per question (default 4) --eta N     max staleness in versions (default 4)
  --max-turns N       turns per trajectory (default 10) --lr X      learning rate (default 1e-5)
  --max-new-tokens N  tokens per turn (default 128)     --max-observation-chars N   characters of a
                      tool result the agent sees (default 5000; the demo's warm start and RL use 600)
  --temperature T     rollout sampling temperature (default 1: RL samples, so the G answers of a
                      group differ; 0 = greedy, which makes every group's rewards equal). The
                      trainer scores its logits at the same temperature (behaviour weight 1 on-policy)
  --keep-equal-groups keep groups whose rewards are all equal (dropped by default)
  --selection S       how a step picks its batch from the buffer: expiring (default: the groups this step
                      is the last able to train, then the freshest), freshest, or priority (groups whose
                      rewards differ most from their mean, weighted by length)
  --reward METRIC     the reward: f1 (default), em, cover_em, judge, f1_format = (1 − W)·F1 + W·format
                      (graded credit plus a term for well-formed steps and an answer, so groups differ
                      even when no answer is right), or em_format = (1 − W)·EM + W·format (credit for the
                      answer alone: F1 also pays a sentence that contains the gold, and RL on it learns to
                      answer in sentences, docs/BENCHMARKS.md "Session 26")   --format-weight W   W in [0, 1] (default 0.1)
  --format-credit C   who earns the format term: when-scored (default: only an answer whose F1 or EM is above 0,
                      so wrong, missing and run-out trajectories all earn 0 and a group with no right answer
                      has no advantage) or always (every trajectory: on questions the policy rarely gets
                      right it learned to answer anything one step early, docs/BENCHMARKS.md "Session 39")
  --unanswered-reward R  the reward of a trajectory that ends without an answer (repeated a call, ran out of
                      turns), in [−1, 0] (default 0, a wrong answer's): below 0 makes answering worth more than
                      giving up, with any metric. Group-std advantages scale any gap to unit size, so a small R
                      is only small with '{"ppo":{"groupScale":"none"}}' in --hyperparameters; even then it can
                      outweigh rare right answers (R −0.1 collapsed a run: docs/BENCHMARKS.md, session 42)
  --start-version N   policy version to train (default: the latest; an older one is registered again
                      as latest + 1, since every step publishes base + 1)
  --hyperparameters J train-step hyperparameters as JSON over the defaults, with the engine's names
                      (gpu/engine/manifest.schema.json), e.g. '{"ppo":{"clipEpsilon":0.3}}'; --lr wins

Curriculum (any of these turns it on; without one every question is used once, in file order):
  --curriculum N      draw groups from an active set of N questions (default 8), at first the file's
                      first N; each leaver is replaced by the next unused question
  --curriculum-lower X, --curriculum-upper X
                      the learnable band, 0 ≤ X < Y ≤ 1 (defaults 0 and 1): a group's pass rate is
                      the share of its samples with reward ≥ --pass-reward (default 0.5)
  --mastered-after N  a question leaves as mastered after N groups in a row at or above the upper
                      bound (default 2)
  --too-hard-after N  and as too hard (set aside) after N groups in a row at or below the lower bound
                      (default 2). Each step then reports the active, mastered, too-hard and entered
                      counts. Groups of a question repeat, so their trajectories carry question id <id>/g<n>

Everything is checked with the learner's own input checks before anything starts (exit 2 naming the
flag and the field).`,
  async run(args) {
    const { values } = parseFlags(args, {
      dataset: { type: 'string' },
      'run-id': { type: 'string' },
      mode: { type: 'string' },
      steps: { type: 'string' },
      batch: { type: 'string' },
      group: { type: 'string' },
      eta: { type: 'string' },
      'max-inflight': { type: 'string' },
      'max-turns': { type: 'string' },
      'max-new-tokens': { type: 'string' },
      'max-observation-chars': { type: 'string' },
      temperature: { type: 'string' },
      lr: { type: 'string' },
      'keep-equal-groups': { type: 'boolean' },
      selection: { type: 'string' },
      reward: { type: 'string' },
      'format-weight': { type: 'string' },
      'format-credit': { type: 'string' },
      'unanswered-reward': { type: 'string' },
      curriculum: { type: 'string' },
      'curriculum-lower': { type: 'string' },
      'curriculum-upper': { type: 'string' },
      'mastered-after': { type: 'string' },
      'too-hard-after': { type: 'string' },
      'pass-reward': { type: 'string' },
      json: { type: 'boolean' },
      'start-version': { type: 'string' },
      hyperparameters: { type: 'string' },
    });
    if (!values.dataset) throw new UsageError('--dataset FILE is required (JSONL of {"id","question","answers"})');
    if (!fs.existsSync(values.dataset)) throw new UsageError(`--dataset: "${values.dataset}" does not exist`);
    if (values.mode && !['async', 'sync'].includes(values.mode)) throw new UsageError(`--mode expects async or sync, got "${values.mode}"`);
    if (values.selection !== undefined && !(batchSelections as readonly string[]).includes(values.selection))
      throw new UsageError(`--selection expects one of ${batchSelections.join(', ')}, got "${values.selection}"`);
    const learningRate = rateFlag(values.lr, 'lr', 1e-5);
    const text = fs.readFileSync(values.dataset, 'utf8');
    try {
      parseQuestions(text, path.basename(values.dataset));
    } catch (error) {
      throw new UsageError(`--dataset: ${(error as Error).message}`);
    }
    const steps = integerFlag(values.steps, 'steps', 10, 1, 1_000_000);
    const batchSize = integerFlag(values.batch, 'batch', 16, 1, 100_000);
    const runId = values['run-id'] ?? `run-${new Date().toISOString().replace(/[:.]/g, '-')}`;
    const datasetKey = `datasets/${runId}/questions.jsonl`;
    const hyperparameters = jsonObjectFlag(values.hyperparameters, 'hyperparameters');
    const curriculum = curriculumInput(values);
    const formatWeight = numberFlag(values['format-weight'], 'format-weight');
    const unanswered = numberFlag(values['unanswered-reward'], 'unanswered-reward');
    for (const flag of ['format-weight', 'format-credit'] as const)
      if (values[flag] !== undefined && !(formatRewardMetrics as readonly string[]).includes(values.reward ?? 'f1'))
        throw new UsageError(`--${flag} applies to a reward with a format term: give --reward f1_format or em_format`);
    const learnerInput = {
      runId,
      datasetKey,
      settings: {
        mode: values.mode ?? 'async',
        maxSteps: steps,
        batchSize,
        groupSize: integerFlag(values.group, 'group', 4, 1, 256),
        eta: integerFlag(values.eta, 'eta', 4, 0, 1000),
        maxInflight: integerFlag(values['max-inflight'], 'max-inflight', 2 * batchSize, 1, 100_000),
        dropEqualRewardGroups: !values['keep-equal-groups'],
        ...(values.selection !== undefined ? { selection: values.selection } : {}),
      },
      trajectory: {
        limits: {
          maxTurns: integerFlag(values['max-turns'], 'max-turns', 10, 1, 100_000),
          maxNewTokensPerTurn: integerFlag(values['max-new-tokens'], 'max-new-tokens', 128, 1, 65_536),
        },
        options: {
          temperature: temperatureFlag(values.temperature),
          ...(values['max-observation-chars'] !== undefined
            ? { maxObservationChars: integerFlag(values['max-observation-chars'], 'max-observation-chars', 5000, 100, 1_000_000) }
            : {}),
        },
        ...(values.reward !== undefined ? { rewardMetric: values.reward } : {}),
        ...(formatWeight !== undefined ? { rewardFormatWeight: formatWeight } : {}),
        ...(values['format-credit'] !== undefined ? { rewardFormatCredit: values['format-credit'] } : {}),
        ...(unanswered !== undefined ? { rewardUnanswered: unanswered } : {}),
      },
      ...(curriculum ? { curriculum } : {}),
      hyperparameters: {
        ...hyperparameters,
        learningRate: values.lr === undefined ? (hyperparameters.learningRate ?? learningRate) : learningRate,
      },
    };
    preflight(
      () => {
        const { settings: checked } = parseLearnerInput(learnerInput);
        parseTrajectoryInput({ question: 'preflight', ...learnerInput.trajectory });
        parseRlHyperparameters(learnerInput.hyperparameters, checked.groupSize);
      },
      values.lr === undefined ? { ...learnerFlags, 'hyperparameters.learningRate': 'hyperparameters' } : learnerFlags,
    );
    // Read before anything starts: a bad --start-version exits 2 with the stack untouched.
    const requestedStartVersion = startVersionRequest(values['start-version'], 'start-version');
    const settings = config();
    await stackUp(settings, { workers: true });
    const services = openServices(settings);
    try {
      await services.blobs.put(datasetKey, text, 'application/x-ndjson');
      const client = await services.client();
      await refuseConcurrentTraining(client, [`learner-${runId}`]);
      await refuseUsedRunIds(createPgReportSource(services.pool), [runId], 'run-id');
      const startVersion = await startVersionFlag(services.versions, requestedStartVersion, 'start-version');
      const handle = await client.workflow.start(learnerWorkflowType, {
        taskQueue: taskQueueName('agent', settings.taskQueuePrefix),
        workflowId: `learner-${runId}`,
        staticSummary: `learner ${runId}`,
        args: [{ ...learnerInput, startVersion }],
      });
      if (settings.temporal.embedded)
        console.error(
          `learner learner-${runId} · Web UI http://127.0.0.1:${settings.temporal.uiPort}/namespaces/${settings.temporal.namespace}/workflows/learner-${runId}`,
        );
      const bar = progressBar('training steps', steps);
      const result = await followWorkflow<LearnerResult, LearnerState>(handle, {
        query: learnerStateQuery,
        async onState(state) {
          // While a step trains: the engine's progress, or why the step is being retried (a full disk waits here).
          const engine = state.training ? describePending(await pendingActivity(client, handle, 'trainStep')) : '';
          bar.update(
            state.step,
            `v${state.version} · ${state.inflight} in flight · ${state.ready} ready · ${state.dropped} dropped${state.training ? ` · training${engine ? ` (${engine})` : ''}` : ''}` +
              (state.curriculum ? ` · ${curriculumLine(state.curriculum)}` : ''),
          );
        },
      });
      bar.finish(`v${result.finalVersion}`, result.steps);
      const leftovers = leftoverRolloutsLine(await cancelLeftoverRollouts(client, runId));
      if (leftovers) console.error(leftovers);
      for (const stats of result.history)
        console.log(
          `step ${stats.step} → v${stats.version}: mean reward ${stats.meanReward.toFixed(3)}, staleness ≤ ${stats.maxStaleness}, ${stats.trainSeconds.toFixed(1)} s` +
            (stats.zeroAdvantageGroupShare === undefined
              ? ''
              : `, ${(stats.zeroAdvantageGroupShare * 100).toFixed(0)} % of ${stats.groupsSettled} groups had zero advantage`) +
            (stats.curriculum ? `; curriculum ${curriculumLine(stats.curriculum)}` : '') +
            (stats.trainPhases ? ` (${trainPhasesLine(stats.trainPhases, stats.syncSeconds, stats.syncPhases)})` : ''),
        );
      console.log(
        `${result.steps} steps · ${result.consumed} trajectories used, ${result.dropped} dropped · ${result.samplesPerHour.toFixed(0)} samples/h · trainer busy ${(result.trainerBusy * 100).toFixed(0)} %`,
      );
      if (values.json) console.log(JSON.stringify(result));
      return 0;
    } finally {
      await services.close();
    }
  },
};
