/**
 * rewardMetric "judge" end to end: the real agent worker process reads its judge from the
 * environment and grades through `longhaul serve` (the tiny model); a judge that is down keeps
 * finishTrajectory retrying and nothing is recorded until it answers; no judge configured fails
 * the trajectory naming the variable to set.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { ActivityFailure, ApplicationFailure, WorkflowFailedError } from '@temporalio/client';
import { createScriptedPolicy } from './doubles/scripted-policy.js';
import { createScriptedTools } from './doubles/scripted-tools.js';
import { judgeMessages, parseVerdict, type JudgeOutcome } from '../activities/reward/judge.js';
import { createOnnxBackend } from '../gpu/infer/onnx.backend.js';
import { tinyModelDir } from './doubles/test-model.js';
import { configuredJudge } from '../infra/inference/openai.backend.js';
import { createPgTrajectoryStore } from '../infra/postgres/trajectory-store.pg.js';
import { createInProcessAgent } from '../composition/in-process-agent.js';
import { trajectoryWorkflowType, type TrajectoryResult } from '../workflows/contracts/trajectory.contract.js';
import { startLonghaulServe, startTokenlessServer } from './helpers/inference-servers.js';
import { openContext, spawnWorker, uniquePrefix, waitUntil, type TestContext } from './helpers/stack.js';

const question = 'script:{"turns":2,"answer":"Lima"} What is the capital of Peru?';

/** The gpu-infer and tools queues in this process (scripted policy and tools); the agent queue too when a judge is given, else a worker process serves it. */
function helperWorkers(context: TestContext, prefix: string, judge?: ReturnType<typeof configuredJudge>) {
  return createInProcessAgent({
    config: context.config,
    blobs: context.blobs,
    pool: context.pool,
    prefix,
    backend: createScriptedPolicy(),
    tools: createScriptedTools(),
    roles: judge ? ['agent', 'gpu-infer', 'tools'] : ['gpu-infer', 'tools'],
    ...(judge ? { judge } : {}),
  });
}

