/**
 * The policy backend a process serves, chosen by config (LONGHAUL_POLICY_BACKEND): the local ONNX
 * model (a prepared folder, or a registered policy version fetched into <home>/models/versions)
 * or an OpenAI-compatible server. `lazyBackend` opens it on first use and can `reload` another
 * version in place (weight sync): generations already running finish on the old one.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Config } from '../infra/config.js';
import { createOpenAIBackend } from '../infra/inference/openai.backend.js';
import { loraAdapterName } from '../infra/inference/weight-sync.js';
import type { BlobStore } from '../activities/ports/blob-store.port.js';
import type { PolicyBackend } from '../activities/ports/policy.port.js';
import type { PolicyVersionStore } from '../activities/ports/policy-version-store.port.js';
import type { ReloadablePolicy, SyncPhase } from '../activities/ports/weight-sync.port.js';
import { createOnnxBackend, type OnnxBackend } from '../gpu/infer/onnx.backend.js';
import { createScriptedPolicy } from '../test/doubles/scripted-policy.js';
import { readManifest } from '../gpu/infer/model-files.js';
import { materializePolicyVersion, servedFiles } from '../gpu/infer/policy-store.js';
import { threadFileFetcher } from './thread-file-fetcher.js';
import { errorTypes, LonghaulError } from '../workflows/contracts/errors.js';

export interface ConfiguredBackend {
  readonly backend: PolicyBackend;
  /** Where the onnx backend's files are (null for openai). */
  readonly modelDir: string | null;
  close(): Promise<void>;
}

/** Where registered versions are cached locally (also the folders a weight-sync server reads). */
export const versionCacheDir = (settings: Config) => path.join(settings.home, 'models', 'versions');

/**
 * Local folder and version of the onnx policy this config names, or of `version` when given (a
 * weight sync): LONGHAUL_MODEL_DIR serves only its own version, any other comes from the registry.
 */
export async function resolveLocalPolicy(
  settings: Config,
  stores: { blobs: BlobStore; versions: PolicyVersionStore },
  version?: number,
): Promise<{ dir: string; version: number }> {
  const wanted = version ?? settings.policy.version;
  if (settings.policy.modelDir !== null && (version === undefined || version === (settings.policy.version ?? 0))) {
    return { dir: settings.policy.modelDir, version: settings.policy.version ?? 0 };
  }
  const { dir, row } = await materializePolicyVersion({
    ...stores,
    cacheDir: versionCacheDir(settings),
    keep: settings.versionCacheKeep,
    // The ONNX backend reads neither the PyTorch weights nor the optimizer state: half the bytes of a weight sync.
    files: servedFiles,
    // On a thread of its own: this process's decoder blocks the event loop between tokens (thread-file-fetcher.ts).
    fetchFiles: threadFileFetcher(settings),
    ...(wanted !== null ? { version: wanted } : {}),
  });
  return { dir, version: row.version };
}

export async function openLocalPolicy(
  settings: Config,
  stores: { blobs: BlobStore; versions: PolicyVersionStore },
  wanted?: number,
  progress?: (phase: SyncPhase) => void,
): Promise<{ backend: OnnxBackend; dir: string }> {
  progress?.('files');
  const { dir, version } = await resolveLocalPolicy(settings, stores, wanted);
  const graph = readManifest(dir).onnx.file;
  if (!fs.existsSync(path.join(dir, graph))) {
    throw new LonghaulError(
      errorTypes.invalidInput,
      `${dir} has no ${graph}: policy version ${version} was published without its ONNX export; export it (gpu-train with the exporter installed) or serve it with LONGHAUL_POLICY_BACKEND=openai`,
    );
  }
  progress?.('open');
  const backend = await createOnnxBackend({
    modelDir: dir,
    version,
    threads: settings.policy.threads,
    spinning: settings.policy.spinning,
    prefixCacheBytes: settings.policy.prefixCacheBytes,
    executionProviders: settings.policy.executionProvider === 'cuda' ? ['cuda', 'cpu'] : ['cpu'],
  });
  return { backend, dir };
}

/**
 * The configured backend, serving `version` when given (after a weight sync): the scripted policy
 * and an OpenAI-compatible server only change their version tag (with LONGHAUL_WEIGHT_SYNC=vllm the
 * server's requests name the version's LoRA adapter); onnx opens that version's files.
 */
