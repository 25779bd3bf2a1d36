import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import path from 'node:path';
import { WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { createSkeletonActivities } from '../activities/skeleton.activities.js';
import { createPgSkeletonStepStore } from '../infra/postgres/skeleton-step-store.pg.js';
import { temporalBinary } from '../infra/services/binaries.js';
import { repoRoot } from '../infra/paths.js';
import { errorTypes } from '../workflows/contracts/errors.js';
import { skeletonWorkflowType } from '../workflows/contracts/skeleton.contract.js';
import { inProcessWorker, openContext, uniquePrefix } from './helpers/stack.js';

const run = promisify(execFile);
const cli = path.join(repoRoot, 'dist', 'cli', 'main.js');

async function runCli(args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [cli, ...args], { env: { ...process.env, ...env } });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failure = error as { code: number; stdout: string; stderr: string };
    return { code: failure.code, stdout: failure.stdout, stderr: failure.stderr };
  }
}

test('temporal workflow start with a bad input fails the workflow at once, naming the field', async () => {
  const context = await openContext(uniquePrefix('bad-input'));
  try {
    const worker = await inProcessWorker(
      context,
      'agent',
      createSkeletonActivities({ blobs: context.blobs, steps: createPgSkeletonStepStore(context.pool) }),
    );
    const workflowId = `${context.queue('agent')}-bad`;
    await run(temporalBinary(context.config.toolsDir), [
      'workflow',
      'start',
      '--address',
      context.config.temporal.address,
      '--type',
      skeletonWorkflowType,
      '--task-queue',
      context.queue('agent'),
      '--workflow-id',
      workflowId,
      '--input',
      '{"bad":1}',
    ]);
    const outcome = await worker.runUntil(
      context.client.workflow
        .getHandle(workflowId)
        .result()
        .then(
          () => undefined,
          (error: unknown) => error,
        ),
    );
    assert.ok(outcome instanceof WorkflowFailedError);
    assert.ok(outcome.cause instanceof ApplicationFailure);
    assert.equal(outcome.cause.type, errorTypes.invalidInput);
    assert.equal(outcome.cause.nonRetryable, true);
    assert.match(outcome.cause.message, /^bad: unknown field/);
    const history = await context.client.workflow.getHandle(workflowId).fetchHistory();
    assert.ok((history.events?.length ?? 0) <= 10, 'fails on the first workflow task, no retries');
  } finally {
    await context.close();
  }
});

test('a skeleton input with steps of the wrong type names steps', async () => {
  const context = await openContext(uniquePrefix('bad-steps'));
  try {
    const worker = await inProcessWorker(
      context,
      'agent',
      createSkeletonActivities({ blobs: context.blobs, steps: createPgSkeletonStepStore(context.pool) }),
    );
    const outcome = await worker.runUntil(
      context.client.workflow
        .execute(skeletonWorkflowType, {
          taskQueue: context.queue('agent'),
          workflowId: `${context.queue('agent')}-steps`,
          args: [{ steps: 'many' }],
        })
        .then(
          () => undefined,
          (error: unknown) => error,
        ),
    );
    assert.ok(outcome instanceof WorkflowFailedError);
    assert.equal((outcome.cause as ApplicationFailure).message, 'steps: expected an integer between 1 and 100000, got "many"');
  } finally {
    await context.close();
  }
});

test('the CLI exits 2 with one line naming a bad flag', async () => {
  const result = await runCli(['status', '--bogus']);
  assert.equal(result.code, 2);
  assert.equal(result.stderr.trim().split('\n').length, 1);
  assert.match(result.stderr, /Unknown option '--bogus'.*see longhaul status --help/);
});

test('the CLI exits 2 on an unknown command and on an invalid environment variable, naming it', async () => {
  const unknown = await runCli(['fly']);
  assert.equal(unknown.code, 2);
  assert.match(unknown.stderr, /unknown command "fly"/);
  const badPort = await runCli(['status'], { LONGHAUL_PG_PORT: 'abc' });
  assert.equal(badPort.code, 2);
  assert.match(badPort.stderr, /^longhaul: LONGHAUL_PG_PORT="abc" is invalid/);
});

test('--help explains every command', async () => {
  const top = await runCli(['--help']);
  assert.equal(top.code, 0);
  for (const name of ['demo', 'up', 'down', 'status', 'temporal']) assert.match(top.stdout, new RegExp(`\\n  ${name} `));
  const up = await runCli(['up', '--help']);
  assert.match(up.stdout, /--no-workers/);
});
