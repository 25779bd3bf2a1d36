import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import { config } from '../../infra/config.js';
import { buildDefaultCorpus } from '../../corpus/default-corpus.js';
import { capitalQuestions } from '../../corpus/demo-questions.js';
import { repoRoot } from '../../infra/paths.js';
import { openServices } from '../../composition/services.js';
import { stackUp } from '../../infra/services/stack.js';
import { workerService } from '../../infra/services/workers.service.js';
import { parseRlHyperparameters, parseSftHyperparameters } from '../../gpu/train/train-step.schema.js';
import { parseLearnerSettings } from '../../workflows/contracts/learner.input.js';
import { taskQueueName } from '../../workflows/contracts/queues.js';
import { parseTrajectoryInput } from '../../workflows/contracts/trajectory.input.js';
import {
  learnerStateQuery,
  learnerWorkflowType,
  type LearnerResult,
  type LearnerState,
  type QuestionRow,
} from '../../workflows/contracts/learner.contract.js';
import { trajectoryWorkflowType, type TrajectoryResult } from '../../workflows/contracts/trajectory.contract.js';
import { warmStartWorkflowType, type WarmStartResult } from '../../workflows/contracts/warm-start.contract.js';
import { integerFlag, parseFlags, rateFlag } from '../arguments.js';
import type { Command } from '../command.js';
import { onInterrupt } from '../interrupt.js';
import { followWorkflow } from '../follow-workflow.js';
import { preflight } from '../preflight.js';
import { progressBar } from '../progress.js';
import { startVersionFlag, startVersionRequest } from '../start-version.js';
import { followWarmStart } from './warm-start.command.js';
import { describeProgress, pendingActivityProgress } from '../activity-progress.js';
import { writeReport } from '../report/write-report.js';
import { trajectoryMetadata } from '../../workflows/trajectory-child.js';

interface Accuracy {
  readonly questions: number;
  readonly em: number;
  readonly f1: number;
  readonly answered: number;
  readonly meanTurns: number;
}

/** The demo trains the last four of SmolLM2-135M's 30 layers and the final norm: fits 2 CPU cores. */
const TRAINABLE = { mode: 'freeze', trainPatterns: ['layers\\.(2[6-9])\\.', 'norm\\.weight$'] };

const TRAJECTORY = (maxTurns: number, maxNewTokens: number) => ({
  limits: { maxTurns, maxNewTokensPerTurn: maxNewTokens, maxRepeats: 2 },
  options: { maxObservationChars: 600 },
});

async function evaluate(
  client: Client,
  label: string,
  questions: readonly QuestionRow[],
  taskQueue: string,
  runTag: string,
  maxTurns: number,
  maxNewTokens: number,
): Promise<Accuracy> {
  const bar = progressBar(label, questions.length);
  let done = 0;
  const results = await Promise.all(
    questions.map(async (question, index) => {
      const workflowId = `${runTag}-${label.replace(/\W+/g, '-')}-${index}`;
      const result = (await client.workflow.execute(trajectoryWorkflowType, {
        taskQueue,
        workflowId,
        ...trajectoryMetadata({
          workflowId,
          question: question.question,
          questionId: question.id,
          dataset: `demo-${label}`,
          answers: question.answers,
        }),
        args: [
          {
            question: question.question,
            answers: question.answers,
            questionId: question.id,
            dataset: `demo-${label}`,
            ...TRAJECTORY(maxTurns, maxNewTokens),
          },
        ],
      })) as TrajectoryResult;
      bar.update(++done);
      return result;
    }),
  );
  bar.finish();
  const mean = (values: number[]) => (values.length ? values.reduce((a, b) => a + b, 0) / values.length : 0);
  return {
    questions: questions.length,
    em: mean(results.map((result) => result.rewardParts.em ?? 0)),
    f1: mean(results.map((result) => result.rewardParts.f1 ?? 0)),
    answered: results.filter((result) => result.answer !== null).length,
    meanTurns: mean(results.map((result) => result.turns)),
  };
}

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

async function restartInference(version: number): Promise<void> {
  process.env.LONGHAUL_POLICY_VERSION = String(version); // the worker child reads its own environment
  const service = workerService(config(), 'gpu-infer');
  await service.stop();
  await service.start();
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
};

