/**
 * A policy served by an OpenAI-compatible server that returns no token ids (llama.cpp's
 * llama-server answers this way): the token budget still counts every turn (from `usage`, else an
 * estimate), the record says the trajectory cannot be trained on, and the learner refuses to start.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ApplicationFailure, WorkflowFailedError } from '@temporalio/client';
import { createScriptedTools } from './doubles/scripted-tools.js';
import { createOpenAIBackend } from '../infra/inference/openai.backend.js';
import { createPgTrajectoryStore } from '../infra/postgres/trajectory-store.pg.js';
import { createInProcessAgent } from '../composition/in-process-agent.js';
import { learnerWorkflowType } from '../workflows/contracts/learner.contract.js';
import { trajectoryWorkflowType, type TrajectoryResult } from '../workflows/contracts/trajectory.contract.js';
import { agentWorkers } from './helpers/agent-workers.js';
import { startTokenlessServer } from './helpers/inference-servers.js';
import { openContext, uniquePrefix } from './helpers/stack.js';

/** A search step whose query changes with the turn (observations seen so far), so no repeat limit ends the run. */
const searchStep = (body: { prompt?: string }) => {
  const turn = body.prompt?.match(/<\/information>/g)?.length ?? 0;
  return `<think>step ${turn}</think>\n<search>query ${turn}</search>`;
};

type TurnRecord = { tokenIds: number[]; untrainable?: { missing: string[]; generatedTokens: number; countedFrom: string } };

for (const usage of [true, false]) {
  test(
    `the token budget stops a trajectory on a server without token ids (${usage ? 'counted from usage' : 'no usage: estimated from the text'}), and its record is marked untrainable`,
    { timeout: 180_000 },
    async () => {
      const context = await openContext(uniquePrefix(usage ? 'tokenless-usage' : 'tokenless-bare'));
      const perTurn = usage ? 40 : Math.ceil(searchStep({ prompt: '' }).length / 4);
      const server = await startTokenlessServer({ reply: searchStep, completionTokens: usage ? () => 40 : null });
      try {
        const backend = createOpenAIBackend({ baseUrl: `${server.url}/v1`, model: 'smollm2-gguf' });
        const workflowId = `${context.queue('agent')}-budget`;
        const result = (await (
          await agentWorkers(context, backend, createScriptedTools())
        ).run(() =>
          context.client.workflow.execute(trajectoryWorkflowType, {
            taskQueue: context.queue('agent'),
            workflowId,
            args: [{ question: 'What is the capital of Peru?', answers: ['Lima'], limits: { maxTotalTokens: 3 * perTurn - 1 } }],
          }),
        )) as TrajectoryResult;
        assert.equal(result.stopReason, 'max_tokens');
        assert.equal(result.turns, 3);
        assert.equal(result.generatedTokens, 3 * perTurn);
        assert.equal((await createPgTrajectoryStore(context.pool).get(workflowId))?.generatedTokens, 3 * perTurn);
        const record = JSON.parse((await context.blobs.get(result.recordKey)).toString()) as {
          trainable: boolean;
          turnRecords: TurnRecord[];
        };
        assert.equal(record.trainable, false);
        for (const turn of record.turnRecords) {
          assert.deepEqual(turn.tokenIds, []);
          assert.deepEqual(turn.untrainable, {
            missing: ['tokenIds', 'logprobs'],
            generatedTokens: perTurn,
            countedFrom: usage ? 'usage' : 'estimate',
          });
        }
      } finally {
        await server.close();
        await context.close();
      }
    },
  );
}

test(
  'the learner refuses at start, non-retryably, a policy backend that gives no token ids or logprobs, naming it and the fix',
  { timeout: 180_000 },
  async () => {
    const prefix = uniquePrefix('tokenless-learner');
    const context = await openContext(prefix);
    const server = await startTokenlessServer({ reply: searchStep, completionTokens: () => 40 });
    try {
      await context.blobs.put(
        `${prefix}q.jsonl`,
        JSON.stringify({ id: 'q0', question: 'What is the capital of Peru?', answers: ['Lima'] }),
      );
      const workers = await createInProcessAgent({
        config: context.config,
        blobs: context.blobs,
        pool: context.pool,
        prefix,
        tools: createScriptedTools(),
        backend: createOpenAIBackend({ baseUrl: `${server.url}/v1`, model: 'smollm2-gguf' }),
        roles: ['agent', 'gpu-infer', 'tools', 'gpu-train'],
      });
      await assert.rejects(
        workers.run(() =>
          context.client.workflow.execute(learnerWorkflowType, {
            taskQueue: context.queue('agent'),
            workflowId: `${prefix}learner`,
            args: [{ runId: `${prefix}run`, datasetKey: `${prefix}q.jsonl`, settings: { groupSize: 2, batchSize: 2, maxSteps: 1 } }],
          }),
        ),
        (error: unknown) => {
          assert.ok(error instanceof WorkflowFailedError && error.cause instanceof ApplicationFailure, String(error));
          assert.equal(error.cause.type, 'LonghaulInvalidInput');
          assert.equal(error.cause.nonRetryable, true);
          assert.match(
            error.cause.message,
            /^learner: the policy backend "openai" of the gpu-infer worker returns no token ids or logprobs \(probed http:\/\/127\.0\.0\.1:\d+\/v1\/completions \(model "smollm2-gguf"\): no token ids and no logprobs in the response\), so its trajectories cannot be trained on\./,
          );
          assert.match(error.cause.message, /LONGHAUL_POLICY_BACKEND=onnx/);
          return true;
        },
      );
      assert.equal(server.calls.length, 1, 'only the probe reached the server: no rollout started');
    } finally {
      await server.close();
      await context.close();
    }
  },
);