async function freePort(): Promise<number> {
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

test(
  'the agent worker judges through LONGHAUL_JUDGE_BASE_URL (longhaul serve) and the record keeps model, prompt and reply',
  { timeout: 300_000 },
  async () => {
    const prefix = uniquePrefix('judge-serve');
    const context = await openContext(prefix);
    const modelDir = await tinyModelDir();
    const serve = await startLonghaulServe(modelDir, 0);
    const worker = spawnWorker('agent', {
      LONGHAUL_TASK_QUEUE_PREFIX: prefix,
      LONGHAUL_JUDGE_BASE_URL: serve.baseUrl,
      LONGHAUL_JUDGE_MODEL: 'tiny-judge',
    });
    try {
      await worker.ready;
      const workflowId = `${prefix}judged`;
      const result = (await (
        await helperWorkers(context, prefix)
      ).run(() =>
        context.client.workflow.execute(trajectoryWorkflowType, {
          taskQueue: context.queue('agent'),
          workflowId,
          args: [{ question, answers: ['Lima'], rewardMetric: 'judge' }],
        }),
      )) as TrajectoryResult;
      assert.equal(result.answer, 'Lima');
      // What the judge must have replied: the same model, greedy, on the same messages.
      const local = await createOnnxBackend({ modelDir, version: 0, threads: 1 });
      const expected = await local.generate({
        prompt: '',
        messages: judgeMessages(question, ['Lima'], 'Lima'),
        maxNewTokens: 16,
        temperature: 0,
      });
      await local.close();
      const verdict = parseVerdict(expected.text);
      const record = JSON.parse((await context.blobs.get(result.recordKey)).toString()) as {
        judge: JudgeOutcome;
        reward: number;
        rewardParts: Record<string, number>;
      };
      assert.equal(record.judge.model, 'tiny-judge');
      assert.equal(record.judge.baseUrl, serve.baseUrl);
      assert.deepEqual(record.judge.messages, judgeMessages(question, ['Lima'], 'Lima'));
      assert.equal(record.judge.reply, expected.text.slice(0, 500));
      assert.equal(record.judge.verdict, verdict === null ? 'none' : verdict === 1 ? 'correct' : 'incorrect');
      assert.equal(record.rewardParts.judge, verdict ?? 0);
      assert.equal(result.reward, verdict ?? 0);
      assert.equal((await createPgTrajectoryStore(context.pool).get(workflowId))?.reward, verdict ?? 0);
    } finally {
      worker.kill('SIGTERM');
      serve.child.kill('SIGTERM');
      await context.close();
    }
  },
);

test(
  'a judge that is down keeps finishTrajectory retrying and records nothing; once it answers, its verdict is the reward',
  { timeout: 300_000 },
  async () => {
    const prefix = uniquePrefix('judge-down');
    const context = await openContext(prefix);
    const port = await freePort();
    let judgeServer: Awaited<ReturnType<typeof startTokenlessServer>> | undefined;
    try {
      const workers = await helperWorkers(
        context,
        prefix,
        configuredJudge({ baseUrl: `http://127.0.0.1:${port}/v1`, model: 'grader', apiKey: null }),
      );
      const workflowId = `${prefix}waits`;
      const result = await workers.run(async () => {
        const handle = await context.client.workflow.start(trajectoryWorkflowType, {
          taskQueue: context.queue('agent'),
          workflowId,
          args: [{ question, answers: ['Lima'], rewardMetric: 'judge' }],
        });
        await waitUntil(
          async () => {
            const pending = (await handle.describe()).raw.pendingActivities?.find(
              (activity) => activity.activityType?.name === 'finishTrajectory',
            );
            return (pending?.attempt ?? 0) >= 2 && (pending?.lastFailure?.message ?? '').includes('ECONNREFUSED');
          },
          120_000,
          'finishTrajectory to fail on the unreachable judge and be retried',
        );
        assert.equal(await createPgTrajectoryStore(context.pool).get(workflowId), undefined, 'no record while the judge is down');
        // The judge comes up, first overloaded (503 for both tries of one attempt), then answering.
        judgeServer = await startTokenlessServer({ port, reply: () => 'VERDICT: CORRECT', completionTokens: () => 3 });
        judgeServer.failNext(2);
        return handle.result() as Promise<TrajectoryResult>;
      });
      assert.equal(result.reward, 1);
      assert.deepEqual(judgeServer!.calls.map((call) => call.status).slice(0, 3), [503, 503, 200]);
      const record = JSON.parse((await context.blobs.get(result.recordKey)).toString()) as { judge: JudgeOutcome };
      assert.deepEqual([record.judge.verdict, record.judge.model, record.judge.reply], ['correct', 'grader', 'VERDICT: CORRECT']);
      assert.equal((await createPgTrajectoryStore(context.pool).get(workflowId))?.reward, 1);
    } finally {
      await judgeServer?.close();
      await context.close();
    }
  },
);

test(
  'rewardMetric "judge" with no judge configured fails the trajectory non-retryably, naming LONGHAUL_JUDGE_BASE_URL',
  { timeout: 300_000 },
  async () => {
    const prefix = uniquePrefix('judge-none');
    const context = await openContext(prefix);
    const worker = spawnWorker('agent', { LONGHAUL_TASK_QUEUE_PREFIX: prefix, LONGHAUL_JUDGE_BASE_URL: '', LONGHAUL_OPENAI_BASE_URL: '' });
    try {
      await worker.ready;
      const workflowId = `${prefix}unjudged`;
      await assert.rejects(
        (await helperWorkers(context, prefix)).run(() =>
          context.client.workflow.execute(trajectoryWorkflowType, {
            taskQueue: context.queue('agent'),
            workflowId,
            args: [{ question, answers: ['Lima'], rewardMetric: 'judge' }],
          }),
        ),
        (error: unknown) => {
          assert.ok(error instanceof WorkflowFailedError && error.cause instanceof ActivityFailure);
          const cause = error.cause.cause;
          assert.ok(cause instanceof ApplicationFailure);
          assert.equal(cause.type, 'LonghaulInvalidInput');
          assert.equal(cause.nonRetryable, true);
          assert.match(
            cause.message,
            /rewardMetric "judge" needs an LLM judge .* set LONGHAUL_JUDGE_BASE_URL \(or LONGHAUL_OPENAI_BASE_URL\)/,
          );
          return true;
        },
      );
      assert.equal(await createPgTrajectoryStore(context.pool).get(workflowId), undefined, 'no record with a made-up 0');
    } finally {
      worker.kill('SIGTERM');
      await context.close();
    }
  },
);