export async function createConfiguredBackend(
  settings: Config,
  stores: { blobs: BlobStore; versions: PolicyVersionStore },
  version?: number,
  progress?: (phase: SyncPhase) => void,
): Promise<ConfiguredBackend> {
  const tag = version ?? settings.policy.version ?? 0;
  if (settings.policy.backend === 'scripted') {
    // Deterministic policy for chaos tests and latency-model benchmarks (the script rides in the question).
    return { backend: createScriptedPolicy({ version: () => tag }), modelDir: null, close: async () => undefined };
  }
  if (settings.policy.backend === 'openai') {
    const { baseUrl, apiKey, api } = settings.policy.openai;
    if (baseUrl === null)
      throw new LonghaulError(
        errorTypes.invalidInput,
        'LONGHAUL_OPENAI_BASE_URL is required when LONGHAUL_POLICY_BACKEND=openai (see docs/CONFIG.md).',
      );
    const model = version !== undefined && settings.weightSync.kind === 'vllm' ? loraAdapterName(version) : settings.policy.openai.model;
    return { backend: createOpenAIBackend({ baseUrl, model, apiKey, api, version: tag }), modelDir: null, close: async () => undefined };
  }
  const { backend, dir } = await openLocalPolicy(settings, stores, version, progress);
  return { backend, modelDir: dir, close: () => backend.close() };
}

export type LazyBackend = PolicyBackend & ReloadablePolicy & { close(): Promise<void> };

/** One opened backend and the generations running on it; a retired one closes when the last ends. */
interface Slot {
  readonly opened: ConfiguredBackend;
  active: number;
  retired: boolean;
}

/**
 * A backend opened on first use, so a worker starts (and polls) before any model is prepared; a
 * failed open (no version registered yet) fails that call and is retried on the next. `reload`
 * opens another version beside the serving one and swaps atomically: running generations finish
 * (and tag their tokens) on the old one, which is closed once idle; a failed open changes nothing.
 */
export function lazyBackend(
  open: (version?: number, progress?: (phase: SyncPhase) => void) => Promise<ConfiguredBackend>,
  name: PolicyBackend['name'],
): LazyBackend {
  let current: Promise<Slot> | undefined;
  const retired = new Set<Slot>();
  let reloads: Promise<unknown> = Promise.resolve();
  const get = () => {
    current ??= open().then(
      (opened) => ({ opened, active: 0, retired: false }),
      (error: unknown) => {
        current = undefined;
        throw error;
      },
    );
    return current;
  };
  const retire = async (slot: Slot) => {
    slot.retired = true;
    retired.add(slot);
    if (slot.active > 0) return;
    retired.delete(slot);
    await slot.opened.close().catch(() => undefined); // a failed close must not fail a generation or a reload
  };
  async function use<T>(run: (backend: PolicyBackend) => Promise<T>): Promise<T> {
    let slot = await get();
    while (slot.retired) slot = await get(); // swapped while we waited: take the new one
    slot.active += 1;
    try {
      return await run(slot.opened.backend);
    } finally {
      slot.active -= 1;
      if (slot.retired && slot.active === 0) await retire(slot);
    }
  }
  async function reload(version: number, progress?: (phase: SyncPhase) => void): Promise<{ previous: number | null; reloaded: boolean }> {
    const before = await current?.catch(() => undefined);
    const previous = before ? await before.opened.backend.currentVersion() : null;
    if (before && previous === version) return { previous, reloaded: false };
    const slot: Slot = { opened: await open(version, progress), active: 0, retired: false };
    const replaced = current; // `before`, or a first open that started meanwhile
    current = Promise.resolve(slot);
    const old = await replaced?.catch(() => undefined);
    if (old) await retire(old);
    return { previous, reloaded: true };
  }
  return {
    name,
    generate: (request, signal) => use((backend) => backend.generate(request, signal)),
    currentVersion: () => use((backend) => backend.currentVersion()),
    capabilities: () => use((backend) => backend.capabilities()),
    // One reload at a time, in call order.
    reload: (version, progress) => {
      progress?.('waiting');
      const next = reloads.then(() => reload(version, progress));
      reloads = next.catch(() => undefined);
      return next;
    },
    close: async () => {
      const slot = await current?.catch(() => undefined);
      for (const old of [...retired, ...(slot ? [slot] : [])]) await old.opened.close();
      retired.clear();
    },
  };
}
