/**
 * The weight-sync adapter LONGHAUL_WEIGHT_SYNC names: `onnx` reloads the gpu-infer worker's own
 * backend in place; `sglang` and `vllm` update a server (weight-sync.http.ts) and then switch the
 * worker's backend to the version, so new tokens carry its tag; `none` does nothing. Failures of
 * the local side are sorted here into refused (not registered, unusable files: never retried) and
 * unavailable (a store or server down: retried).
 */
import type { Config } from '../config.js';
import type { PolicyBackendName } from '../../activities/ports/policy.port.js';
import { type ReloadablePolicy, type WeightSync, type WeightSyncKind } from '../../activities/ports/weight-sync.port.js';
import { createSglangWeightSync, createVllmWeightSync } from './weight-sync.http.js';
import { errorTypes, LonghaulError } from '../../workflows/contracts/errors.js';

export { loraAdapterName } from './weight-sync.http.js';

export interface WeightSyncDependencies {
  /** The worker's own backend: reloaded by `onnx`, switched after a server update by `sglang`/`vllm`. */
  readonly local?: ReloadablePolicy;
  /** Its LONGHAUL_POLICY_BACKEND: `onnx` sync cannot update the weights behind an `openai` server. */
  readonly backend?: PolicyBackendName;
  /** Local folder of a registered version (downloaded into the worker's cache). */
  readonly folderOf: (version: number) => Promise<string>;
  readonly apiKey?: string | null;
}

/** Sort a local failure (materialize or open a version) into refused (what retrying cannot fix) or unavailable, naming the version. */
export function classifySyncError(error: unknown, version: number): LonghaulError {
  const message = error instanceof Error ? error.message : String(error);
  if (LonghaulError.is(error) && (!error.retryable || error.code === errorTypes.notFound)) {
    const fix = /is not registered/.test(message)
      ? 'sync only registered versions (trainStep and `longhaul model prepare` register them)'
      : 'republish the version with complete files';
    return new LonghaulError(
      errorTypes.invalidInput,
      `policy version ${version} cannot be served: ${message}; ${fix}. The worker keeps serving the version it had`,
    );
  }
  return new LonghaulError(errorTypes.unavailable, `policy version ${version} could not be loaded: ${message}`);
}

async function guarded<T>(version: number, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    throw classifySyncError(error, version);
  }
}

function refusing(kind: WeightSyncKind, reason: string): WeightSync {
  return {
    kind,
    async sync(version) {
      throw new LonghaulError(errorTypes.invalidInput, `policy version ${version} not synced: ${reason}`);
    },
  };
}

export function noWeightSync(): WeightSync {
  return {
    kind: 'none',
    async sync() {
      /* the serving side is managed elsewhere */
    },
  };
}

/** The in-place reload of the worker's own backend. */
export function createOnnxWeightSync(local: ReloadablePolicy): WeightSync {
  return {
    kind: 'onnx',
    async sync(version, progress) {
      progress('loading');
      await guarded(version, () => local.reload(version, progress));
    },
  };
}

/** The adapter `settings.kind` names; a missing URL or backend is a LonghaulInvalidInput error naming the variable. */
export function createWeightSync(settings: Config['weightSync'], deps: WeightSyncDependencies): WeightSync {
  const kind: WeightSyncKind = settings.kind;
  if (kind === 'none') return noWeightSync();
  if (kind === 'onnx') {
    if (!deps.local)
      throw new LonghaulError(
        errorTypes.invalidInput,
        'LONGHAUL_WEIGHT_SYNC=onnx needs a worker whose backend can reload (the gpu-infer worker); set LONGHAUL_WEIGHT_SYNC=none here (see docs/CONFIG.md).',
      );
    // Refused per sync rather than at startup: the worker still serves trajectories that need no sync.
    if (deps.backend === 'openai')
      return refusing(
        'onnx',
        'LONGHAUL_WEIGHT_SYNC=onnx reloads a local ONNX model, but this worker serves LONGHAUL_POLICY_BACKEND=openai, whose weights it cannot change; set LONGHAUL_WEIGHT_SYNC=sglang or vllm (the server is updated) or none (you update the server yourself)',
      );
    return createOnnxWeightSync(deps.local);
  }
  if (settings.url === null) {
    throw new LonghaulError(
      errorTypes.invalidInput,
      `LONGHAUL_WEIGHT_SYNC_URL is required when LONGHAUL_WEIGHT_SYNC=${kind}: the server's base URL, e.g. http://127.0.0.1:30000 (or set LONGHAUL_OPENAI_BASE_URL; see docs/CONFIG.md).`,
    );
  }
  const local = deps.local;
  const options = {
    url: settings.url,
    apiKey: deps.apiKey ?? null,
    folderOf: (version: number) => guarded(version, () => deps.folderOf(version)),
    ...(local
      ? {
          afterUpdate: (version: number) =>
            guarded(version, async () => {
              await local.reload(version);
            }),
        }
      : {}),
  };
  return kind === 'sglang' ? createSglangWeightSync(options) : createVllmWeightSync(options);
}
