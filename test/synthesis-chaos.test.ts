/**
 * Kill -9 of the agent worker (which runs every synthesis workflow and activity) in the middle of a
 * synthesisRun: the run resumes on a new worker process, loses no task, and publishes a dataset
 * identical to an uninterrupted run with the same random seed.
 */
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createPgSynthesisStore } from '../infra/postgres/synthesis-store.pg.js';
import { synthesisRunStateQuery, synthesisRunWorkflowType, type SynthesisRunResult } from '../workflows/contracts/synthesis.contract.js';
import type { QueueRole } from '../workflows/contracts/queues.js';
import { openContext, spawnWorker, uniquePrefix, waitUntil, type TestContext } from './helpers/stack.js';
import { synthesisCorpus, type SynthesisCorpus } from './helpers/synthesis.js';

describe('a synthesis run under kill -9', () => {
  const prefix = uniquePrefix('synthchaos');
  let context: TestContext;
  let corpus: SynthesisCorpus;
  let env: NodeJS.ProcessEnv;
  let dataRoot: string;
  const workers = new Map<QueueRole, ChildProcess>();

  const start = async (role: QueueRole) => {
    const worker = spawnWorker(role, env);
    await worker.ready;
    workers.set(role, worker);
  };

  before(async () => {
    context = await openContext(prefix);
    corpus = await synthesisCorpus(context.config, 'synthchaos');
    // One small evaluation set for the contamination check (the real index, loaded by the worker from LONGHAUL_DATA_ROOT).
    dataRoot = fs.mkdtempSync(path.join(os.tmpdir(), 'longhaul-synth-eval-'));
    fs.writeFileSync(
      path.join(dataRoot, 'eval.jsonl'),
      `${JSON.stringify({ id: 'e1', question: 'What is the capital of Atlantis, the sunken island?', golden_answers: ['Poseidonis'] })}\n`,
    );
    env = {
      LONGHAUL_TASK_QUEUE_PREFIX: prefix,
      LONGHAUL_POLICY_BACKEND: 'scripted',
      DATABASE_URL: corpus.databaseUrl,
      LONGHAUL_DATA_ROOT: dataRoot,
    };
    for (const role of ['agent', 'tools', 'gpu-infer'] as const) await start(role);
  });
  after(async () => {
    for (const worker of workers.values()) worker.kill('SIGKILL');
    await corpus?.close();
    await context?.close();
    fs.rmSync(dataRoot, { recursive: true, force: true });
  });

  const input = (datasetId: string) => ({
    datasetId,
    count: 8,
    seed: 23,
    concurrency: 3,
    tasksPerExecution: 5,
    settings: { difficultySamples: 8, difficultyThreshold: 0.5 },
  });

  it('loses no task and publishes the same dataset as an uninterrupted run', { timeout: 600_000 }, async () => {
    const calm: SynthesisRunResult = await context.client.workflow.execute(synthesisRunWorkflowType, {
      taskQueue: context.queue('agent'),
      workflowId: `${prefix}calm`,
      args: [input(`${prefix}calm`)],
    });
    assert.equal(calm.candidates, 8);
    assert.ok(calm.accepted >= 1, `some accepted items to compare (${JSON.stringify(calm.rejectionsByReason)})`);

    const handle = await context.client.workflow.start(synthesisRunWorkflowType, {
      taskQueue: context.queue('agent'),
      workflowId: `${prefix}chaos`,
      args: [input(`${prefix}chaos`)],
    });
    let kills = 0;
    for (const finishedAtLeast of [1, 4]) {
      await waitUntil(
        async () => (await handle.query(synthesisRunStateQuery)).finished >= finishedAtLeast,
        240_000,
        `${finishedAtLeast} finished tasks`,
      );
      const worker = workers.get('agent')!;
      worker.kill('SIGKILL');
      await new Promise((resolve) => worker.once('exit', resolve));
      kills += 1;
      await start('agent');
    }
    const chaos: SynthesisRunResult = await handle.result();
    assert.equal(kills, 2);
    assert.equal(chaos.candidates, 8, 'no task lost');
    const store = createPgSynthesisStore(corpus.pool);
    assert.deepEqual(
      (await store.candidates(`${prefix}chaos`)).map((row) => row.taskIndex),
      [0, 1, 2, 3, 4, 5, 6, 7],
    );
    assert.equal(chaos.contentHash, calm.contentHash, 'the same dataset as the uninterrupted run');
    assert.equal(chaos.accepted, calm.accepted);
    assert.deepEqual(chaos.rejectionsByReason, calm.rejectionsByReason);
  });
});
