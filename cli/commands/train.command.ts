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
import { rlRolloutTemperature } from '../../workflows/trajectory-child.js';
import {
  learnerStateQuery,
  learnerWorkflowType,
  type LearnerResult,
  type LearnerState,
} from '../../workflows/contracts/learner.contract.js';
import { integerFlag, parseFlags, rateFlag } from '../arguments.js';
import { UsageError, type Command } from '../command.js';
import { followWorkflow } from '../follow-workflow.js';
import { jsonObjectFlag, preflight } from '../preflight.js';
import { progressBar } from '../progress.js';
import { startVersionFlag } from '../start-version.js';

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

export const trainCommand: Command = {
  name: 'train',
  summary: 'run the RL learner (async by default) on a question set, with live progress',
  usage: `longhaul train --dataset FILE [--run-id ID] [--mode async|sync] [--steps N] [--batch N] [--group N] [--eta N]
               [--max-inflight N] [--max-turns N] [--max-new-tokens N] [--temperature T] [--lr X] [--keep-equal-groups]
               [--start-version N] [--hyperparameters JSON] [--json]

FILE is JSONL of {"id","question","answers":[…]}. The learner keeps trajectories streaming while
training steps run on the gpu-train queue; it survives any worker or server crash. Watch it in the
Web UI (search attribute LonghaulRunId) or with \`longhaul temporal workflow query\`.

  --mode M            async (default) or sync (generate a whole batch, then train)
  --steps N           training steps (default 10)      --batch N   trajectories per step (default 16)
  --group N           samples per question (default 4) --eta N     max staleness in versions (default 4)
  --max-turns N       turns per trajectory (default 10) --lr X      learning rate (default 1e-5)
  --temperature T     rollout sampling temperature (default 1: RL samples, so the G answers of a
                      group differ; 0 = greedy, which makes every group's rewards equal). The
                      trainer scores its logits at the same temperature (behaviour weight 1 on-policy)
  --keep-equal-groups keep groups whose rewards are all equal (dropped by default)
  --start-version N   policy version to train (default: the latest; an older one is registered again
                      as latest + 1, since every step publishes base + 1)
  --hyperparameters J train-step hyperparameters as JSON over the defaults, with the engine's names
                      (gpu/engine/manifest.schema.json), e.g. '{"ppo":{"clipEpsilon":0.3}}'; --lr wins

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
      temperature: { type: 'string' },
      lr: { type: 'string' },
      'keep-equal-groups': { type: 'boolean' },
      json: { type: 'boolean' },
      'start-version': { type: 'string' },
      hyperparameters: { type: 'string' },
    });
    if (!values.dataset) throw new UsageError('--dataset FILE is required (JSONL of {"id","question","answers"})');
    if (!fs.existsSync(values.dataset)) throw new UsageError(`--dataset: "${values.dataset}" does not exist`);
    if (values.mode && !['async', 'sync'].includes(values.mode)) throw new UsageError(`--mode expects async or sync, got "${values.mode}"`);
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
      },
      trajectory: {
        limits: {
          maxTurns: integerFlag(values['max-turns'], 'max-turns', 10, 1, 100_000),
          maxNewTokensPerTurn: integerFlag(values['max-new-tokens'], 'max-new-tokens', 128, 1, 65_536),
        },
        options: { temperature: temperatureFlag(values.temperature) },
      },
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
    const settings = config();
    await stackUp(settings, { workers: true });
    const services = openServices(settings);
    try {
      await services.blobs.put(datasetKey, text, 'application/x-ndjson');
      const startVersion = await startVersionFlag(services.versions, values['start-version'], 'start-version');
      const client = await services.client();
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
        onState: (state) =>
          bar.update(
            state.step,
            `v${state.version} · ${state.inflight} in flight · ${state.ready} ready · ${state.dropped} dropped${state.training ? ' · training' : ''}`,
          ),
      });
      bar.finish(`v${result.finalVersion}`);
      for (const stats of result.history)
        console.log(
          `step ${stats.step} → v${stats.version}: mean reward ${stats.meanReward.toFixed(3)}, staleness ≤ ${stats.maxStaleness}, ${stats.trainSeconds.toFixed(1)} s` +
            (stats.zeroAdvantageGroupShare === undefined
              ? ''
              : `, ${(stats.zeroAdvantageGroupShare * 100).toFixed(0)} % of ${stats.groupsSettled} groups had zero advantage`),
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
