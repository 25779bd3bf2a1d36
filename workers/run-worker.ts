/** Shared wiring for worker processes: config, connection, payload codec, graceful shutdown. */
import fs from 'node:fs';
import { Worker, type WorkerOptions } from '@temporalio/worker';
import { config, metricsAddress } from '../infra/config.js';
import { createS3BlobStore } from '../infra/blob/blob-store.s3.js';
import { connectWorker, dataConverter } from '../infra/temporal/connection.js';
import { installWorkerRuntime } from '../infra/temporal/runtime.js';
import { workerMetricBuckets, workerMetricsInterceptor } from '../composition/worker-metrics.js';
import { workflowBundlePath } from '../infra/paths.js';
import { taskQueueName, type QueueRole } from '../workflows/contracts/queues.js';
import type { BlobStore } from '../activities/ports/blob-store.port.js';
import { errorTypes, LonghaulError } from '../workflows/contracts/errors.js';

export interface WorkerPlan {
  readonly role: QueueRole;
  /** Whether this worker runs workflows (from the prebuilt bundle) as well as activities. */
  readonly workflows: boolean;
  readonly activities: (blobs: BlobStore) => Promise<{ activities: object; close?: () => Promise<void> }>;
  readonly options?: Partial<WorkerOptions>;
}

export async function runWorker(plan: WorkerPlan): Promise<void> {
  let settings;
  try {
    settings = config();
  } catch (error) {
    if (error instanceof LonghaulError && error.code === errorTypes.invalidInput) {
      console.error(`longhaul ${plan.role} worker: ${error.message}`);
      process.exit(2);
    }
    throw error;
  }
  // Before anything else touches the SDK: the runtime (and its Prometheus endpoint) is installed once per process.
  const metrics = metricsAddress(settings, plan.role);
  installWorkerRuntime(settings.logLevel, metrics, workerMetricBuckets);
  const blobs = createS3BlobStore(settings);
  const { activities, close } = await plan.activities(blobs);
  const connection = await connectWorker(settings);
  const taskQueue = taskQueueName(plan.role, settings.taskQueuePrefix);
  if (plan.workflows && !fs.existsSync(workflowBundlePath)) {
    throw new Error(
      `workflow bundle missing at ${workflowBundlePath}: run ./longhaul (it builds), or node dist/workers/bundle-workflows.js`,
    );
  }
  const worker = await Worker.create({
    connection,
    namespace: settings.temporal.namespace,
    taskQueue,
    activities,
    dataConverter: dataConverter(settings, blobs),
    ...(plan.workflows ? { workflowBundle: { codePath: workflowBundlePath } } : {}),
    ...plan.options,
    interceptors: {
      ...plan.options?.interceptors,
      activity: [...(plan.options?.interceptors?.activity ?? []), workerMetricsInterceptor()],
    },
  });
  console.log(
    `[${plan.role}] worker ${process.pid} polling task queue "${taskQueue}" at ${settings.temporal.address}` +
      (metrics ? ` · metrics http://${metrics}/metrics` : ''),
  );
  try {
    await worker.run();
  } finally {
    await close?.();
    await connection.close();
  }
}

/** Run `main` and turn a failure into one readable line and exit code 1. */
export function start(main: () => Promise<void>, role: string): void {
  main().catch((error: unknown) => {
    console.error(`longhaul ${role} worker failed: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  });
}
