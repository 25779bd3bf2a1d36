/**
 * `longhaul eval --version V` for a version other than the latest: the gpu-infer worker serves one
 * version, so the evaluation restarts it on V and back afterwards (cli/restart-inference.ts). On the
 * real stack with a real worker process (its own LONGHAUL_HOME for pid files, its own queue prefix):
 * the latest needs no switch; a running learner refuses the switch naming --version and the learner;
 * a switch restarts the worker with LONGHAUL_POLICY_VERSION=V, and the restore restarts it without.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { serveForEvaluation } from '../cli/restart-inference.js';
import { runningTraining } from '../cli/training-guard.js';
import { config } from '../infra/config.js';
import { runningPid } from '../infra/services/processes.js';
import { workerService } from '../infra/services/workers.service.js';
import { learnerWorkflowType } from '../workflows/contracts/learner.contract.js';
import { openContext, uniquePrefix, type TestContext } from './helpers/stack.js';

const prefix = uniquePrefix('serve-version');
const home = fs.mkdtempSync(path.join(os.tmpdir(), 'longhaul-serve-version-'));
let context: TestContext;
const saved = {
  home: process.env.LONGHAUL_HOME,
  prefix: process.env.LONGHAUL_TASK_QUEUE_PREFIX,
  pinned: process.env.LONGHAUL_POLICY_VERSION,
};

before(async () => {
  context = await openContext(prefix);
  // restartInference manages the worker through config(): pid files in a home of this file's own, its queues prefixed.
  process.env.LONGHAUL_HOME = home;
  process.env.LONGHAUL_TASK_QUEUE_PREFIX = prefix;
  delete process.env.LONGHAUL_POLICY_VERSION;
});
after(async () => {
  await workerService(config(), 'gpu-infer').stop();
  for (const [name, value] of [
    ['LONGHAUL_HOME', saved.home],
    ['LONGHAUL_TASK_QUEUE_PREFIX', saved.prefix],
    ['LONGHAUL_POLICY_VERSION', saved.pinned],
  ] as const)
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  await context.close();
  fs.rmSync(home, { recursive: true, force: true });
});

/** LONGHAUL_POLICY_VERSION in the environment the running worker process was started with. */
function servedPin(): { pid: number; pin: string | undefined } {
  const pid = runningPid(home, 'worker-gpu-infer');
  assert.ok(pid !== undefined, 'worker-gpu-infer runs');
  const environ = fs.readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
  const entry = environ.find((line) => line.startsWith('LONGHAUL_POLICY_VERSION='));
  return { pid, pin: entry?.slice('LONGHAUL_POLICY_VERSION='.length) };
}

test('eval --version: the latest needs no switch, a running learner refuses one, another version restarts the worker on it and back', async () => {
  const lines: string[] = [];
  const log = (line: string) => lines.push(line);
  assert.equal(await serveForEvaluation(context.client, 7, 7, log), null, 'the latest is what the worker serves');
  assert.equal(runningPid(home, 'worker-gpu-infer'), undefined, 'nothing was restarted');

  // A learner that runs (no worker polls its queue, so it waits): the switch would feed its rollouts the evaluated version.
  const learner = await context.client.workflow.start(learnerWorkflowType, {
    taskQueue: `${prefix}nobody`,
    workflowId: `${prefix}learner`,
    args: [{ runId: `${prefix}run`, datasetKey: 'none.jsonl' }],
  });
  try {
    for (let attempt = 0; attempt < 50 && (await runningTraining(context.client)) === undefined; attempt++) await sleep(200);
    await assert.rejects(
      serveForEvaluation(context.client, 5, 9, log),
      new RegExp(
        `^UsageError: --version 5: the gpu-infer worker serves one policy version, and [^ ]+ \\(${learnerWorkflowType}\\) is training on it now; evaluating v5 would switch its rollouts to v5\\. Wait for it to finish, or evaluate the latest \\(v9: leave out --version\\)`,
      ),
    );
    assert.equal(runningPid(home, 'worker-gpu-infer'), undefined, 'a refusal restarts nothing');
  } finally {
    await learner.terminate('test over');
  }
  // Other test files may train on this stack meanwhile: wait until none does (visibility catches up).
  for (let attempt = 0; attempt < 300 && (await runningTraining(context.client)) !== undefined; attempt++) await sleep(500);

  const restore = await serveForEvaluation(context.client, 5, 9, log);
  assert.ok(restore, 'a switch was made');
  const switched = servedPin();
  assert.equal(switched.pin, '5', 'the worker was started on the evaluated version');
  await restore();
  const restored = servedPin();
  assert.notEqual(restored.pid, switched.pid, 'restarted');
  assert.equal(restored.pin, undefined, 'back on the latest');
  await restore(); // a second call (the Ctrl-C cleanup after the normal one) does nothing
  assert.equal(servedPin().pid, restored.pid);
  assert.match(lines.join('\n'), /serving v5 for this evaluation: restarting worker-gpu-infer on it \(the latest is v9\)/);
  assert.match(lines.join('\n'), /worker-gpu-infer serves the latest version \(v9\) again/);
});
