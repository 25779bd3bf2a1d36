/**
 * The activities each task queue serves, built in one place from adapters: the worker processes
 * (workers/*.worker.ts, via `workerActivities`) and the in-process workers of tests and benchmarks
 * (in-process-agent.ts) register the same sets, so a queue never serves a different API in process.
 */
import {
  createGenerateTurnActivities,
  createLocalTurnToolActivities,
  createTurnToolActivities,
} from '../activities/agent/agent-turn.activities.js';
import { createFinishActivities } from '../activities/agent/finish.activities.js';
import { createBufferActivities } from '../activities/buffer.activities.js';
import { createHealthActivities } from '../activities/health.activities.js';
import { createLearnerActivities } from '../activities/learner.activities.js';
import type { BlobStore } from '../activities/ports/blob-store.port.js';
import type { TrajectoryBuffer } from '../activities/ports/buffer.port.js';
import { createEvaluationActivities } from '../activities/evaluation/evaluation.activities.js';
import { createScheduleActivities } from '../activities/schedules/schedule.activities.js';
import type { BenchmarkResultStore, BenchmarkRunner } from '../activities/ports/benchmark-result-store.port.js';
import type { PolicyVersionStore } from '../activities/ports/policy-version-store.port.js';
import type { EvaluationResultStore } from '../activities/ports/evaluation-store.port.js';
import type { FrozenObservationStore } from '../activities/ports/frozen-observation-store.port.js';
import type { ChatModels } from '../activities/ports/chat-model.port.js';
import type { Judge } from '../activities/ports/judge.port.js';
import type { PolicyBackend } from '../activities/ports/policy.port.js';
import type { SkeletonStepStore } from '../activities/ports/skeleton-step-store.port.js';
import type { TrajectoryStore } from '../activities/ports/trajectory-store.port.js';
import type { WeightSync } from '../activities/ports/weight-sync.port.js';
import { createPolicyActivities } from '../activities/policy.activities.js';
import { createSkeletonActivities } from '../activities/skeleton.activities.js';
import { createToolActivities } from '../activities/tools/run-tools.activities.js';
import { createWeightSyncActivities } from '../activities/weight-sync.activities.js';
import { createSynthesisActivities, type SynthesisDependencies } from '../activities/synthesis/synthesis.activities.js';
import { createPgKnowledgeBase } from '../infra/postgres/knowledge-base.pg.js';
import { createPgSynthesisStore } from '../infra/postgres/synthesis-store.pg.js';
import { loadContaminationIndex } from './question-sets.js';
import type pg from 'pg';
import { createEngineActivities } from '../gpu/train/engine.activities.js';
import { createTrainActivities } from '../gpu/train/train-step.activities.js';
import { materializePolicyVersion } from '../gpu/infer/policy-store.js';
import { threadFileFetcher } from './thread-file-fetcher.js';
import type { Config } from '../infra/config.js';
import { configuredChatModels, configuredJudge } from '../infra/inference/openai.backend.js';
import { createWeightSync } from '../infra/inference/weight-sync.js';
import { createPgEvaluationStore, searchCorpusVersion } from '../infra/postgres/evaluation-store.pg.js';
import { createPgBenchmarkResultStore } from '../infra/postgres/benchmark-result-store.pg.js';
import { createPgFrozenObservationStore } from '../infra/postgres/frozen-observation-store.pg.js';
import { enginePython } from '../infra/services/binaries.js';
import { openSearchDatabase } from '../infra/search/open.js';
import { createFtsSearchEngine } from '../infra/search/fts-search.pg.js';
import { createPgToolCallStore } from '../infra/search/tool-call-store.pg.js';
import type { QueueRole } from '../workflows/contracts/queues.js';
import type { LocalToolRunner, ToolActivities } from '../workflows/contracts/tools.contract.js';
import { cliBenchmarkRunner, repositoryCommit } from './benchmark-runner.js';
import { createConfiguredBackend, lazyBackend, versionCacheDir } from './policy-backend.js';
import { openServices } from './services.js';
import { buildToolRegistry } from './tool-registry.js';

