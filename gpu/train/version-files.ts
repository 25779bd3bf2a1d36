/**
 * Policy versions on the trainer's side: stage a registered version into a local folder the engine
 * can start from, and publish a folder the engine wrote (upload to `policies/<runId>/v<version>/`,
 * then register in policy_versions through the same port the inference side reads). Who trained a
 * version is recorded in the row's manifest under `training` ({ runId, step, kind, baseVersion,
 * metrics }), which is how a retried step recognises its own version.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import type { BlobStore } from '../../activities/ports/blob-store.port.js';
import type { PolicyFile, PolicyVersionRow, PolicyVersionStore } from '../../activities/ports/policy-version-store.port.js';
import { manifestFileName, modelFiles } from '../infer/model-files.js';
import { errorTypes, LonghaulError } from '../../workflows/contracts/errors.js';
import { markUsed, versionFolderName } from '../infer/version-cache.js';
import { refusePruned } from '../infer/policy-store.js';

/** Provenance of a trained version, stored in its row's manifest. */
export const trainingRecordSchema = z.object({
  runId: z.string(),
  step: z.number().int(),
  kind: z.enum(['rl', 'sft']),
  baseVersion: z.number().int(),
  metrics: z.record(z.string(), z.unknown()),
});
export type TrainingRecord = z.infer<typeof trainingRecordSchema>;

export function trainingOf(row: PolicyVersionRow): TrainingRecord | undefined {
  const parsed = trainingRecordSchema.safeParse(row.manifest.training);
  return parsed.success ? parsed.data : undefined;
}

export const trainedBlobPrefix = (runId: string, version: number) => `policies/${runId}/${versionFolderName(version)}/`;

const sha256 = (body: Buffer) => createHash('sha256').update(body).digest('hex');

const engineStateFile = 'engine_state.json';

/** The engine state a version folder holds (engine_state.json: policyVersion, runId, step, kind, …), if readable. */
export function readEngineState(dir: string): Record<string, unknown> | undefined {
  try {
    return JSON.parse(fs.readFileSync(path.join(dir, engineStateFile), 'utf8')) as Record<string, unknown>;
  } catch {
    return undefined;
  }
}

const stagedVersionOf = (dir: string): unknown => readEngineState(dir)?.policyVersion;

/** A complete staged copy: every registered file at its size (engine_state.json may be rewritten) naming this version. */
function matchesRow(dir: string, row: PolicyVersionRow): boolean {
  return (
    stagedVersionOf(dir) === row.version &&
    row.files.every((file) => {
      const stat = fs.statSync(path.join(dir, file.name), { throwIfNoEntry: false });
      return stat?.isFile() === true && (file.name === engineStateFile || stat.size === file.bytes);
    })
  );
}

/**
 * The local folder of a registered version under `cacheRoot`, downloaded (sha256-checked) unless a
 * complete copy is there. A registered folder without engine_state.json (a prepared model) gets one
 * naming its registered version, so the engine accepts it as that version with a fresh optimizer; a
 * fork's engine state (its base's) is renamed to the fork's version.
 */
export async function stageVersion(blobs: BlobStore, row: PolicyVersionRow, cacheRoot: string): Promise<string> {
  refusePruned(row);
  const dir = path.join(cacheRoot, versionFolderName(row.version));
  if (fs.existsSync(dir) && matchesRow(dir, row)) {
    markUsed(dir);
    return dir;
  }
  const staging = `${dir}.partial-${process.pid}`;
  fs.rmSync(staging, { recursive: true, force: true });
  fs.mkdirSync(staging, { recursive: true });
  for (const file of row.files) {
    const body = await blobs.get(row.blobPrefix + file.name);
    if (sha256(body) !== file.sha256) {
      fs.rmSync(staging, { recursive: true, force: true });
      throw new LonghaulError(
        errorTypes.corrupt,
        `policy version ${row.version}: ${row.blobPrefix}${file.name} does not match its registered sha256`,
      );
    }
    fs.writeFileSync(path.join(staging, file.name), body);
  }
  const statePath = path.join(staging, engineStateFile);
  if (!row.files.some((file) => file.name === engineStateFile)) {
    fs.writeFileSync(statePath, `${JSON.stringify({ policyVersion: row.version, source: 'registry' })}\n`);
  } else if (stagedVersionOf(staging) !== row.version) {
    // A fork of a trained version (`--from-version`, policy-store.ts runStartVersion) shares its base's files, whose
    // engine state names the base: the engine would refuse the folder as another version. It keeps the base's
    // optimizer state and trainable recipe, under this version's number.
    const state = JSON.parse(fs.readFileSync(statePath, 'utf8')) as Record<string, unknown>;
    fs.writeFileSync(statePath, `${JSON.stringify({ ...state, policyVersion: row.version, forkedFrom: state.policyVersion })}\n`);
  }
  fs.rmSync(dir, { recursive: true, force: true });
  fs.renameSync(staging, dir);
  return dir;
}

export interface PublishTrainedOptions {
  readonly blobs: BlobStore;
  readonly versions: PolicyVersionStore;
  readonly dir: string;
  readonly version: number;
  readonly training: TrainingRecord;
  readonly onFile?: (name: string) => void;
}

function readModelManifest(dir: string): Record<string, unknown> {
  const file = path.join(dir, manifestFileName);
  if (!fs.existsSync(file)) return {};
  const parsed = z.record(z.string(), z.unknown()).safeParse(JSON.parse(fs.readFileSync(file, 'utf8')));
  return parsed.success ? parsed.data : {};
}

/**
 * Upload a trained folder and register it. Returns the registered row: ours, or the one a racing
 * attempt of the same run and step registered first. Another run's row under this version throws.
 */
export async function publishTrainedVersion(options: PublishTrainedOptions): Promise<PolicyVersionRow> {
  const { blobs, versions, dir, version, training } = options;
  const prefix = trainedBlobPrefix(training.runId, version);
  const files: PolicyFile[] = [];
  for (const name of modelFiles(dir)) {
    // One file at a time, so the largest buffer held is the largest file.
    const body = fs.readFileSync(path.join(dir, name));
    await blobs.put(prefix + name, body);
    files.push({ name, bytes: body.byteLength, sha256: sha256(body) });
    options.onFile?.(name);
  }
  const modelManifest = readModelManifest(dir);
  const name = typeof modelManifest.name === 'string' ? modelManifest.name : 'trained-policy';
  const row: PolicyVersionRow = {
    version,
    name,
    blobPrefix: prefix,
    files,
    manifest: { ...modelManifest, training },
    parentVersion: training.baseVersion,
  };
  const { inserted } = await versions.register(row);
  if (inserted) return row;
  const existing = await versions.get(version);
  const owner = existing && trainingOf(existing);
  if (existing && owner?.runId === training.runId && owner.step === training.step) return existing;
  throw versionTaken(version, existing);
}

/** Another run, step or model owns that version number: refused, never overwritten. */
export function versionTaken(version: number, row: PolicyVersionRow | undefined): LonghaulError {
  const owner = row && trainingOf(row);
  return new LonghaulError(
    errorTypes.invalidInput,
    `policy version ${version} is already registered${owner ? ` by run ${owner.runId} step ${owner.step}` : ` (${row?.name ?? 'another model'})`}; refusing to overwrite it`,
    { field: 'outputVersion' },
  );
}
