import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createScriptedPolicy } from './doubles/scripted-policy.js';
import type { ToolActivities, ToolResult } from '../workflows/contracts/tools.contract.js';
import { evaluationResultSchema } from '../activities/ports/evaluation-result.schema.js';
import type { Judge } from '../activities/ports/judge.port.js';
import type { PolicyBackend } from '../activities/ports/policy.port.js';
import { createPgEvaluationStore } from '../infra/postgres/evaluation-store.pg.js';
import { createPgFrozenObservationStore } from '../infra/postgres/frozen-observation-store.pg.js';
import {
  evaluationKeys,
  evaluationWorkflowType,
  type EvaluationInput,
  type EvaluationOutcome,
} from '../workflows/contracts/evaluation.contract.js';
import { errorTypes, LonghaulError } from '../workflows/contracts/errors.js';
import { createInProcessAgent } from '../composition/in-process-agent.js';
import { compareEvaluations } from '../activities/evaluation/compare.js';
import { readEvaluationResult } from '../cli/commands/eval.command.js';
import { createPgTrajectoryStore } from '../infra/postgres/trajectory-store.pg.js';
import { trajectoryWorkflowType, type TrajectoryResult } from '../workflows/contracts/trajectory.contract.js';
import { openContext, uniquePrefix, type TestContext } from './helpers/stack.js';

/** Tools whose observations drift: every call answers with a new counter, as a live corpus or the web may. */
function driftingTools(): Pick<ToolActivities, 'runTools'> & { calls: () => number } {
  let counter = 0;
  return {
    calls: () => counter,
    async runTools({ calls }) {
      return calls.map((call): ToolResult => {
        counter += 1;
        const query = (call.input as { query?: string }).query ?? '';
        return {
          tool: call.tool,
          ok: true,
          invalid: false,
          observation: `Paris ${counter} for ${query}`,
          truncated: false,
          latencyMs: 0,
          cacheHit: false,
          documentIds: [],
        };
      });
    },
  };
}

/** A judge whose first `failures` requests fail as a server that is down would, then grades "Paris …" correct with a JSON rationale. */
function flakyJudge(failures: number): Judge & { requests: () => number } {
  let requests = 0;
  const backend: PolicyBackend = {
    name: 'openai',
    async currentVersion() {
      return 0;
    },
    async capabilities() {
      return { tokenIds: false, logprobs: false, detail: 'test judge' };
    },
    async generate(request) {
      requests += 1;
      if (requests <= failures) throw new LonghaulError(errorTypes.unavailable, 'judge: connection refused (test)');
      const user = request.messages?.find((message) => message.role === 'user')?.content ?? '';
      const correct = /Predicted answer: "Paris/.test(user);
      return {
        text: JSON.stringify({ verdict: correct ? 'correct' : 'incorrect', rationale: correct ? 'names Paris' : 'another city' }),
        promptTokenIds: [],
        tokenIds: [],
        logprobs: [],
        tokenVersions: [],
        policyVersion: 0,
        finishReason: 'stop',
      };
    },
  };
  return { backend, model: 'test-judge-1', baseUrl: 'http://127.0.0.1:1/v1', requests: () => requests };
}

const questions = [
  { id: 'q1', question: 'script:{"turns":2,"answer":"@observation"} Capital of France?', answers: ['Paris'] },
  { id: 'q2', question: 'script:{"turns":3,"answer":"@observation"} Largest city of France?', answers: ['Paris'] },
  { id: 'q3', question: 'script:{"turns":1,"answer":"Lyon"} Capital of France, again?', answers: ['Paris'] },
];

async function putDataset(context: TestContext, key: string): Promise<void> {
  await context.blobs.put(key, questions.map((row) => JSON.stringify(row)).join('\n') + '\n', 'application/x-ndjson');
}

/** The agent in this process with the scripted policy and, unless given, drifting tools. */
function scriptedAgent(context: TestContext, options: Partial<Parameters<typeof createInProcessAgent>[0]> = {}) {
  return createInProcessAgent({
    config: context.config,
    blobs: context.blobs,
    pool: context.pool,
    backend: createScriptedPolicy(),
    tools: driftingTools(),
    prefix: context.config.taskQueuePrefix,
    ...options,
  });
}

function answersOf(context: TestContext, resultId: string) {
  return context.blobs.get(evaluationKeys.result(resultId)).then((body) => {
    const result = evaluationResultSchema.parse(JSON.parse(body.toString()));
    return { result, answers: result.perQuestion.map((question) => question.samples.map((sample) => sample.answer)) };
  });
}

