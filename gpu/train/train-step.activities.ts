/**
 * `trainStep` (decoupled PPO) and `sftStep` (supervised warm start) on the gpu-train queue. Each:
 * 1. validates its input and the whole batch (records, lengths, rewards, versions, staleness,
 *    groups, registered base version) and refuses with a non-retryable LonghaulInvalidInput naming
 *    the field, before any model is touched;
 * 2. returns the registered version unchanged when this run and step already published it
 *    (retries never train twice); refuses when another run or step owns that version number;
 * 3. checks that the disk has room (a retryable LonghaulUnavailable naming what is free and needed,
 *    before anything is written), stages the base version into `<home>/models/train/v<base>`
 *    (downloaded, sha256-checked), writes the manifest, runs the engine as a child process (progress
 *    → heartbeats; cancellation kills it); the engine's metrics are kept beside the manifest;
 * 4. uploads the new version to `policies/<runId>/v<version>/` and registers it in policy_versions;
 *    a retry after a failed upload publishes the folder the engine already wrote for this run and
 *    step (its engine_state.json says so) instead of training again; any other folder left under
 *    the output version is removed first;
 * 5. keeps the trainer's cache to the `cacheKeep` most recently used versions.
 */
import fs from 'node:fs';
import path from 'node:path';
import { ApplicationFailure, CancelledFailure, Context } from '@temporalio/activity';
import type { BlobStore } from '../../activities/ports/blob-store.port.js';
import type { PolicyVersionRow, PolicyVersionStore } from '../../activities/ports/policy-version-store.port.js';
import type { TrajectoryStore } from '../../activities/ports/trajectory-store.port.js';
import { toApplicationFailure } from '../../workflows/contracts/application-failure.js';
import { errorTypes, LonghaulError } from '../../workflows/contracts/errors.js';
import { batchRlSamples, batchSftSamples, readBatch } from './batch.js';
import { runEngine, type EngineEvent } from './engine-process.js';
import { batchManifestSchema, type BatchManifest } from './manifest.js';
import { parseCheckHyperparametersInput, parseSftStepInput, parseTrainStepInput } from './train-step.schema.js';
import { publishTrainedVersion, readEngineState, stageVersion, trainingOf, versionTaken } from './version-files.js';
import { diskMarginBytes, ensureFreeSpace, pruneVersionCache, versionFolderName } from '../infer/version-cache.js';
import { versionBytes } from '../infer/policy-store.js';

export interface TrainActivityDependencies {
  readonly blobs: BlobStore;
  readonly versions: PolicyVersionStore;
  readonly trajectories: TrajectoryStore;
  /** The engine's Python (infra/services/binaries.ts enginePython). */
  readonly python: string;
  /** LONGHAUL_HOME: versions are staged under <home>/models/train, manifests under <home>/train. */
  readonly home: string;
  /** Export model.onnx into each version for the local policy. @default 'auto' */
  readonly onnx?: 'auto' | 'skip';
  /** torch CPU threads; 0 = torch's default. @default 0 */
  readonly threads?: number;
  /** Heartbeat period while staging, training and uploading. @default 5000 */
  readonly heartbeatMs?: number;
  /** Version folders kept in <home>/models/train after a step, most recently used first (≥ 2: a step's base and output). @default 3 */
  readonly cacheKeep?: number;
  /** Called just before the engine process starts (tests count engine starts with it). */
  readonly onEngineStart?: (manifestPath: string) => void;
}

/** What `trainStep` and `sftStep` return. */
export interface TrainStepOutput {
  readonly version: number;
  readonly metrics: Record<string, unknown>;
  /** Blob-store folder of the version's files, ending with "/". */
  readonly modelKey: string;
  /** False when a retry found the version already registered by this run and step. */
  readonly trained: boolean;
}

interface StepPlan {
  readonly kind: 'rl' | 'sft';
  readonly runId: string;
  readonly step: number;
  readonly baseVersion: number;
  readonly outputVersion: number;
  /** The registered base version. */
  readonly baseRow: PolicyVersionRow;
  /** The manifest without its folders (they are known after staging). */
  readonly manifest: (modelDir: string, outputDir: string) => BatchManifest;
}

/** What differs between an RL and an SFT manifest: its kind, hyperparameters and samples. */
type ManifestBody = {
  [K in BatchManifest['kind']]: Pick<Extract<BatchManifest, { kind: K }>, 'kind' | 'hyperparameters' | 'samples'>;
}[BatchManifest['kind']];

/** A validated step's plan: its identity, its registered base, and its manifest once the folders are known. */
function stepPlan(
  input: { runId: string; step: number; baseVersion: number; outputVersion: number },
  baseRow: PolicyVersionRow,
  body: ManifestBody,
): StepPlan {
  const { runId, step, baseVersion, outputVersion } = input;
  return {
    kind: body.kind,
    runId,
    step,
    baseVersion,
    outputVersion,
    baseRow,
    manifest: (modelDir, outputDir) => ({
      schemaVersion: 1,
      ...body,
      runId,
      step,
      basePolicy: { version: baseVersion, modelDir },
      outputDir,
      outputPolicyVersion: outputVersion,
    }),
  };
}

