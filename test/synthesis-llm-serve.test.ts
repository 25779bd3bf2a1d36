/**
 * The LLM-driven synthesizer against `longhaul serve` (the real OpenAI-compatible server of the local
 * policy, here on the tiny test model): whatever the model writes, every task ends recorded with its
 * reason — a rejection naming what was wrong with the reply, never a failed workflow — and the chat
 * model's prompt and completion tokens, as the server's usage field reports them, are stored with each
 * candidate and summed in the dataset's statistics.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { ChildProcess } from 'node:child_process';
import { llmReplyKey } from '../activities/synthesis/synthesis.activities.js';
import { createToolActivities } from '../activities/tools/run-tools.activities.js';
import { buildToolRegistry } from '../composition/tool-registry.js';
import { createInProcessAgent } from '../composition/in-process-agent.js';
import { createPgSynthesisStore } from '../infra/postgres/synthesis-store.pg.js';
import { createPgToolCallStore } from '../infra/search/tool-call-store.pg.js';
import { synthesisRunWorkflowType, type LlmUsage, type SynthesisRunResult } from '../workflows/contracts/synthesis.contract.js';
import { createScriptedPolicy } from './doubles/scripted-policy.js';
import { tinyModelDir } from './doubles/test-model.js';
import { startLonghaulServe } from './helpers/inference-servers.js';
import { openContext, uniquePrefix, type TestContext } from './helpers/stack.js';
import { evaluationSetIndex, synthesisCorpus, type SynthesisCorpus } from './helpers/synthesis.js';

describe('the LLM-driven synthesizer against longhaul serve (the tiny model)', () => {
  const prefix = uniquePrefix('synthserve');
  let context: TestContext;
  let corpus: SynthesisCorpus;
  let serve: { child: ChildProcess; baseUrl: string } | undefined;

  before(async () => {
    context = await openContext(prefix);
    corpus = await synthesisCorpus(context.config, 'synthserve');
    serve = await startLonghaulServe(await tinyModelDir(), 0);
  });
  after(async () => {
    serve?.child.kill('SIGTERM');
    await corpus?.close();
    await context?.close();
  });

  it('records every task with its reason and the endpoint-reported tokens, whatever the model says', { timeout: 480_000 }, async () => {
    const registry = buildToolRegistry(context.config, corpus.pool);
    const agent = await createInProcessAgent({
      config: context.config,
      blobs: context.blobs,
      pool: corpus.pool,
      backend: createScriptedPolicy(),
      tools: createToolActivities({ registry: registry.registry, store: createPgToolCallStore(corpus.pool) }),
      prefix,
      contamination: evaluationSetIndex(['What is the capital of Atlantis, the sunken island?']),
      // No endpoint configured on the worker: the run names it (settings.llmBaseUrl), as `synth --llm-url` does.
      synthesisLlm: { baseUrl: null, model: 'unused', apiKey: null, timeoutMs: 120_000 },
    });
    const datasetId = `${prefix}tiny`;
    const count = 3;
    const run = (await agent.run(() =>
      context.client.workflow.execute(synthesisRunWorkflowType, {
        taskQueue: context.queue('agent'),
        workflowId: `${prefix}run`,
        args: [
          {
            datasetId,
            count,
            seed: 3,
            synthesizer: 'llm',
            concurrency: 3,
            settings: {
              llmBaseUrl: serve!.baseUrl,
              llmModel: 'tiny-synthesizer',
              targetHops: 1,
              targetFuzzes: 1,
              llmAttempts: 2,
              difficultySamples: 2,
              evidenceCheck: 'record',
            },
          },
        ],
      }),
    )) as SynthesisRunResult;
    await registry.close();

    const store = createPgSynthesisStore(corpus.pool);
    const rows = (await store.candidates(datasetId)).sort((a, b) => a.taskIndex - b.taskIndex);
    assert.equal(run.candidates, count, 'the run published with every task recorded');
    assert.deepEqual(
      rows.map((row) => row.taskIndex),
      [0, 1, 2],
    );
    const verdicts = await store.verdicts(rows.map((row) => row.workflowId));
    for (const row of rows) {
      console.log(`task ${row.taskIndex}: ${row.accepted ? 'accepted' : row.reason}`);
      // A reason from an action or a check, never a task that failed outright.
      assert.doesNotMatch(row.reason, /^failed:/, `task ${row.taskIndex}`);
      assert.match(
        row.reason,
        /^(accepted|synthesis: |quality: |grounding: |contamination: |solvability: |evidence: |uniqueness: |difficulty: )/,
      );
      const check = /^(quality|grounding|contamination|solvability|evidence|uniqueness|difficulty): /.exec(row.reason)?.[1];
      // A rejection by a check has that check's failed verdict stored, with the same reason.
      if (check) {
        const stored = verdicts.find((verdict) => verdict.workflowId === row.workflowId && verdict.check === check);
        assert.equal(stored?.passed, false, `task ${row.taskIndex}: the ${check} verdict is stored`);
        assert.equal(`${check}: ${stored.reason}`, row.reason);
      }
      // The chat model was asked (seed at least), and the server's usage was counted: prompt tokens > 0, completion within the bound.
      const usage = (row.candidate as { llmUsage?: LlmUsage }).llmUsage;
      assert.ok(usage && usage.calls >= 1, `task ${row.taskIndex}: ${JSON.stringify(usage)}`);
      assert.ok(usage.promptTokens > 0, `task ${row.taskIndex}: prompt tokens counted (${usage.promptTokens})`);
      assert.ok(usage.completionTokens <= usage.calls * 512, `task ${row.taskIndex}: completion tokens bounded by max_tokens`);
      assert.ok(row.tokens >= usage.promptTokens + usage.completionTokens, `task ${row.taskIndex}: tokens include the chat model's`);
      // Every reply was stored before use (the idempotency of the actions).
      const stored = await context.blobs.list(llmReplyKey(`${row.workflowId}/`).replace(/\.json$/, ''));
      assert.ok(
        stored.some((key) => /\/seed-0\.json$/.test(key)),
        `task ${row.taskIndex}: the seed reply is stored (${stored.join(', ')})`,
      );
    }
    const sum = (field: keyof LlmUsage) =>
      rows.reduce((total, row) => total + ((row.candidate as { llmUsage: LlmUsage }).llmUsage[field] ?? 0), 0);
    assert.deepEqual(
      [run.llm!.calls, run.llm!.promptTokens, run.llm!.completionTokens],
      [sum('calls'), sum('promptTokens'), sum('completionTokens')],
      'the statistics sum the candidates',
    );
    assert.ok(run.llm!.calls >= count);
  });
});
