import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Client } from '@temporalio/client';
import { config } from '../../infra/config.js';
import { createS3BlobStore } from '../../infra/blob/blob-store.s3.js';
import { buildDefaultCorpus } from '../../infra/corpus/default-corpus.js';
import { capitalQuestions } from '../../infra/demo/questions.js';
import { repoRoot } from '../../infra/paths.js';
import { createPool } from '../../infra/postgres/database.js';
import { createPgPolicyVersionStore } from '../../infra/postgres/policy-version-store.pg.js';
import { stackUp } from '../../infra/services/stack.js';
import { workerService } from '../../infra/services/workers.service.js';
import { connectClient } from '../../infra/temporal/connection.js';
import { taskQueueName } from '../../workflows/contracts/queues.js';
import { learnerStateQuery, learnerWorkflowType, type LearnerResult, type QuestionRow } from '../../workflows/contracts/learner.contract.js';
import { trajectoryWorkflowType, type TrajectoryResult } from '../../workflows/contracts/trajectory.contract.js';
import { integerFlag, parseFlags } from '../arguments.js';
import type { Command } from '../command.js';
import { progressBar } from '../progress.js';

interface Accuracy { readonly questions: number; readonly em: number; readonly f1: number; readonly answered: number; readonly meanTurns: number }

const TRAJECTORY = (maxTurns: number, maxNewTokens: number) => ({ limits: { maxTurns, maxNewTokensPerTurn: maxNewTokens, maxRepeats: 2 }, options: { maxObservationChars: 600 } });

async function evaluate(client: Client, label: string, questions: readonly QuestionRow[], taskQueue: string, runTag: string, maxTurns: number, maxNewTokens: number): Promise<Accuracy> {
  const bar = progressBar(label, questions.length);
  let done = 0;
  const results = await Promise.all(questions.map(async (question, index) => {
    const result = await client.workflow.execute(trajectoryWorkflowType, {
      taskQueue, workflowId: `${runTag}-${label.replace(/\W+/g, '-')}-${index}`,
      args: [{ question: question.question, answers: question.answers, questionId: question.id, dataset: `demo-${label}`, ...TRAJECTORY(maxTurns, maxNewTokens) }],
    }) as TrajectoryResult;
    bar.update(++done);
    return result;
  }));
  bar.finish();
  const mean = (values: number[]) => (values.length ? values.reduce((a, b) => a + b, 0) / values.length : 0);
  return {
    questions: questions.length, em: mean(results.map((result) => result.rewardParts.em ?? 0)), f1: mean(results.map((result) => result.rewardParts.f1 ?? 0)),
    answered: results.filter((result) => result.answer !== null).length, meanTurns: mean(results.map((result) => result.turns)),
  };
}

function runChild(args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [path.join(repoRoot, 'dist', 'cli', 'main.js'), ...args], { stdio: ['ignore', 'ignore', 'inherit'] });
    child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`longhaul ${args.join(' ')} exited with ${code}`))));
  });
}

async function restartInference(version: number): Promise<void> {
  process.env.LONGHAUL_POLICY_VERSION = String(version); // the worker child reads its own environment
  const service = workerService(config(), 'gpu-infer');
  await service.stop();
  await service.start();
}