/** The synthesis activities' dependencies over a Postgres pool (knowledge base, synthesis tables) and the blob store. */
export function synthesisDependencies(
  pool: pg.Pool,
  blobs: BlobStore,
  contamination?: SynthesisDependencies['contamination'],
  models?: ChatModels,
): SynthesisDependencies {
  return {
    knowledgeBase: createPgKnowledgeBase(pool),
    store: createPgSynthesisStore(pool),
    blobs,
    contamination,
    search: createFtsSearchEngine(pool),
    models,
  };
}

/** agent: workflows' storage activities (skeleton steps, the trajectory record, the learner's dataset and buffer, synthesis). */
export function agentQueueActivities(deps: {
  blobs: BlobStore;
  trajectories: TrajectoryStore;
  skeletonSteps: SkeletonStepStore;
  buffer: TrajectoryBuffer;
  judge?: Judge | undefined;
  /** The evaluation workflow's stores (absent: its activities are not served). */
  evaluation?: { evaluations: EvaluationResultStore; corpusVersion: () => Promise<string> };
  synthesis?: SynthesisDependencies | undefined;
  /** The scheduled workflows' stores (absent: their activities are not served). */
  schedules?: {
    versions: Pick<PolicyVersionStore, 'latest'>;
    benchmarks: BenchmarkResultStore;
    runBenchmark: BenchmarkRunner;
    commit: () => string;
  };
  /** The turn tools the trajectory workflow runs here as local activities (absent: every turn goes to the tools queue). */
  localTools?: { tools: LocalToolRunner; observations?: FrozenObservationStore | undefined };
}) {
  return {
    ...(deps.evaluation ? createEvaluationActivities({ blobs: deps.blobs, judge: deps.judge, ...deps.evaluation }) : {}),
    ...(deps.synthesis ? createSynthesisActivities(deps.synthesis) : {}),
    ...(deps.schedules ? createScheduleActivities(deps.schedules) : {}),
    ...createHealthActivities('agent'),
    ...createSkeletonActivities({ blobs: deps.blobs, steps: deps.skeletonSteps }),
    ...createFinishActivities({ blobs: deps.blobs, trajectories: deps.trajectories, ...(deps.judge ? { judge: deps.judge } : {}) }),
    ...createLearnerActivities({ blobs: deps.blobs }),
    ...createBufferActivities({ buffer: deps.buffer }),
    ...createLocalTurnToolActivities({ blobs: deps.blobs, tools: deps.localTools?.tools, observations: deps.localTools?.observations }),
  };
}

/**
 * The agent worker's local tool runner: the tools worker's registry (same limits per process), cache
 * and call records, over `pool`; only calls whose tool declares them local run through it.
 */
export function localToolRunner(settings: Config, pool: pg.Pool): { runner: LocalToolRunner; close: () => Promise<void> } {
  const built = buildToolRegistry(settings, pool);
  const tools = createToolActivities({
    registry: built.registry,
    store: createPgToolCallStore(pool),
    cacheTtlMs: settings.tools.cacheTtlSeconds * 1000,
  });
  return { runner: { runTools: tools.runTools, runsLocally: (call) => built.registry.runsLocally(call) }, close: built.close };
}

/** gpu-infer: generation (a turn, or a raw request), the backend's capabilities, and weight sync. */
export function inferenceQueueActivities(deps: { blobs: BlobStore; backend: PolicyBackend; weightSync: WeightSync }) {
  return {
    ...createHealthActivities('gpu-infer'),
    ...createPolicyActivities({ backend: deps.backend, blobs: deps.blobs }),
    ...createGenerateTurnActivities({ backend: deps.backend, blobs: deps.blobs }),
    ...createWeightSyncActivities({ weightSync: deps.weightSync }),
  };
}

