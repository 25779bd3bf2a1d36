/**
 * The demo's resume logic against the real test stack: a run's manifest keeps each finished phase, so
 * a second session skips it; a workflow started under the run's deterministic id and left running by
 * a killed session is re-attached (the same execution, not a second one), a completed one is read
 * back without running again, and a terminated one (Ctrl-C) is started again under the same id.
 * A skeleton workflow stands in for the demo's long ones.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createSkeletonActivities } from '../activities/skeleton.activities.js';
import { createManifest, DemoPhases, manifestPath, readManifest, startOrAttach } from '../cli/demo/manifest.js';
import { demoPlan } from '../cli/demo/plan.js';
import { UsageError } from '../cli/command.js';
import { createPgSkeletonStepStore } from '../infra/postgres/skeleton-step-store.pg.js';
import { skeletonWorkflowType, type SkeletonResult } from '../workflows/contracts/skeleton.contract.js';
import { inProcessWorker, openContext, uniquePrefix, waitUntil } from './helpers/stack.js';

test(
  'a resumed demo run skips finished phases and re-attaches to, reads back or restarts its workflows',
  { timeout: 180_000 },
  async () => {
    const context = await openContext(uniquePrefix('demo-resume'));
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'longhaul-demo-resume-'));
    try {
      const runId = `demo-resume-${Date.now()}`;
      const plan = demoPlan({});
      const firstSession = new DemoPhases(home, createManifest(home, runId, plan));
      assert.throws(
        () => createManifest(home, runId, plan),
        (error: unknown) => error instanceof UsageError && /--resume/.test(error.message),
      );
      let corpusBuilds = 0;
      assert.deepEqual(
        await firstSession.run('corpus', async () => {
          corpusBuilds += 1;
          return { documents: 3 };
        }),
        { documents: 3 },
      );
      // The first session starts the phase's workflow (no worker polls yet, so it stays running) and is killed.
      const options = {
        taskQueue: context.queue('agent'),
        workflowId: `${context.queue('agent')}-${runId}-long`,
        args: [{ steps: 3, stepDelayMs: 100 }],
      };
      const first = await startOrAttach(context.client, skeletonWorkflowType, options);
      assert.equal(first.how, 'started');
      const firstRun = (await first.handle.describe()).runId;
      assert.equal(
        JSON.parse(fs.readFileSync(manifestPath(home, runId), 'utf8')).phases.long,
        undefined,
        'the killed phase is not recorded',
      );

      // Second session: the manifest's plan, the finished phase skipped, the running workflow re-attached.
      const skipped: string[] = [];
      const manifest = readManifest(home, runId);
      assert.deepEqual(manifest.plan, plan);
      const secondSession = new DemoPhases(home, manifest, (name) => skipped.push(name));
      assert.deepEqual(
        await secondSession.run('corpus', async () => {
          corpusBuilds += 1;
          return { documents: 99 };
        }),
        { documents: 3 },
      );
      assert.equal(corpusBuilds, 1, 'the finished phase did not run again');
      assert.deepEqual(skipped, ['corpus']);
      const worker = await inProcessWorker(
        context,
        'agent',
        createSkeletonActivities({ blobs: context.blobs, steps: createPgSkeletonStepStore(context.pool) }),
      );
      await worker.runUntil(async () => {
        const result = await secondSession.run('long', async () => {
          const again = await startOrAttach(context.client, skeletonWorkflowType, options);
          assert.equal(again.how, 'running');
          assert.equal((await again.handle.describe()).runId, firstRun, 'the same execution, not a second one');
          return (await again.handle.result()) as SkeletonResult;
        });
        assert.equal(result.steps, 3);

        // A third session reads the completed workflow back instead of running it again.
        const done = await startOrAttach(context.client, skeletonWorkflowType, options);
        assert.equal(done.how, 'completed');
        assert.equal((await done.handle.describe()).runId, firstRun);
        assert.ok(readManifest(home, runId).phases.long, 'the phase is recorded once it finished');

        // Ctrl-C terminates what the demo started: resuming starts it again under the same id.
        const stoppedOptions = { ...options, workflowId: `${options.workflowId}-stopped`, args: [{ steps: 50, stepDelayMs: 200 }] };
        const stopped = await startOrAttach(context.client, skeletonWorkflowType, stoppedOptions);
        await waitUntil(async () => (await stopped.handle.describe()).status.name === 'RUNNING', 30_000, 'the workflow runs');
        const stoppedRun = (await stopped.handle.describe()).runId;
        await stopped.handle.terminate('the demo was interrupted');
        const restarted = await startOrAttach(context.client, skeletonWorkflowType, {
          ...stoppedOptions,
          args: [{ steps: 2, stepDelayMs: 50 }],
        });
        assert.equal(restarted.how, 'started');
        const restartedRun = (await restarted.handle.describe()).runId;
        assert.notEqual(restartedRun, stoppedRun, 'a new execution');
        assert.equal(((await restarted.handle.result()) as SkeletonResult).steps, 2);
      });
      assert.throws(
        () => readManifest(home, 'demo-no-such-run'),
        (error: unknown) => error instanceof UsageError && /--resume: no demo run/.test(error.message),
      );
    } finally {
      fs.rmSync(home, { recursive: true, force: true });
      await context.close();
    }
  },
);
