/**
 * The agent, gpu-infer and tools workers in one process, over any policy backend and tool runner,
 * serving the same activity sets as the worker processes (queue-activities.ts). Used by tests and
 * benchmarks (scripted policy and tools); production runs one process per queue.
 */
import { Worker } from '@temporalio/worker';
import type pg from 'pg';
import type { BlobStore } from '../activities/ports/blob-store.port.js';
import type { Judge } from '../activities/ports/judge.port.js';
import type { PolicyBackend } from '../activities/ports/policy.port.js';
import type { WeightSync } from '../activities/ports/weight-sync.port.js';
import { configuredChatModels, configuredJudge } from '../infra/inference/openai.backend.js';
import { noWeightSync } from '../infra/inference/weight-sync.js';
import type { Config } from '../infra/config.js';
import { createPgTrajectoryBuffer } from '../infra/postgres/buffer.pg.js';
import { createPgEvaluationStore, searchCorpusVersion } from '../infra/postgres/evaluation-store.pg.js';
import { createPgFrozenObservationStore } from '../infra/postgres/frozen-observation-store.pg.js';
import { createPgSkeletonStepStore } from '../infra/postgres/skeleton-step-store.pg.js';
import { createPgTrajectoryStore } from '../infra/postgres/trajectory-store.pg.js';
import { connectWorker, dataConverter } from '../infra/temporal/connection.js';
import { checkHyperparameters } from '../gpu/train/train-step.activities.js';
import { createPgPolicyVersionStore } from '../infra/postgres/policy-version-store.pg.js';
import {
  agentQueueActivities,
  inferenceQueueActivities,
  scheduleStores,
  synthesisDependencies,
  toolsQueueActivities,
} from './queue-activities.js';
import type { ContaminationLookup } from '../activities/synthesis/synthesis.activities.js';
import { taskQueueName, type QueueRole } from '../workflows/contracts/queues.js';
import type { LocalToolRunner, ToolActivities } from '../workflows/contracts/tools.contract.js';
import { workflowBundlePath } from '../infra/paths.js';

export interface InProcessAgentOptions {
  readonly config: Config;
  readonly blobs: BlobStore;
  readonly pool: pg.Pool;
  readonly backend: PolicyBackend;
  readonly tools: Pick<ToolActivities, 'runTools'>;
  /**
   * The turn tools the agent worker runs as local activities (production: search and document reads
   * on the stack's Postgres). @default none: every turn goes to the tools queue
   */
  readonly localTools?: LocalToolRunner;
  /** Queue prefix; the workflows' sibling queues share it. */
  readonly prefix: string;
  /** Which roles to run here (default all three). */
  readonly roles?: readonly QueueRole[];
  readonly maxConcurrentActivities?: number;
  /** More activities per queue (e.g. learner and buffer activities, a simulated trainStep). */
  readonly extraActivities?: Partial<Record<QueueRole, object>>;
  /** What `syncWeights` (gpu-infer) runs after each learner step. @default none: the caller drives `backend`'s version */
  readonly weightSync?: WeightSync;
  /** The LLM judge of rewardMetric "judge". @default the configured one (LONGHAUL_JUDGE_BASE_URL or LONGHAUL_OPENAI_BASE_URL), if any */
  readonly judge?: Judge;
  /** The evaluation sets the synthesis contamination check uses. @default none (the check rejects, naming the fix) */
  readonly contamination?: () => Promise<ContaminationLookup>;
  /** The LLM synthesizer's chat endpoint, key and time limit. @default the configured one (LONGHAUL_SYNTH_LLM_*) */
  readonly synthesisLlm?: Config['synthesisLlm'];
}

export interface InProcessAgent {
  run<T>(body: () => Promise<T>): Promise<T>;
}

export async function createInProcessAgent(options: InProcessAgentOptions): Promise<InProcessAgent> {
  const { config, blobs, pool, backend, tools, prefix } = options;
  const roles = options.roles ?? ['agent', 'gpu-infer', 'tools'];
  const connection = await connectWorker(config);
  const activitiesOf: Partial<Record<QueueRole, object>> = {
    agent: agentQueueActivities({
      blobs,
      trajectories: createPgTrajectoryStore(pool),
      skeletonSteps: createPgSkeletonStepStore(pool),
      buffer: createPgTrajectoryBuffer(pool),
      judge: options.judge ?? configuredJudge(config.judge),
      evaluation: { evaluations: createPgEvaluationStore(pool), corpusVersion: () => searchCorpusVersion(pool) },
      synthesis: synthesisDependencies(
        pool,
        blobs,
        options.contamination,
        configuredChatModels(options.synthesisLlm ?? config.synthesisLlm),
      ),
      schedules: scheduleStores(pool, createPgPolicyVersionStore(pool)),
      ...(options.localTools ? { localTools: { tools: options.localTools, observations: createPgFrozenObservationStore(pool) } } : {}),
    }),
    'gpu-infer': inferenceQueueActivities({ blobs, backend, weightSync: options.weightSync ?? noWeightSync() }),
    tools: toolsQueueActivities({ blobs, tools, observations: createPgFrozenObservationStore(pool) }),
    // The learner and the warm start check hyperparameters here at start; a simulated trainStep comes in extraActivities.
    'gpu-train': { checkHyperparameters },
  };
  const workers = await Promise.all(
    roles.map((role) =>
      Worker.create({
        connection,
        namespace: config.temporal.namespace,
        taskQueue: taskQueueName(role, prefix),
        activities: { ...(activitiesOf[role] ?? {}), ...(options.extraActivities?.[role] ?? {}) },
        dataConverter: dataConverter(config, blobs),
        maxConcurrentActivityTaskExecutions: options.maxConcurrentActivities ?? 100,
        ...(role === 'agent' ? { workflowBundle: { codePath: workflowBundlePath } } : {}),
      }),
    ),
  );
  return {
    async run(body) {
      const running = workers.map((worker) => worker.run());
      try {
        return await body();
      } finally {
        for (const worker of workers) worker.shutdown();
        await Promise.allSettled(running);
      }
    },
  };
}
