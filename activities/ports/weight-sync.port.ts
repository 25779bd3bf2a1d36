/**
 * Port: how the serving side picks up a new policy version after the learner publishes it
 * (DESIGN §3.6). Adapters live in infra/inference/weight-sync.ts; the `syncWeights` activity runs
 * the configured one. Errors say whether retrying can help: a refused version never will, an
 * unreachable server may.
 */
export const weightSyncKinds = ['onnx', 'sglang', 'vllm', 'none'] as const;
export type WeightSyncKind = (typeof weightSyncKinds)[number];

export interface WeightSync {
  readonly kind: WeightSyncKind;
  /** Make `version` the one served; `progress` reports phases (heartbeat details). Safe to repeat. */
  sync(version: number, progress: (phase: string) => void, signal?: AbortSignal): Promise<void>;
}

/**
 * Where an in-place reload spends its time: queued behind an earlier reload, the version's files
 * (downloaded and checked unless cached) and opening the model (the ONNX session).
 */
export type SyncPhase = 'waiting' | 'files' | 'open';

/** A policy that can switch to another version in place (the gpu-infer worker's lazy backend). */
export interface ReloadablePolicy {
  /** Open `version` and serve it from now on; running generations finish on the old one. */
  reload(version: number, progress?: (phase: SyncPhase) => void): Promise<{ previous: number | null; reloaded: boolean }>;
}