export const demoCommand: Command = {
  name: 'demo',
  summary: 'the main job: corpus, SmolLM2-135M evaluation, warm start, async RL, evaluation again, report',
  usage: `longhaul demo [--train-questions N] [--eval-questions N] [--steps N] [--batch N] [--group N]
              [--max-turns N] [--max-new-tokens N] [--lr X]
              [--no-warm-start] [--sft-questions N] [--sft-epochs N] [--sft-lr X] [--from-version N]

From nothing, on a 2-core machine with no GPU: starts the stack, builds the default corpus and its
knowledge base, prepares SmolLM2-135M-Instruct as policy version 0 (or continues from the latest
version), makes a grounded question set (capitals, each stated by a corpus document, with a gold
search-then-answer path), evaluates the policy on held-out questions, warm-starts it (the warmStart
workflow: gold paths replayed through the real agent loop, kept when the reward confirms them,
sftStep on the gpu-train queue) and evaluates again, runs async RL (the learner workflow with
trajectory children and trainStep), evaluates a last time, and writes a report to
LONGHAUL_HOME/reports/ (<run>.json, and <run>.html as \`longhaul report\` writes it). Every step
is a durable workflow: watch them in the Web UI. Flags scale it up on a GPU.

  --train-questions N  questions for RL (default 8)       --eval-questions N  held-out questions (default 6)
  --steps N            training steps (default 2)          --batch N           trajectories per step (default 8)
  --group N            samples per question (default 4)    --max-turns N       turns per trajectory (default 3)
  --max-new-tokens N   tokens per generation (default 48)  --lr X              RL learning rate (default 2e-5)
  --no-warm-start      skip the supervised warm start      --sft-questions N   gold paths (default 16)
  --sft-epochs N       passes over them (default 6)        --sft-lr X          SFT learning rate (default 3e-4)
  --from-version N     policy version to start from (default: the latest registered; 0 = the base model)`,
  async run(args) {
    const { values } = parseFlags(args, {
      'train-questions': { type: 'string' },
      'eval-questions': { type: 'string' },
      steps: { type: 'string' },
      batch: { type: 'string' },
      group: { type: 'string' },
      'max-turns': { type: 'string' },
      'max-new-tokens': { type: 'string' },
      lr: { type: 'string' },
      'no-warm-start': { type: 'boolean' },
      'sft-questions': { type: 'string' },
      'sft-epochs': { type: 'string' },
      'sft-lr': { type: 'string' },
      'from-version': { type: 'string' },
    });
    const trainCount = integerFlag(values['train-questions'], 'train-questions', 8, 1, 100_000);
    const evalCount = integerFlag(values['eval-questions'], 'eval-questions', 6, 1, 100_000);
    const steps = integerFlag(values.steps, 'steps', 2, 1, 100_000);
    const batchSize = integerFlag(values.batch, 'batch', 8, 1, 100_000);
    const groupSize = integerFlag(values.group, 'group', 4, 2, 256);
    const maxTurns = integerFlag(values['max-turns'], 'max-turns', 3, 1, 1000);
    const maxNewTokens = integerFlag(values['max-new-tokens'], 'max-new-tokens', 48, 8, 65_536);
    const learningRate = rateFlag(values.lr, 'lr', 2e-5);
    const warm = !values['no-warm-start'];
    const sftCount = integerFlag(values['sft-questions'], 'sft-questions', 16, 1, 100_000);
    const sftEpochs = integerFlag(values['sft-epochs'], 'sft-epochs', 6, 1, 1000);
    const sftLearningRate = rateFlag(values['sft-lr'], 'sft-lr', 3e-4);
    const learnerSettings = {
      mode: 'async',
      maxSteps: steps,
      batchSize,
      groupSize,
      eta: 4,
      maxInflight: 2 * batchSize,
      dropEqualRewardGroups: false,
      interruptOnPublish: false,
    };
    const rlHyperparameters = { learningRate, microBatchSize: 2, trainable: TRAINABLE };
    const sftHyperparameters = { learningRate: sftLearningRate, epochs: sftEpochs, batchSize: 4, microBatchSize: 2, trainable: TRAINABLE };
    preflight(() => {
      parseLearnerSettings(learnerSettings);
      parseTrajectoryInput({ question: 'preflight', ...TRAJECTORY(maxTurns, maxNewTokens) });
      parseRlHyperparameters(rlHyperparameters, groupSize);
      if (warm) parseSftHyperparameters(sftHyperparameters);
    }, demoFlags);
    const startedAt = Date.now();
    const phase = (name: string) => console.error(`\n▶ ${name} (${((Date.now() - startedAt) / 1000).toFixed(0)} s)`);
    // Read before anything starts: a bad --from-version exits 2 with the stack untouched.
    const requestedStartVersion = startVersionRequest(values['from-version'], 'from-version');
    const settings = config();

    phase('1/8 starting the stack');
    await stackUp(settings, {
      workers: false,
      onStarted: (name, seconds) => console.error(`  ✓ ${name}${seconds >= 0.05 ? ` (${seconds.toFixed(1)} s)` : ''}`),
    });
    const webUi = settings.temporal.embedded
      ? `http://127.0.0.1:${settings.temporal.uiPort}/namespaces/${settings.temporal.namespace}/workflows`
      : null;
    if (webUi) console.error(`  Web UI: ${webUi}`);
    const services = openServices(settings, { poolSize: 4 });
    const { pool, blobs } = services;
    try {
      phase('2/8 building the default corpus and knowledge base');
      const corpus = await buildDefaultCorpus(pool, {
        toolsDir: settings.toolsDir,
        onProgress: (message) => console.error(`  ${message}`),
      });

      phase('3/8 preparing SmolLM2-135M-Instruct as the local policy');
      const { versions } = services;
      if (!(await versions.latest())) await runChild(['model', 'prepare']);
      const startVersion = await startVersionFlag(versions, requestedStartVersion, 'from-version');
      console.error(`  starting from policy version ${startVersion}`);
      await restartInference(startVersion);
      await stackUp(settings, { workers: true });

      phase('4/8 making a grounded question set');
      const { train, heldOut } = await capitalQuestions(pool, Math.max(trainCount, warm ? sftCount : 0), evalCount);
      const runId = `demo-${new Date().toISOString().replace(/[:.]/g, '-')}`;
      const datasetKey = `datasets/${runId}/train.jsonl`;
      await blobs.put(
        datasetKey,
        train
          .slice(0, trainCount)
          .map((row) => JSON.stringify(row))
          .join('\n'),
      );
      console.error(
        `  ${trainCount} RL${warm ? `, ${sftCount} warm-start` : ''} and ${heldOut.length} held-out questions, e.g. "${train[0]!.question}" → ${train[0]!.answers[0]}`,
      );

      const client = await services.client();
      const taskQueue = taskQueueName('agent', settings.taskQueuePrefix);
      phase('5/8 evaluating the base policy');
      const before = await evaluate(client, 'eval-before', heldOut, taskQueue, runId, maxTurns, maxNewTokens);
      console.error(`  EM ${before.em.toFixed(3)} · F1 ${before.f1.toFixed(3)} · answered ${before.answered}/${before.questions}`);

      let warmStart: { result: WarmStartResult; accuracy: Accuracy } | null = null;
      let rlStartVersion = startVersion;
      if (warm) {
        phase(`6/8 warm start: SFT on ${sftCount} gold search-then-answer paths, then evaluation`);
        const sftKey = `datasets/${runId}/warm-start.jsonl`;
        await blobs.put(
          sftKey,
          train
            .slice(0, sftCount)
            .map((row) => JSON.stringify(row))
            .join('\n'),
        );
        const sftHandle = await client.workflow.start(warmStartWorkflowType, {
          taskQueue,
          workflowId: `warm-start-${runId}`,
          staticSummary: `demo warm start ${runId}`,
          args: [
            {
              runId: `${runId}-sft`,
              datasetKey: sftKey,
              startVersion,
              settings: { source: 'gold', minReward: 1, concurrency: 4 },
              trajectory: { ...TRAJECTORY(maxTurns, maxNewTokens), rewardMetric: 'em' },
              hyperparameters: sftHyperparameters,
            },
          ],
        });
        const result = await followWarmStart(client, sftHandle, sftCount);
        console.error(
          `  ${result.kept}/${result.finished} gold paths confirmed by the reward · v${result.startVersion} → v${result.finalVersion}`,
        );
        rlStartVersion = result.finalVersion;
        await restartInference(rlStartVersion);
        const accuracy = await evaluate(client, 'eval-warm', heldOut, taskQueue, runId, maxTurns, maxNewTokens);
        console.error(
          `  EM ${accuracy.em.toFixed(3)} · F1 ${accuracy.f1.toFixed(3)} · answered ${accuracy.answered}/${accuracy.questions}`,
        );
        warmStart = { result, accuracy };
      } else {
        phase('6/8 warm start skipped (--no-warm-start)');
      }

      phase(`7/8 async RL: ${steps} steps of ${batchSize} trajectories (G=${groupSize})`);
      const handle = await client.workflow.start(learnerWorkflowType, {
        taskQueue,
        workflowId: `learner-${runId}`,
        staticSummary: `demo learner ${runId}`,
        args: [
          {
            runId,
            datasetKey,
            startVersion: rlStartVersion,
            settings: learnerSettings,
            trajectory: TRAJECTORY(maxTurns, maxNewTokens),
            hyperparameters: rlHyperparameters,
          },
        ],
      });
      const bar = progressBar('training steps', steps);
      const learned = await followWorkflow<LearnerResult, LearnerState>(handle, {
        query: learnerStateQuery,
        intervalMs: 2000,
        async onState(state) {
          const engine = state.training ? describeProgress(await pendingActivityProgress(client, handle, 'trainStep')) : '';
          bar.update(
            state.step,
            `v${state.version} · ${state.inflight} in flight · ${state.ready} ready${state.training ? ` · training${engine ? ` (${engine})` : ''}` : ''}`,
          );
        },
      });
      bar.finish(`v${learned.finalVersion}`);

      phase('8/8 evaluating the trained policy');
      await restartInference(learned!.finalVersion);
      const after = await evaluate(client, 'eval-after', heldOut, taskQueue, runId, maxTurns, maxNewTokens);

      const report = {
        runId,
        seconds: Math.round((Date.now() - startedAt) / 1000),
        webUi,
        corpus: {
          sources: corpus.sources.map((source) => ({ source: source.source, documents: source.documents, relations: source.relations })),
          skipped: corpus.skipped,
        },
        policy: { startVersion, warmStartVersion: warmStart?.result.finalVersion ?? null, finalVersion: learned!.finalVersion },
        accuracy: { before, afterWarmStart: warmStart?.accuracy ?? null, after },
        warmStart: warmStart
          ? {
              kept: warmStart.result.kept,
              finished: warmStart.result.finished,
              steps: warmStart.result.steps,
              wallSeconds: warmStart.result.wallSeconds,
            }
          : null,
        learning: {
          steps: learned!.steps,
          history: learned!.history,
          samplesPerHour: learned!.samplesPerHour,
          trainerBusy: learned!.trainerBusy,
          maxStaleness: learned!.maxStaleness,
          consumed: learned!.consumed,
          dropped: learned!.dropped,
        },
        settings: {
          trainCount,
          evalCount,
          steps,
          batchSize,
          groupSize,
          maxTurns,
          maxNewTokens,
          learningRate,
          warmStart: warm,
          sftCount,
          sftEpochs,
          sftLearningRate,
        },
      };
      const reportDir = path.join(settings.home, 'reports');
      fs.mkdirSync(reportDir, { recursive: true });
      const reportPath = path.join(reportDir, `${runId}.json`);
      fs.writeFileSync(reportPath, JSON.stringify(report, null, 2));
      console.log(`\nLonghaul demo ${runId} — ${report.seconds} s`);
      console.log(
        `reward curve (mean training reward per version): ${learned!.history.map((stats) => `v${stats.version} ${stats.meanReward.toFixed(3)}`).join(' → ') || '(no step)'}`,
      );
      const stages = [['base', before], ...(warmStart ? [['warm start', warmStart.accuracy]] : []), ['RL', after]] as [string, Accuracy][];
      console.log(
        `held-out EM ${stages.map(([name, accuracy]) => `${name} ${accuracy.em.toFixed(3)}`).join(' → ')} · F1 ${stages.map(([name, accuracy]) => `${name} ${accuracy.f1.toFixed(3)}`).join(' → ')} (${heldOut.length} questions)`,
      );
      console.log(
        `answered with <answer>: ${stages.map(([name, accuracy]) => `${name} ${accuracy.answered}/${accuracy.questions}`).join(' → ')}`,
      );
      if (warmStart)
        console.log(
          `warm start: ${warmStart.result.kept}/${warmStart.result.finished} gold paths kept, SFT loss ${String((warmStart.result.steps[0]?.metrics as { losses?: number[] } | undefined)?.losses?.map((loss) => loss.toFixed(3)).join(' → ') ?? '-')}`,
        );
      console.log(
        `max staleness ${learned!.maxStaleness} versions · trainer busy ${(learned!.trainerBusy * 100).toFixed(0)} % · ${learned!.samplesPerHour.toFixed(0)} samples/h`,
      );
      console.log(`report: ${reportPath}`);
      // The HTML report (charts, behaviour, a page per trajectory) from what the run left in the stores.
      const html = await writeReport(services, settings.home, { runId, out: reportPath.replace(/\.json$/, '.html'), pages: true });
      console.log(`HTML report: ${html.path}`);
      return 0;
    } finally {
      await services.close();
    }
  },
};
