import fs from 'node:fs';
import path from 'node:path';
import type { Client, WorkflowHandle } from '@temporalio/client';
import { config } from '../../infra/config.js';
import { openServices } from '../../composition/services.js';
import { stackUp } from '../../infra/services/stack.js';
import { parseQuestions } from '../../activities/learner.activities.js';
import { parseSftHyperparameters } from '../../gpu/train/train-step.schema.js';
import { taskQueueName } from '../../workflows/contracts/queues.js';
import { parseTrajectoryInput } from '../../workflows/contracts/trajectory.input.js';
import { parseWarmStartInput } from '../../workflows/contracts/warm-start.input.js';
import {
  warmStartStateQuery,
  warmStartWorkflowType,
  type WarmStartResult,
  type WarmStartState,
} from '../../workflows/contracts/warm-start.contract.js';
import { integerFlag, parseFlags, rateFlag } from '../arguments.js';
import { UsageError, type Command } from '../command.js';
import { followWorkflow } from '../follow-workflow.js';
import { preflight } from '../preflight.js';
import { progressBar } from '../progress.js';
import { startVersionFlag, startVersionRequest } from '../start-version.js';
import { refuseConcurrentTraining, refuseUsedRunIds } from '../training-guard.js';
import { createPgReportSource } from '../../infra/postgres/report-source.pg.js';
import { describePending, pendingActivity } from '../activity-progress.js';
import { measureGoldTurns } from '../gold-turn-lengths.js';

/** Follow a warm-start run with progress bars (trajectories, then the engine's updates) until it ends. */
export async function followWarmStart(client: Client, handle: WorkflowHandle, expectedTrajectories: number): Promise<WarmStartResult> {
  const collecting = progressBar('warm-start trajectories', Math.max(1, expectedTrajectories));
  let collected = false;
  let training: { bar: ReturnType<typeof progressBar>; total: number } | undefined;
  const finished = await followWorkflow<WarmStartResult, WarmStartState>(handle, {
    query: warmStartStateQuery,
    async onState(state) {
      if (state.phase === 'collecting')
        collecting.update(state.finished, `${state.kept} kept · ${state.started - state.finished} in flight`);
      if (state.phase !== 'collecting' && !collected) {
        collecting.finish(`${state.kept}/${state.finished} kept`);
        collected = true;
      }
      if (state.phase === 'training') {
        const pending = await pendingActivity(client, handle, 'sftStep');
        const progress = pending?.progress ?? null;
        const total = progress?.of ?? 1;
        if (training?.total !== total) training = { bar: progressBar('warm-start sft updates', total), total };
        training.bar.update(progress?.step ?? 0, describePending(pending));
      }
    },
  });
  if (!collected) collecting.finish(`${finished.kept}/${finished.finished} kept`);
  training?.bar.finish(`v${finished.finalVersion}`);
  return finished;
}

/** The flag behind each warm-start input field, for preflight refusals. */
const warmStartFlags = {
  runId: 'run-id',
  'settings.source': 'source',
  'settings.samplesPerQuestion': 'samples',
  'settings.minReward': 'min-reward',
  'limits.maxTurns': 'max-turns',
  'limits.maxNewTokensPerTurn': 'max-new-tokens',
  'hyperparameters.learningRate': 'lr',
  'hyperparameters.epochs': 'epochs',
  'hyperparameters.batchSize': 'batch',
};