test(
  'an evaluation scores k samples per question, stores the result and its row, and a reproduction sees the same observations and answers',
  { timeout: 300_000 },
  async () => {
    const context = await openContext(uniquePrefix('eval'));
    const tools = driftingTools();
    const judge = flakyJudge(2);
    try {
      const agent = await scriptedAgent(context, { tools, judge });
      const tag = context.config.taskQueuePrefix.replace(/-$/, '');
      const datasetKey = `evaluations/datasets/${tag}.jsonl`;
      await putDataset(context, datasetKey);
      const base: EvaluationInput = {
        resultId: `${tag}-original`,
        datasetKey,
        dataset: 'unit',
        datasetVersion: 'sha-test',
        questions: 3,
        k: 2,
        concurrency: 3,
        policyVersion: 0,
        judge: true,
        seed: 5,
        trajectory: { limits: { maxTurns: 5 } },
      };
      const run = (input: EvaluationInput) =>
        context.client.workflow.execute(evaluationWorkflowType, {
          taskQueue: context.queue('agent'),
          workflowId: `evaluation-${input.resultId}`,
          args: [input],
        }) as Promise<EvaluationOutcome>;
      const [original, reproduced, fresh] = await agent.run(async () => {
        const first = await run(base);
        const stored = await answersOf(context, base.resultId);
        const second = await run({
          ...base,
          resultId: `${tag}-again`,
          reproduces: base.resultId,
          corpusVersion: stored.result.environment.corpusVersion,
        });
        const third = await run({ ...base, resultId: `${tag}-fresh` });
        return [first, second, third];
      });

      // The summary: Avg@k over questions of the mean over samples; Pass@k; never best-of-k.
      assert.equal(original.questions, 3);
      assert.equal(original.k, 2);
      assert.equal(original.avgAtK.em, 0, 'answers carry the drift counter ("Paris 1 for query 0"), never exactly "Paris"');
      assert.equal(original.avgAtK.cover_em, 2 / 3, 'two questions answer with the observation, one with Lyon');
      assert.equal(original.passAtK.cover_em, 2 / 3);
      assert.equal(original.avgAtK.judge, 2 / 3, 'the judge was down twice, retried, and graded every sample');
      assert.ok(judge.requests() >= 6 + 2, `the judge was asked ${judge.requests()} times`);
      const [low, high] = original.avgAtKCi95.cover_em!;
      assert.ok(low <= 2 / 3 && 2 / 3 <= high);
      assert.deepEqual(original.stopReasons, { answered: 6 });

      const { result, answers } = await answersOf(context, base.resultId);
      assert.equal(result.perQuestion.length, 3);
      assert.ok(result.perQuestion.every((question) => question.samples.length === 2));
      assert.equal(result.perQuestion[1]!.samples[0]!.toolCalls, 2);
      assert.equal(result.perQuestion[0]!.samples[0]!.judgeRationale, 'names Paris');
      assert.equal(result.environment.judge?.model, 'test-judge-1');
      assert.match(result.environment.promptTemplateHash, /^[0-9a-f]{64}$/);
      assert.match(result.environment.corpusVersion, /^corpus-\d+-/);
      assert.equal(result.environment.sampling.seed, 5);
      const row = await createPgEvaluationStore(context.pool).get(base.resultId);
      assert.equal(row?.summary.avgAtK.cover_em, 2 / 3);
      assert.equal(row?.k, 2);
      assert.ok((await createPgFrozenObservationStore(context.pool).count(base.resultId)) >= 1);

      // The reproduction sees the original's frozen observations: every answer is the same, though the tools drifted.
      const again = await answersOf(context, `${tag}-again`);
      assert.deepEqual(again.answers, answers);
      assert.equal(again.result.summary.reproduces, base.resultId);
      assert.deepEqual(reproduced.avgAtK, original.avgAtK);
      // Without the frozen observations the drifting tools give other answers: the comparison above can fail.
      const other = await answersOf(context, `${tag}-fresh`);
      assert.notDeepEqual(other.answers, answers);
      assert.equal(fresh.avgAtK.cover_em, 2 / 3);

      // `longhaul eval compare` reads both stored results back and pairs them by question.
      const comparison = compareEvaluations(
        await readEvaluationResult(context, base.resultId, 'compare: BEFORE'),
        await readEvaluationResult(context, `${tag}-fresh`, 'compare: AFTER'),
      );
      assert.equal(comparison.paired, 3);
      assert.deepEqual([comparison.metrics.cover_em!.before, comparison.metrics.cover_em!.after], [2 / 3, 2 / 3]);
      assert.equal(comparison.metrics.judge!.difference, 0);
      await assert.rejects(readEvaluationResult(context, `${tag}-missing`, 'compare: AFTER'), /compare: AFTER: no evaluation result/);
    } finally {
      await context.close();
    }
  },
);