/**
 * Refuse at a run's start what trainStep or sftStep would refuse only after a batch of rollouts: the
 * same schema, no model or store touched (so test workers with a fake trainStep register it too).
 */
export async function checkHyperparameters(raw: unknown): Promise<void> {
  try {
    parseCheckHyperparametersInput(raw);
  } catch (error) {
    throw toApplicationFailure(error, 'checkHyperparameters');
  }
}

/** The batch's staleness (base version − its oldest token's version) as a gauge on the worker's metrics endpoint (composition/worker-metrics.ts). */
export function reportStaleness(
  baseVersion: number,
  records: readonly { turnRecords: readonly { tokenVersions: readonly number[] }[] }[],
): void {
  let oldest = Infinity;
  for (const record of records)
    for (const turn of record.turnRecords) for (const version of turn.tokenVersions) if (version < oldest) oldest = version;
  if (!Number.isFinite(oldest)) return;
  const context = Context.current();
  context.metricMeter
    .createGauge('longhaul_batch_staleness', 'int', 'versions', 'Base version minus the oldest token version of the last train batch')
    .set(Math.max(0, baseVersion - oldest), { task_queue: context.info.taskQueue });
}

export function createTrainActivities(deps: TrainActivityDependencies) {
  const cacheRoot = path.join(deps.home, 'models', 'train');

  async function registeredBase(version: number): Promise<PolicyVersionRow> {
    const row = await deps.versions.get(version);
    if (!row) throw new LonghaulError(errorTypes.invalidInput, `baseVersion: unknown policy version ${version} (not registered)`);
    return row;
  }

  async function alreadyPublished(plan: StepPlan): Promise<TrainStepOutput | undefined> {
    const row = await deps.versions.get(plan.outputVersion);
    if (!row) return undefined;
    const owner = trainingOf(row);
    if (owner?.runId !== plan.runId || owner.step !== plan.step || owner.kind !== plan.kind) throw versionTaken(plan.outputVersion, row);
    return { version: row.version, metrics: owner.metrics, modelKey: row.blobPrefix, trained: false };
  }

  /** Steps running in this process: their folders are never pruned. */
  const inUse = new Set<string>();
  const resultFile = (workDir: string) => path.join(workDir, 'result.json');

  /**
   * The metrics of the engine run that already wrote `outputDir` for this run and step (a retry
   * after a failed upload), or undefined when there is none to reuse.
   */
  function engineOutputOf(plan: StepPlan, outputDir: string, workDir: string): Record<string, unknown> | undefined {
    try {
      const state = readEngineState(outputDir) ?? {};
      const result = JSON.parse(fs.readFileSync(resultFile(workDir), 'utf8')) as { outputVersion?: unknown; metrics?: unknown };
      const ours =
        state.policyVersion === plan.outputVersion &&
        state.runId === plan.runId &&
        state.step === plan.step &&
        state.kind === plan.kind &&
        result.outputVersion === plan.outputVersion;
      return ours && typeof result.metrics === 'object' && result.metrics !== null
        ? (result.metrics as Record<string, unknown>)
        : undefined;
    } catch {
      return undefined;
    }
  }

  function clearLeftovers(outputDir: string): void {
    fs.rmSync(outputDir, { recursive: true, force: true });
    const prefix = `.${path.basename(outputDir)}.tmp-`;
    for (const entry of fs.existsSync(cacheRoot) ? fs.readdirSync(cacheRoot) : []) {
      if (entry.startsWith(prefix)) fs.rmSync(path.join(cacheRoot, entry), { recursive: true, force: true });
    }
  }

  async function runEngineOnce(plan: StepPlan, outputDir: string, workDir: string, beat: (details: unknown) => void, signal: AbortSignal) {
    const baseBytes = versionBytes(plan.baseRow);
    // The staged base (unless cached), the output (its weights, optimizer state and ONNX export) and headroom.
    ensureFreeSpace(
      cacheRoot,
      3 * baseBytes + diskMarginBytes,
      `${plan.kind} step ${plan.step} of run ${plan.runId} (policy version ${plan.outputVersion})`,
    );
    const stageStarted = performance.now();
    const modelDir = await stageVersion(deps.blobs, plan.baseRow, cacheRoot);
    const stageMs = performance.now() - stageStarted;
    inUse.add(modelDir);
    const manifest = batchManifestSchema.parse(plan.manifest(modelDir, outputDir));
    clearLeftovers(outputDir);
    fs.rmSync(resultFile(workDir), { force: true });
    const manifestPath = path.join(workDir, 'manifest.json');
    fs.writeFileSync(manifestPath, JSON.stringify(manifest));
    deps.onEngineStart?.(manifestPath);
    const engineStarted = performance.now();
    const engineMetrics = await runEngine({
      python: deps.python,
      kind: plan.kind,
      manifestPath,
      onnx: deps.onnx ?? 'auto',
      threads: deps.threads ?? 0,
      signal,
      onEvent: (event: EngineEvent) => {
        if (event.event === 'progress' || event.event === 'start') beat(event);
      },
    });
    // Where the step's wall time went besides the engine's own phases (proximal, update, save): staging
    // the base (a download unless cached) and the engine process whole (start, model load, export).
    const metrics = {
      ...engineMetrics,
      stageSeconds: Math.round(stageMs) / 1000,
      engineSeconds: Math.round(performance.now() - engineStarted) / 1000,
    };
    fs.writeFileSync(resultFile(workDir), `${JSON.stringify({ outputVersion: plan.outputVersion, metrics })}\n`);
    return metrics;
  }

  async function train(plan: StepPlan, beat: (details: unknown) => void, signal: AbortSignal): Promise<TrainStepOutput> {
    const outputDir = path.join(cacheRoot, versionFolderName(plan.outputVersion));
    const workDir = path.join(deps.home, 'train', plan.runId, `${plan.kind}-step-${plan.step}`);
    fs.mkdirSync(workDir, { recursive: true });
    inUse.add(outputDir);
    try {
      const reused = engineOutputOf(plan, outputDir, workDir);
      if (reused) beat({ event: 'reusing', outputDir });
      const metrics = reused ?? (await runEngineOnce(plan, outputDir, workDir, beat, signal));
      beat({ event: 'uploading' });
      const row = await publishTrainedVersion({
        blobs: deps.blobs,
        versions: deps.versions,
        dir: outputDir,
        version: plan.outputVersion,
        onFile: (name) => beat({ event: 'uploaded', file: name }),
        training: { runId: plan.runId, step: plan.step, kind: plan.kind, baseVersion: plan.baseVersion, metrics },
      });
      return { version: row.version, metrics, modelKey: row.blobPrefix, trained: true };
    } finally {
      inUse.delete(outputDir);
      inUse.delete(path.join(cacheRoot, versionFolderName(plan.baseVersion)));
      // The output is the next step's base: it stays, with the most recently used others.
      pruneVersionCache(cacheRoot, { keep: Math.max(2, deps.cacheKeep ?? 3), protect: [outputDir, ...inUse] });
    }
  }

  /** Validate (refusals first), then train unless this run and step already published the version. */
  async function runStep(activity: string, prepare: () => Promise<StepPlan>): Promise<TrainStepOutput> {
    const context = Context.current();
    let last: unknown = { event: 'validating' };
    const beat = (details: unknown) => {
      last = details;
      context.heartbeat(details);
    };
    const timer = setInterval(() => context.heartbeat(last), deps.heartbeatMs ?? 5000);
    try {
      const plan = await prepare();
      return (await alreadyPublished(plan)) ?? (await train(plan, beat, context.cancellationSignal));
    } catch (error) {
      if (context.cancellationSignal.aborted && !(error instanceof ApplicationFailure))
        throw new CancelledFailure(`${activity} cancelled; the engine was stopped`);
      throw toApplicationFailure(error, activity);
    } finally {
      clearInterval(timer);
    }
  }

  return {
    /** One decoupled-PPO step on a claimed batch: a new policy version, registered once. */
    async trainStep(raw: unknown): Promise<TrainStepOutput> {
      return runStep('trainStep', async () => {
        const input = parseTrainStepInput(raw);
        const ppo = input.hyperparameters.ppo;
        const baseRow = await registeredBase(input.baseVersion);
        const records = await readBatch(deps, input.runId, input.trajectoryIds);
        reportStaleness(input.baseVersion, records);
        const samples = batchRlSamples(records, { baseVersion: input.baseVersion, eta: ppo.maxStaleness }, ppo.groupNormalise);
        return stepPlan(input, baseRow, { kind: 'rl', hyperparameters: input.hyperparameters, samples });
      });
    },

    checkHyperparameters,

    /** Supervised warm start on validated trajectories (cross-entropy on their generated tokens), through the same path. */
    async sftStep(raw: unknown): Promise<TrainStepOutput> {
      return runStep('sftStep', async () => {
        const input = parseSftStepInput(raw);
        const baseRow = await registeredBase(input.baseVersion);
        const samples = batchSftSamples(await readBatch(deps, input.runId, input.trajectoryIds));
        return stepPlan(input, baseRow, { kind: 'sft', hyperparameters: input.hyperparameters, samples });
      });
    },
  };
}

export type TrainActivities = ReturnType<typeof createTrainActivities>;