export const warmStartCommand: Command = {
  name: 'warm-start',
  summary: 'supervised warm start (SFT) on gold solution paths or rejection-sampled trajectories',
  usage: `longhaul warm-start --dataset FILE [--source gold|samples] [--run-id ID] [--start-version N] [--samples N]
                    [--min-reward X] [--epochs N] [--batch N] [--lr X] [--max-turns N] [--max-new-tokens N] [--json]

FILE is JSONL of {"id","question","answers":[…],"goldTurns":["<search>…</search>","<answer>…</answer>"]}.
--source gold (default) replays each row's goldTurns through the real agent loop (real tools, real
reward) with teacher forcing; --source samples runs N sampled trajectories per question. Either way
only trajectories with reward ≥ --min-reward are kept, and sftStep trains on them on the gpu-train
queue, publishing one new policy version. Survives any crash; watch it in the Web UI. With --source
gold it first prints how many gold paths have a turn longer than --max-new-tokens: teacher forcing
trains on such a turn, but the policy is cut at the limit and can never write it.

  --start-version N  policy version to fine-tune (default: the latest; an older one is registered
                     again as latest + 1, since every step publishes base + 1)
  --samples N        trajectories per question with --source samples (default 4)
  --min-reward X     keep threshold (default 1)   --epochs N   passes over the kept data (default 3)
  --batch N          trajectories per optimizer step (default 4)    --lr X   learning rate (default 1e-4)
  --max-turns N      turns per trajectory (default 10)   --max-new-tokens N  per turn (default 128)`,
  async run(args) {
    const { values } = parseFlags(args, {
      dataset: { type: 'string' },
      source: { type: 'string' },
      'run-id': { type: 'string' },
      'start-version': { type: 'string' },
      samples: { type: 'string' },
      'min-reward': { type: 'string' },
      epochs: { type: 'string' },
      batch: { type: 'string' },
      lr: { type: 'string' },
      'max-turns': { type: 'string' },
      'max-new-tokens': { type: 'string' },
      json: { type: 'boolean' },
    });
    if (!values.dataset) throw new UsageError('--dataset FILE is required (JSONL of {"id","question","answers","goldTurns"})');
    if (!fs.existsSync(values.dataset)) throw new UsageError(`--dataset: "${values.dataset}" does not exist`);
    const source = values.source ?? 'gold';
    if (source !== 'gold' && source !== 'samples') throw new UsageError(`--source expects gold or samples, got "${values.source}"`);
    const learningRate = rateFlag(values.lr, 'lr', 1e-4);
    const minReward = values['min-reward'] === undefined ? 1 : Number(values['min-reward']);
    if (!Number.isFinite(minReward)) throw new UsageError(`--min-reward expects a number, got "${values['min-reward']}"`);
    const text = fs.readFileSync(values.dataset, 'utf8');
    let rows;
    try {
      rows = parseQuestions(text, path.basename(values.dataset));
    } catch (error) {
      throw new UsageError(`--dataset: ${(error as Error).message}`);
    }
    const withGold = rows.filter((row) => row.goldTurns?.length).length;
    if (source === 'gold' && withGold === 0)
      throw new UsageError('--dataset: no row has "goldTurns"; add gold solution paths or use --source samples');
    const samples = integerFlag(values.samples, 'samples', 4, 1, 256);
    const runId = values['run-id'] ?? `sft-${new Date().toISOString().replace(/[:.]/g, '-')}`;
    const datasetKey = `datasets/${runId}/questions.jsonl`;
    const warmStartInput = {
      runId,
      datasetKey,
      settings: { source, samplesPerQuestion: samples, minReward },
      trajectory: {
        limits: {
          maxTurns: integerFlag(values['max-turns'], 'max-turns', 10, 1, 100_000),
          maxNewTokensPerTurn: integerFlag(values['max-new-tokens'], 'max-new-tokens', 128, 1, 65_536),
        },
        ...(source === 'samples' ? { options: { temperature: 1 } } : {}),
      },
      hyperparameters: {
        learningRate,
        epochs: integerFlag(values.epochs, 'epochs', 3, 1, 1000),
        batchSize: integerFlag(values.batch, 'batch', 4, 1, 4096),
      },
    };
    preflight(() => {
      parseWarmStartInput(warmStartInput);
      parseTrajectoryInput({ question: 'preflight', ...warmStartInput.trajectory });
      parseSftHyperparameters(warmStartInput.hyperparameters);
    }, warmStartFlags);
    // Read before anything starts: a bad --start-version exits 2 with the stack untouched.
    const requestedStartVersion = startVersionRequest(values['start-version'], 'start-version');
    const settings = config();
    await stackUp(settings, { workers: true });
    const services = openServices(settings);
    try {
      const client = await services.client();
      const workflowId = `warm-start-${runId}`;
      await refuseConcurrentTraining(client, [workflowId]);
      await refuseUsedRunIds(createPgReportSource(services.pool), [runId], 'run-id');
      const startVersion = await startVersionFlag(services.versions, requestedStartVersion, 'start-version');
      await services.blobs.put(datasetKey, text, 'application/x-ndjson');
      if (source === 'gold')
        console.error(await measureGoldTurns(services, startVersion, rows, warmStartInput.trajectory.limits.maxNewTokensPerTurn));
      const handle = await client.workflow.start(warmStartWorkflowType, {
        taskQueue: taskQueueName('agent', settings.taskQueuePrefix),
        workflowId,
        staticSummary: `warm start ${runId} (${source})`,
        args: [{ ...warmStartInput, startVersion }],
      });
      if (settings.temporal.embedded)
        console.error(
          `warm start ${workflowId} from v${startVersion} · Web UI http://127.0.0.1:${settings.temporal.uiPort}/namespaces/${settings.temporal.namespace}/workflows/${workflowId}`,
        );
      const result = await followWarmStart(client, handle, source === 'gold' ? withGold : rows.length * samples);
      for (const step of result.steps)
        console.log(
          `sft step ${step.step} → v${step.version}: ${step.trajectories} trajectories, loss ${String(step.metrics.loss ?? '?')}, ${step.trainSeconds.toFixed(1)} s`,
        );
      console.log(
        `${result.kept} of ${result.finished} trajectories kept (mean reward ${result.meanReward.toFixed(3)}) · v${result.startVersion} → v${result.finalVersion}`,
      );
      if (values.json) console.log(JSON.stringify(result));
      return 0;
    } finally {
      await services.close();
    }
  },
};
