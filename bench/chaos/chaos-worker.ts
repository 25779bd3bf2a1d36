/**
 * A worker process of the chaos suite (`longhaul chaos`), one per task queue, killed with SIGKILL at
 * random by the suite. `agent` and `gpu-infer` serve exactly what the production workers serve
 * (composition/queue-activities.ts; the policy is the scripted one through LONGHAUL_POLICY_BACKEND).
 * `tools` serves the real runTurnTools over the ledger tool below, and `gpu-train` a simulated
 * trainStep that registers each version in the real policy_versions table.
 *
 * Usage: node dist/bench/chaos/chaos-worker.js <agent|gpu-infer|tools|gpu-train>
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Context } from '@temporalio/activity';
import { Worker } from '@temporalio/worker';
import { toolsQueueActivities, workerActivities } from '../../composition/queue-activities.js';
import { openServices } from '../../composition/services.js';
import { checkHyperparameters } from '../../gpu/train/train-step.activities.js';
import { config } from '../../infra/config.js';
import { connectWorker, dataConverter } from '../../infra/temporal/connection.js';
import { workflowBundlePath } from '../../infra/paths.js';
import type { TrainStepInput } from '../../workflows/contracts/learner.contract.js';
import { queueRoles, taskQueueName, type QueueRole } from '../../workflows/contracts/queues.js';
import { createLedgerTool, ledgerEffectDelayMs } from './ledger-tool.js';

async function main(role: QueueRole): Promise<void> {
  const settings = config();
  const services = openServices(settings, { poolSize: 4 });
  const { blobs, pool } = services;
  let activities: object;
  let closeRole: () => Promise<void> = async () => undefined;
  switch (role) {
    case 'agent':
    case 'gpu-infer': {
      const production = await workerActivities(role, settings, blobs);
      activities = production.activities;
      closeRole = production.close;
      break;
    }
    case 'tools':
      activities = toolsQueueActivities({ blobs, tools: createLedgerTool(pool, ledgerEffectDelayMs) });
      break;
    case 'gpu-train':
      activities = {
        checkHyperparameters,
        /** A latency model of a training step: heartbeats, then registers the output version (once, whatever the retries). */
        async trainStep(input: TrainStepInput) {
          for (let tick = 0; tick < 8; tick += 1) {
            Context.current().heartbeat({ tick });
            await sleep(150);
          }
          await services.versions.register({
            version: input.outputVersion,
            name: `chaos-v${input.outputVersion}`,
            blobPrefix: `chaos/versions/${input.outputVersion}/`,
            files: [],
            manifest: { simulated: true, step: input.step, trajectoryIds: input.trajectoryIds },
            parentVersion: input.baseVersion,
          });
          return { version: input.outputVersion, metrics: { simulated: true } };
        },
      };
      break;
  }
  const worker = await Worker.create({
    connection: await connectWorker(settings),
    namespace: settings.temporal.namespace,
    taskQueue: taskQueueName(role, settings.taskQueuePrefix),
    activities,
    dataConverter: dataConverter(settings, blobs),
    ...(role === 'agent' ? { workflowBundle: { codePath: workflowBundlePath } } : {}),
    ...(role === 'gpu-train' ? { maxConcurrentActivityTaskExecutions: 1 } : {}),
  });
  console.log(`[chaos ${role}] worker ${process.pid} polling task queue "${taskQueueName(role, settings.taskQueuePrefix)}"`);
  try {
    await worker.run();
  } finally {
    await closeRole();
    await services.close();
  }
}

const role = process.argv[2] as QueueRole;
if (!queueRoles.includes(role)) {
  console.error(`chaos-worker: the role must be one of ${queueRoles.join(', ')}, got ${JSON.stringify(process.argv[2])}`);
  process.exit(2);
}
main(role).catch((error: unknown) => {
  console.error(`chaos ${role} worker failed: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
});