export const demoCommand: Command = {
  name: 'demo',
  summary: 'the main job: corpus, SmolLM2-135M evaluation, async RL, evaluation again, report',
  usage: `longhaul demo [--train-questions N] [--eval-questions N] [--steps N] [--batch N] [--group N]
              [--max-turns N] [--max-new-tokens N] [--lr X]

From nothing, on a 2-core machine with no GPU: starts the stack, builds the default corpus and its
knowledge base, prepares SmolLM2-135M-Instruct as policy version 0 (or continues from the latest
version), makes a grounded question set (capitals, each stated by a corpus document), evaluates the
policy on held-out questions, runs async RL (the learner workflow with trajectory children and
trainStep on the gpu-train queue), evaluates again, and writes a report to LONGHAUL_HOME/reports/.
Every step is a durable workflow: watch them in the Web UI. Flags scale it up on a GPU.

  --train-questions N  questions for RL (default 8)       --eval-questions N  held-out questions (default 6)
  --steps N            training steps (default 2)          --batch N           trajectories per step (default 8)
  --group N            samples per question (default 4)    --max-turns N       turns per trajectory (default 3)
  --max-new-tokens N   tokens per generation (default 48)  --lr X              learning rate (default 2e-5)`,
  async run(args) {
    const { values } = parseFlags(args, {
      'train-questions': { type: 'string' }, 'eval-questions': { type: 'string' }, steps: { type: 'string' }, batch: { type: 'string' },
      group: { type: 'string' }, 'max-turns': { type: 'string' }, 'max-new-tokens': { type: 'string' }, lr: { type: 'string' },
    });
    const trainCount = integerFlag(values['train-questions'], 'train-questions', 8, 1, 100_000);
    const evalCount = integerFlag(values['eval-questions'], 'eval-questions', 6, 1, 100_000);
    const steps = integerFlag(values.steps, 'steps', 2, 1, 100_000);
    const batchSize = integerFlag(values.batch, 'batch', 8, 1, 100_000);
    const groupSize = integerFlag(values.group, 'group', 4, 2, 256);
    const maxTurns = integerFlag(values['max-turns'], 'max-turns', 3, 1, 1000);
    const maxNewTokens = integerFlag(values['max-new-tokens'], 'max-new-tokens', 48, 8, 65_536);
    const learningRate = values.lr === undefined ? 2e-5 : Number(values.lr);
    const startedAt = Date.now();
    const phase = (name: string) => console.error(`\n▶ ${name} (${((Date.now() - startedAt) / 1000).toFixed(0)} s)`);
    const settings = config();

    phase('1/7 starting the stack');
    await stackUp(settings, { workers: false, onStarted: (name, seconds) => console.error(`  ✓ ${name}${seconds >= 0.05 ? ` (${seconds.toFixed(1)} s)` : ''}`) });
    const webUi = settings.temporal.embedded ? `http://127.0.0.1:${settings.temporal.uiPort}/namespaces/${settings.temporal.namespace}/workflows` : null;
    if (webUi) console.error(`  Web UI: ${webUi}`);
    const pool = createPool(settings.postgres.url, 4);
    const blobs = createS3BlobStore(settings);
    try {
      phase('2/7 building the default corpus and knowledge base');
      const corpus = await buildDefaultCorpus(pool, { toolsDir: settings.toolsDir, onProgress: (message) => console.error(`  ${message}`) });

      phase('3/7 preparing SmolLM2-135M-Instruct as the local policy');
      const versions = createPgPolicyVersionStore(pool);
      if (!(await versions.latest())) await runChild(['model', 'prepare']);
      const startVersion = (await versions.latest())!.version;
      console.error(`  starting from policy version ${startVersion}`);
      await restartInference(startVersion);
      await stackUp(settings, { workers: true });

      phase('4/7 making a grounded question set');
      const { train, heldOut } = await capitalQuestions(pool, trainCount, evalCount);
      const runId = `demo-${new Date().toISOString().replace(/[:.]/g, '-')}`;
      const datasetKey = `datasets/${runId}/train.jsonl`;
      await blobs.put(datasetKey, train.map((row) => JSON.stringify(row)).join('\n'));
      console.error(`  ${train.length} training and ${heldOut.length} held-out questions, e.g. "${train[0]!.question}" → ${train[0]!.answers[0]}`);

      const client = await connectClient(settings, blobs);
      const taskQueue = taskQueueName('agent', settings.taskQueuePrefix);
      phase('5/7 evaluating the policy before RL');
      const before = await evaluate(client, 'eval-before', heldOut, taskQueue, runId, maxTurns, maxNewTokens);
      console.error(`  EM ${before.em.toFixed(3)} · F1 ${before.f1.toFixed(3)} · answered ${before.answered}/${before.questions}`);

      phase(`6/7 async RL: ${steps} steps of ${batchSize} trajectories (G=${groupSize})`);
      const handle = await client.workflow.start(learnerWorkflowType, {
        taskQueue, workflowId: `learner-${runId}`, staticSummary: `demo learner ${runId}`,
        args: [{
          runId, datasetKey, startVersion,
          settings: { mode: 'async', maxSteps: steps, batchSize, groupSize, eta: 4, maxInflight: 2 * batchSize, dropEqualRewardGroups: false, interruptOnPublish: false },
          trajectory: TRAJECTORY(maxTurns, maxNewTokens),
          hyperparameters: { learningRate, microBatchSize: 2, trainable: { mode: 'freeze', trainPatterns: ['layers\\.(2[6-9])\\.', 'norm\\.weight$'] } },
        }],
      });
      const bar = progressBar('training steps', steps);
      let learned: LearnerResult | undefined;
      let failure: unknown;
      void handle.result().then((result) => { learned = result as LearnerResult; }, (error: unknown) => { failure = error ?? new Error('learner failed'); });
      while (!learned && !failure) {
        const state = await handle.query(learnerStateQuery).catch(() => undefined);
        if (state) bar.update(state.step, `v${state.version} · ${state.inflight} in flight · ${state.ready} ready${state.training ? ' · training' : ''}`);
        await sleep(2000);
      }
      if (failure) throw failure;
      bar.finish(`v${learned!.finalVersion}`);

      phase('7/7 evaluating the trained policy');
      await restartInference(learned!.finalVersion);
      const after = await evaluate(client, 'eval-after', heldOut, taskQueue, runId, maxTurns, maxNewTokens);
      await client.connection.close();

      const report = {
        runId, seconds: Math.round((Date.now() - startedAt) / 1000), webUi,
        corpus: { sources: corpus.sources.map((source) => ({ source: source.source, documents: source.documents, relations: source.relations })), skipped: corpus.skipped },
        policy: { startVersion, finalVersion: learned!.finalVersion },
        accuracy: { before, after },
        learning: { steps: learned!.steps, history: learned!.history, samplesPerHour: learned!.samplesPerHour, trainerBusy: learned!.trainerBusy, maxStaleness: learned!.maxStaleness, consumed: learned!.consumed, dropped: learned!.dropped },
        settings: { trainCount, evalCount, steps, batchSize, groupSize, maxTurns, maxNewTokens, learningRate },
      };
      const reportDir = path.join(settings.home, 'reports');
      fs.mkdirSync(reportDir, { recursive: true });
      const reportPath = path.join(reportDir, `${runId}.json`);
      fs.writeFileSync(reportPath, JSON.stringify(report, null, 2));
      console.log(`\nLonghaul demo ${runId} — ${report.seconds} s`);
      console.log(`reward curve (mean training reward per version): ${learned!.history.map((stats) => `v${stats.version} ${stats.meanReward.toFixed(3)}`).join(' → ') || '(no step)'}`);
      console.log(`held-out EM ${before.em.toFixed(3)} → ${after.em.toFixed(3)}, F1 ${before.f1.toFixed(3)} → ${after.f1.toFixed(3)} (${heldOut.length} questions)`);
      console.log(`max staleness ${learned!.maxStaleness} versions · trainer busy ${(learned!.trainerBusy * 100).toFixed(0)} % · ${learned!.samplesPerHour.toFixed(0)} samples/h`);
      console.log(`report: ${reportPath}`);
      return 0;
    } finally {
      await pool.end();
    }
  },
};
