/**
 * The policy backend a process serves, chosen by config (LONGHAUL_POLICY_BACKEND): the local ONNX
 * model (a prepared folder, or a registered policy version fetched into <home>/models/versions)
 * or an OpenAI-compatible server.
 */
import path from 'node:path';
import type { Config } from '../../infra/config.js';
import { ConfigError } from '../../infra/config.js';
import { createOpenAIBackend } from '../../infra/inference/openai.backend.js';
import type { BlobStore } from '../../activities/ports/blob-store.port.js';
import type { PolicyBackend } from '../../activities/ports/policy.port.js';
import type { PolicyVersionStore } from '../../activities/ports/policy-version-store.port.js';
import { createOnnxBackend, type OnnxBackend } from './onnx.backend.js';
import { createScriptedPolicy } from '../../activities/agent/scripted-policy.js';
import { materializePolicyVersion } from './policy-store.js';

export interface ConfiguredBackend {
  readonly backend: PolicyBackend;
  /** Where the onnx backend's files are (null for openai). */
  readonly modelDir: string | null;
  close(): Promise<void>;
}

/** Local folder and version of the onnx policy this config names. */
export async function resolveLocalPolicy(settings: Config, stores: { blobs: BlobStore; versions: PolicyVersionStore }): Promise<{ dir: string; version: number }> {
  if (settings.policy.modelDir !== null) return { dir: settings.policy.modelDir, version: settings.policy.version ?? 0 };
  const { dir, row } = await materializePolicyVersion({
    ...stores, cacheDir: path.join(settings.home, 'models', 'versions'), ...(settings.policy.version !== null ? { version: settings.policy.version } : {}),
  });
  return { dir, version: row.version };
}

export async function openLocalPolicy(settings: Config, stores: { blobs: BlobStore; versions: PolicyVersionStore }): Promise<{ backend: OnnxBackend; dir: string }> {
  const { dir, version } = await resolveLocalPolicy(settings, stores);
  const backend = await createOnnxBackend({
    modelDir: dir, version, threads: settings.policy.threads,
    executionProviders: settings.policy.executionProvider === 'cuda' ? ['cuda', 'cpu'] : ['cpu'],
  });
  return { backend, dir };
}

export async function createConfiguredBackend(settings: Config, stores: { blobs: BlobStore; versions: PolicyVersionStore }): Promise<ConfiguredBackend> {
  if (settings.policy.backend === 'scripted') {
    // Deterministic policy for chaos tests and latency-model benchmarks (the script rides in the question).
    return { backend: createScriptedPolicy({ version: () => settings.policy.version ?? 0 }), modelDir: null, close: async () => undefined };
  }
  if (settings.policy.backend === 'openai') {
    const { baseUrl, model, apiKey, api } = settings.policy.openai;
    if (baseUrl === null) throw new ConfigError('LONGHAUL_OPENAI_BASE_URL is required when LONGHAUL_POLICY_BACKEND=openai (see docs/CONFIG.md).');
    return { backend: createOpenAIBackend({ baseUrl, model, apiKey, api, version: settings.policy.version ?? 0 }), modelDir: null, close: async () => undefined };
  }
  const { backend, dir } = await openLocalPolicy(settings, stores);
  return { backend, modelDir: dir, close: () => backend.close() };
}

/**
 * A backend opened on first use, so a worker starts (and polls) before any model is prepared; a
 * failed open (no version registered yet) fails that call and is retried on the next.
 */
export function lazyBackend(open: () => Promise<ConfiguredBackend>, name: PolicyBackend['name']): PolicyBackend & { close(): Promise<void> } {
  let opening: Promise<ConfiguredBackend> | undefined;
  const get = () => {
    opening ??= open().catch((error: unknown) => {
      opening = undefined;
      throw error;
    });
    return opening;
  };
  return {
    name,
    generate: async (request, signal) => (await get()).backend.generate(request, signal),
    currentVersion: async () => (await get()).backend.currentVersion(),
    close: async () => { if (opening) await (await opening.catch(() => undefined))?.close(); },
  };
}
