/**
 * The generate activity through Temporal, served by the real gpu-infer worker process on the tiny
 * model: a kill -9 in the middle of a generation is retried on a restarted worker, and the stored
 * record equals an uninterrupted greedy generation.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import { Worker } from '@temporalio/worker';
import type { GenerateActivityResult, GenerationBlob } from '../activities/policy.activities.js';
import { createOnnxBackend } from '../gpu/infer/onnx.backend.js';
import { tinyModelDir } from './doubles/test-model.js';
import { connectWorker, dataConverter } from '../infra/temporal/connection.js';
import { openContext, spawnWorker, uniquePrefix } from './helpers/stack.js';

const workflowsPath = path.join(path.dirname(fileURLToPath(import.meta.url)), 'fixtures', 'generate-once.workflow.js');

test('a generation survives kill -9 of the gpu-infer worker and matches an uninterrupted one', async () => {
  const prefix = uniquePrefix('policy-worker');
  const context = await openContext(prefix);
  const modelDir = await tinyModelDir();
  const env = {
    LONGHAUL_TASK_QUEUE_PREFIX: prefix,
    LONGHAUL_MODEL_DIR: modelDir,
    LONGHAUL_POLICY_VERSION: '2',
    LONGHAUL_POLICY_BACKEND: 'onnx',
    LONGHAUL_ONNX_THREADS: '1',
  };
  const workflowWorker = await Worker.create({
    connection: await connectWorker(context.config),
    namespace: context.config.temporal.namespace,
    taskQueue: context.queue('agent'),
    workflowsPath,
    dataConverter: dataConverter(context.config, context.blobs),
  });
  let infer = spawnWorker('gpu-infer', env);
  const running = workflowWorker.run();
  try {
    await infer.ready;
    const request = { prompt: 'Question: what is durable execution?\nAnswer:', maxNewTokens: 400 };
    const key = `${randomUUID()}/turn-0000`;
    const handle = await context.client.workflow.start('generateOnce', {
      taskQueue: context.queue('agent'),
      workflowId: `policy-worker-${randomUUID()}`,
      args: [{ queue: context.queue('gpu-infer'), generation: { key, request } }],
    });
    // Kill the worker while the first attempt is generating (its heartbeats have started).
    for (let tries = 0; tries < 200; tries += 1) {
      const description = await handle.describe();
      const pending = (description.raw.pendingActivities ?? [])[0];
      if (pending?.heartbeatDetails || pending?.lastStartedTime) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    infer.kill('SIGKILL');
    infer = spawnWorker('gpu-infer', env);
    await infer.ready;
    const result = (await handle.result()) as GenerateActivityResult;
    const record = JSON.parse((await context.blobs.get(result.blobKey)).toString()) as GenerationBlob;
    const local = await createOnnxBackend({ modelDir, version: 2, threads: 1 });
    const whole = await local.generate(request);
    await local.close();
    assert.deepEqual(record.tokenIds, whole.tokenIds);
    assert.equal(result.text, whole.text);
    assert.equal(result.generatedTokens, 400);
    assert.deepEqual([...new Set(record.tokenVersions)], [2]);
    assert.equal(result.finishReason, 'length');
    const history = await handle.fetchHistory();
    const attempts = (history.events ?? []).flatMap((event) =>
      event.activityTaskStartedEventAttributes ? [event.activityTaskStartedEventAttributes.attempt] : [],
    );
    assert.deepEqual(attempts, [2], 'the first attempt died with its worker; the second completed');
  } finally {
    infer.kill('SIGKILL');
    workflowWorker.shutdown();
    await running;
    await context.close();
  }
});
