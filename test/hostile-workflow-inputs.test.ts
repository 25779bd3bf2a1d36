/**
 * Hostile-input corpus, boundary "workflow inputs" (test/fixtures/hostile/workflow-inputs.json): inputs
 * with missing, extra or wrongly typed fields for every workflow type the agent worker registers
 * (workflows/index.ts), started with the real `temporal` CLI. One in-process worker serves the
 * workflow bundle and the real agent-queue activities for all cases. Each workflow must fail on its
 * first task with a non-retryable LonghaulInvalidInput naming the field — never wait on an activity —
 * and nothing may be written: no row or blob carries the case's id afterwards.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import * as registered from '../workflows/index.js';
import { workerActivities } from '../composition/queue-activities.js';
import { temporalBinary } from '../infra/services/binaries.js';
import { errorTypes } from '../workflows/contracts/errors.js';
import { expand, loadCorpus, reportCount, type CorpusCase } from './helpers/hostile-corpus.js';
import { inProcessWorker, openContext, uniquePrefix } from './helpers/stack.js';

const run = promisify(execFile);

interface WorkflowInputCase extends CorpusCase {
  readonly type: string;
  readonly input: unknown;
  /** The field the failure's message starts with. */
  readonly field: string;
}

const cases = loadCorpus<WorkflowInputCase>('workflow-inputs');

/** Rows and blobs that mention `marker` (the test's unique prefix), for "nothing half-written". */
async function traces(context: Awaited<ReturnType<typeof openContext>>, marker: string): Promise<string[]> {
  const found: string[] = [];
  const tables = await context.pool.query<{ table_name: string }>(
    `SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE'`,
  );
  for (const { table_name: table } of tables.rows) {
    const hits = await context.pool.query<{ n: string }>(`SELECT count(*) AS n FROM "${table}" AS t WHERE position($1 in t::text) > 0`, [
      marker,
    ]);
    if (Number(hits.rows[0]!.n) > 0) found.push(`${hits.rows[0]!.n} row(s) of ${table}`);
  }
  for (const prefix of ['trajectories/', 'evaluations/', 'datasets/', 'synthesis/', 'skeleton/', 'runs/'])
    for (const key of await context.blobs.list(prefix).catch(() => [] as string[])) if (key.includes(marker)) found.push(`blob ${key}`);
  return found;
}

test(`the hostile workflow-input corpus (${cases.length} cases): every registered workflow type fails fast with LonghaulInvalidInput naming the field, and writes nothing`, async () => {
  const types = Object.keys(registered).sort();
  for (const type of types)
    assert.ok(
      cases.some((entry) => entry.type === type),
      `workflow-inputs.json has no case for the registered workflow ${type}`,
    );
  const prefix = uniquePrefix('hostile-wf');
  const context = await openContext(prefix);
  const { activities, close } = await workerActivities('agent', context.config, context.blobs);
  try {
    const worker = await inProcessWorker(context, 'agent', activities);
    const before = await traces(context, prefix);
    const failures: string[] = [];
    await worker.runUntil(async () => {
      for (let start = 0; start < cases.length; start += 4)
        await Promise.all(
          cases.slice(start, start + 4).map(async (entry, offset) => {
            const workflowId = `${prefix}${start + offset}`;
            const input = JSON.stringify(expand(entry.input)).replaceAll('$ID', workflowId);
            await run(temporalBinary(context.config.toolsDir), [
              'workflow',
              'start',
              '--address',
              context.config.temporal.address,
              '--type',
              entry.type,
              '--task-queue',
              context.queue('agent'),
              '--workflow-id',
              workflowId,
              '--input',
              input,
            ]);
            const handle = context.client.workflow.getHandle(workflowId);
            const outcome = await Promise.race([
              handle.result().then(
                () => 'completed',
                (error: unknown) => error,
              ),
              new Promise((resolve) => setTimeout(() => resolve('still running after 60 s'), 60_000)),
            ]);
            if (!(outcome instanceof WorkflowFailedError) || !(outcome.cause instanceof ApplicationFailure)) {
              failures.push(`${entry.id}: ${outcome instanceof Error ? outcome.message : String(outcome)}`);
              await handle.terminate('hostile corpus: did not fail fast').catch(() => undefined);
              return;
            }
            const cause = outcome.cause;
            if (cause.type !== errorTypes.invalidInput || !cause.nonRetryable)
              failures.push(`${entry.id}: ${cause.type} (non-retryable ${cause.nonRetryable}): ${cause.message}`);
            else if (!cause.message.startsWith(`${entry.field}`))
              failures.push(`${entry.id}: "${cause.message}" does not start with ${entry.field}`);
            const history = await handle.fetchHistory();
            const activitiesScheduled = (history.events ?? []).filter((event) => event.activityTaskScheduledEventAttributes).length;
            if (activitiesScheduled > 0) failures.push(`${entry.id}: ${activitiesScheduled} activities were scheduled before it failed`);
          }),
        );
    });
    assert.deepEqual(failures, []);
    assert.deepEqual(await traces(context, prefix), before, 'no row or blob carries the cases’ ids');
    reportCount('workflow inputs', cases.length, `${types.length} workflow types`);
  } finally {
    await close();
    await context.close();
  }
});