/** tools: a turn's tool calls, over a tool runner (the registry's, or a scripted one), and the frozen observations of evaluations. */
export function toolsQueueActivities(deps: {
  blobs: BlobStore;
  tools: Pick<ToolActivities, 'runTools'> & Partial<ToolActivities>;
  observations?: FrozenObservationStore;
}) {
  return {
    ...createHealthActivities('tools'),
    ...deps.tools,
    ...createTurnToolActivities({ blobs: deps.blobs, tools: deps.tools, observations: deps.observations }),
  };
}

/** The stores of the scheduled workflows' activities, over Postgres; benchmarks run as `longhaul bench` child processes. */
export function scheduleStores(pool: pg.Pool, versions: Pick<PolicyVersionStore, 'latest'>) {
  return { versions, benchmarks: createPgBenchmarkResultStore(pool), runBenchmark: cliBenchmarkRunner, commit: repositoryCommit };
}

export interface QueueActivities {
  readonly activities: object;
  close(): Promise<void>;
}

/** What the worker process of `role` serves, from the configuration. */
export async function workerActivities(role: QueueRole, settings: Config, blobs: BlobStore): Promise<QueueActivities> {
  switch (role) {
    case 'agent': {
      const services = openServices(settings, { poolSize: 10 });
      const judge = configuredJudge(settings.judge);
      const { trajectories, skeletonSteps, buffer } = services;
      const evaluation = { evaluations: createPgEvaluationStore(services.pool), corpusVersion: () => searchCorpusVersion(services.pool) };
      // The evaluation sets under LONGHAUL_DATA_ROOT, indexed on the first contamination check.
      const synthesis = synthesisDependencies(
        services.pool,
        blobs,
        () => loadContaminationIndex(settings.dataRoot),
        configuredChatModels(settings.synthesisLlm),
      );
      const schedules = scheduleStores(services.pool, services.versions);
      const local = localToolRunner(settings, services.pool);
      const localTools = { tools: local.runner, observations: createPgFrozenObservationStore(services.pool) };
      return {
        activities: agentQueueActivities({
          blobs,
          trajectories,
          skeletonSteps,
          buffer,
          judge,
          evaluation,
          synthesis,
          schedules,
          localTools,
        }),
        close: async () => {
          await local.close();
          await services.close();
        },
      };
    }
    case 'gpu-infer': {
      const services = openServices(settings, { poolSize: 2 });
      const { versions } = services;
      const backend = lazyBackend(
        (version, progress) => createConfiguredBackend(settings, { blobs, versions }, version, progress),
        settings.policy.backend,
      );
      const weightSync = createWeightSync(settings.weightSync, {
        local: backend,
        backend: settings.policy.backend,
        apiKey: settings.policy.openai.apiKey,
        folderOf: async (version) =>
          (
            await materializePolicyVersion({
              blobs,
              versions,
              cacheDir: versionCacheDir(settings),
              version,
              keep: settings.versionCacheKeep,
              fetchFiles: threadFileFetcher(settings),
            })
          ).dir,
      });
      return {
        activities: inferenceQueueActivities({ blobs, backend, weightSync }),
        close: async () => {
          await backend.close();
          await services.close();
        },
      };
    }
    case 'tools': {
      const pool = await openSearchDatabase(settings, 8);
      const registry = buildToolRegistry(settings, pool);
      const tools = createToolActivities({
        registry: registry.registry,
        store: createPgToolCallStore(pool),
        cacheTtlMs: settings.tools.cacheTtlSeconds * 1000,
      });
      return {
        activities: toolsQueueActivities({ blobs, tools, observations: createPgFrozenObservationStore(pool) }),
        close: async () => {
          await registry.close();
          await pool.end();
        },
      };
    }
    case 'gpu-train': {
      const services = openServices(settings, { poolSize: 4 });
      const python = enginePython(settings.toolsDir);
      return {
        activities: {
          ...createHealthActivities('gpu-train'),
          ...createEngineActivities({ python }),
          ...createTrainActivities({
            blobs,
            versions: services.versions,
            trajectories: services.trajectories,
            python,
            home: settings.home,
            cacheKeep: settings.versionCacheKeep,
          }),
        },
        close: () => services.close(),
      };
    }
  }
}
