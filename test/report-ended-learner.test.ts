/**
 * The report of a run whose learner was stopped (Ctrl-C terminates it): the steps it made are still
 * read, by the learner's state query, which a worker answers for a closed workflow by replaying its
 * history. Before, such a run's report had no step statistics at all. A learner (scripted policy and
 * tools, a simulated train step) on the test stack, terminated after two steps.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { gatherReport } from '../cli/report/gather-report.js';
import { createPgReportSource } from '../infra/postgres/report-source.pg.js';
import { learnerStateQuery, learnerWorkflowType, type LearnerState } from '../workflows/contracts/learner.contract.js';
import { scriptedLearnerWorkers } from './helpers/agent-workers.js';
import { openContext, uniquePrefix, waitUntil } from './helpers/stack.js';

test('a terminated learner keeps its step statistics in the report', { timeout: 300_000 }, async () => {
  const prefix = uniquePrefix('report-ended');
  const runId = `${prefix}run`;
  const context = await openContext(prefix);
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'longhaul-report-ended-'));
  try {
    const questions = Array.from({ length: 200 }, (_, index) =>
      JSON.stringify({ id: `q${index}`, question: `script:{"turns":2,"answer":"result","delayMs":0}`, answers: ['result'] }),
    );
    await context.blobs.put(`datasets/${runId}/train.jsonl`, questions.join('\n'));
    // A step takes a while, so the learner is still running when the test stops it.
    const workers = await scriptedLearnerWorkers(context, { stepDelayMs: 300, metrics: { proximalSeconds: 0.5 } });
    const model = await workers.run(async () => {
      const handle = await context.client.workflow.start(learnerWorkflowType, {
        taskQueue: context.queue('agent'),
        workflowId: `learner-${runId}`,
        args: [
          {
            runId,
            datasetKey: `datasets/${runId}/train.jsonl`,
            settings: { mode: 'async', groupSize: 2, batchSize: 4, maxSteps: 1000, eta: 2, maxInflight: 8, dropEqualRewardGroups: false },
          },
        ],
      });
      await waitUntil(
        async () => ((await handle.query(learnerStateQuery)) as LearnerState).history.length >= 2,
        120_000,
        'two learner steps',
      );
      await handle.terminate('stopped as Ctrl-C stops it');
      // The worker still runs: it answers the closed workflow's query by replaying its history.
      return (
        await gatherReport({ source: createPgReportSource(context.pool), blobs: context.blobs, client: context.client, home }, { runId })
      ).model;
    });
    assert.ok(model.steps.length >= 2, `the steps made before the stop are reported (${model.steps.length})`);
    assert.deepEqual(
      model.steps.slice(0, 2).map((step) => step.version),
      [1, 2],
    );
    assert.ok(model.summary.wallSeconds !== null && model.summary.wallSeconds > 0, 'the wall time runs to the stop');
    assert.ok(
      model.notes.some((note) =>
        new RegExp(`^the learner workflow learner-${runId} ended terminated after \\d+ steps \\(v\\d+\\): its statistics up to then$`).test(
          note,
        ),
      ),
      model.notes.join('\n'),
    );
  } finally {
    await context.close();
    fs.rmSync(home, { recursive: true, force: true });
  }
});