test('an evaluation with bad input fails at once, naming the field', { timeout: 60_000 }, async () => {
  const context = await openContext(uniquePrefix('evalbad'));
  try {
    const agent = await scriptedAgent(context, { roles: ['agent'] });
    const error = await agent.run(() =>
      context.client.workflow
        .execute(evaluationWorkflowType, {
          taskQueue: context.queue('agent'),
          workflowId: `evaluation-bad-${context.config.taskQueuePrefix}`,
          args: [{ resultId: 'bad', datasetKey: 'x', dataset: 'x', datasetVersion: 'x', questions: 1, k: 0, policyVersion: 0 }],
        })
        .then(
          () => undefined,
          (failure: unknown) => failure as Error & { cause?: Error & { type?: string } },
        ),
    );
    assert.ok(error, 'the workflow failed');
    assert.equal(error.cause?.type, 'LonghaulInvalidInput');
    assert.match(error.cause?.message ?? '', /k/);
  } finally {
    await context.close();
  }
});

/** The messages of an error and of its causes, outermost first. */
function causeMessages(error: unknown): string[] {
  const messages: string[] = [];
  for (let cause = error as { message?: string; cause?: unknown } | undefined; cause; cause = cause.cause as typeof cause)
    messages.push(cause.message ?? '');
  return messages;
}

test(
  'an evaluation named like an earlier run answers its own questions; a trajectory id that holds another run’s trajectory fails for good',
  { timeout: 300_000 },
  async () => {
    const context = await openContext(uniquePrefix('evalclash'));
    try {
      const agent = await scriptedAgent(context);
      const tag = context.config.taskQueuePrefix.replace(/-$/, '');
      const datasetKey = `evaluations/datasets/${tag}.jsonl`;
      await putDataset(context, datasetKey);
      const trajectoryOf = (workflowId: string, runId: string, row: (typeof questions)[number]) =>
        context.client.workflow.execute(trajectoryWorkflowType, {
          taskQueue: context.queue('agent'),
          workflowId,
          args: [{ question: row.question, answers: row.answers, questionId: row.id, runId, dataset: 'unit', limits: { maxTurns: 5 } }],
        }) as Promise<TrajectoryResult>;
      const [outcome, refused] = await agent.run(async () => {
        // A run named like the evaluation below, whose first rollout (<run>-q0-s0) answered q3 with "Lyon".
        assert.equal((await trajectoryOf(`${tag}-q0-s0`, tag, questions[2]!)).answer, 'Lyon');
        const evaluated = (await context.client.workflow.execute(evaluationWorkflowType, {
          taskQueue: context.queue('agent'),
          workflowId: `evaluation-${tag}`,
          args: [
            {
              resultId: tag,
              datasetKey,
              dataset: 'unit',
              datasetVersion: 'sha-test',
              questions: 3,
              k: 1,
              concurrency: 3,
              policyVersion: 0,
              seed: 1,
              trajectory: { limits: { maxTurns: 5 } },
            } satisfies EvaluationInput,
          ],
        })) as EvaluationOutcome;
        // Another run's trajectory under the same id replays the stored turns: refused at the end, not scored.
        const failure = await trajectoryOf(`${tag}-q0-s0`, `${tag}-other`, questions[0]!).then(
          () => undefined,
          (error: unknown) => error,
        );
        return [evaluated, failure];
      });

      const { result, answers } = await answersOf(context, tag);
      for (const [index, question] of result.perQuestion.entries()) {
        assert.equal(question.questionId, questions[index]!.id);
        assert.equal(question.samples[0]!.trajectoryId, `eval-${tag}-q${index}-s0`);
      }
      assert.match(answers[0]![0]!, /^Paris/, 'q1 answered from its own observations, not with the run’s "Lyon"');
      assert.equal(outcome.avgAtK.cover_em, 2 / 3);
      const row = await createPgTrajectoryStore(context.pool).get(`eval-${tag}-q0-s0`);
      assert.deepEqual([row?.runId, row?.questionId], [`eval-${tag}`, 'q1']);

      assert.ok(refused, 'the second trajectory under a used id failed');
      assert.ok(
        causeMessages(refused).some((message) =>
          /already holds another trajectory \(run ".*", question "q3"\).*runId, questionId, question differ/.test(message),
        ),
        causeMessages(refused).join(' | '),
      );
      const kept = await createPgTrajectoryStore(context.pool).get(`${tag}-q0-s0`);
      assert.deepEqual([kept?.runId, kept?.questionId, kept?.answer], [tag, 'q3', 'Lyon'], 'the first trajectory’s row is untouched');
    } finally {
      await context.close();
    }
  },
);
