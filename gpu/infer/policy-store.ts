/**
 * Policy versions in the blob store (`policies/v<version>/<file>`) and the `policy_versions` table.
 * `publishPolicyVersion` uploads a prepared folder once (idempotent: same files, same version, no
 * change; different files under a taken version is an error). `materializePolicyVersion` brings a
 * version's files into a local cache folder, checking every file's sha256.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { BlobStore } from '../../activities/ports/blob-store.port.js';
import type { PolicyFile, PolicyVersionRow, PolicyVersionStore } from '../../activities/ports/policy-version-store.port.js';
import { manifestFileName, modelFiles, readManifest } from './model-files.js';
import { errorTypes, LonghaulError } from '../../workflows/contracts/errors.js';
import { diskMarginBytes, ensureFreeSpace, markUsed, pruneVersionCache, versionFolderName } from './version-cache.js';

export const policyBlobPrefix = (version: number) => `policies/${versionFolderName(version)}/`;

/** The bytes of a registered version's files. */
export const versionBytes = (row: Pick<PolicyVersionRow, 'files'>): number => row.files.reduce((sum, file) => sum + file.bytes, 0);

/** Loading a version `longhaul model prune` deleted: refused by name (its row stays, its files are gone). */
export function refusePruned(row: PolicyVersionRow): void {
  if (!row.prunedAt) return;
  throw new LonghaulError(
    errorTypes.invalidInput,
    `policy version ${row.version} was pruned on ${row.prunedAt.toISOString()} (\`longhaul model prune\` deleted its files; its row and training record stay); use a kept version (\`longhaul model prune --help\` says which are kept)`,
    { field: 'version' },
  );
}

function sha256(buffer: Buffer): string {
  return createHash('sha256').update(buffer).digest('hex');
}

export interface PublishOptions {
  readonly blobs: BlobStore;
  readonly versions: PolicyVersionStore;
  readonly modelDir: string;
  readonly version: number;
  readonly parentVersion?: number | null;
  readonly onProgress?: (file: string, bytes: number) => void;
}

/** Upload a prepared folder as a policy version and register it; returns the row (the existing one when already published). */
export async function publishPolicyVersion(options: PublishOptions): Promise<{ row: PolicyVersionRow; published: boolean }> {
  const manifest = readManifest(options.modelDir);
  const prefix = policyBlobPrefix(options.version);
  const files: PolicyFile[] = [];
  for (const name of modelFiles(options.modelDir)) {
    const body = fs.readFileSync(path.join(options.modelDir, name));
    files.push({ name, bytes: body.byteLength, sha256: sha256(body) });
  }
  const existing = await options.versions.get(options.version);
  if (existing) {
    if (!sameFiles(existing.files, files))
      throw new LonghaulError(
        errorTypes.invalidInput,
        `policy version ${options.version} is already registered with different files; publish under a new version`,
      );
    return { row: existing, published: false };
  }
  for (const file of files) {
    // Uploaded one file at a time so a 650 MB ONNX graph is the largest buffer held.
    await options.blobs.put(prefix + file.name, fs.readFileSync(path.join(options.modelDir, file.name)));
    options.onProgress?.(file.name, file.bytes);
  }
  const row: PolicyVersionRow = {
    version: options.version,
    name: manifest.name,
    blobPrefix: prefix,
    files,
    manifest,
    parentVersion: options.parentVersion ?? null,
  };
  const { inserted } = await options.versions.register(row);
  if (!inserted) return publishPolicyVersion(options);
  return { row, published: true };
}

function sameFiles(left: readonly PolicyFile[], right: readonly PolicyFile[]): boolean {
  const key = (files: readonly PolicyFile[]) =>
    JSON.stringify([...files].sort((a, b) => a.name.localeCompare(b.name)).map((file) => [file.name, file.sha256]));
  return key(left) === key(right);
}

export interface MaterializeOptions {
  readonly blobs: BlobStore;
  readonly versions: PolicyVersionStore;
  /** Local cache root: the version lands in `<cacheDir>/v<version>`. */
  readonly cacheDir: string;
  /** @default the latest registered version */
  readonly version?: number;
  /** Version folders the cache keeps after a download, most recently used first (gpu/infer/version-cache.ts). @default no pruning */
  readonly keep?: number;
  /**
   * The files the reader needs (the manifest is always fetched): `servedFiles` for the ONNX backend, which never reads
   * the PyTorch weights or the optimizer state. A cached folder missing one of them gets it added. @default every file
   */
  readonly files?: (name: string) => boolean;
  /**
   * How the files are fetched: `threadFileFetcher` (composition/) downloads them on a worker thread, away from an event
   * loop that the ONNX decoder blocks between tokens. @default on this thread through `blobs` (`fetchCheckedFiles`)
   */
  readonly fetchFiles?: FileFetcher;
}

/** One file of a version to fetch: its blob key, its registered sha256, where it is written, and what to call it in an error. */
export interface FileFetch {
  readonly key: string;
  readonly sha256: string;
  readonly into: string;
  readonly label: string;
}

/** Fetches files, each checked against its sha256 and written whole; rejects with errorTypes.corrupt on a mismatch. */
export type FileFetcher = (files: readonly FileFetch[]) => Promise<void>;

/** The fetch itself, one file after another through `blobs` on the calling thread (a worker thread runs it too). */
export async function fetchCheckedFiles(blobs: BlobStore, files: readonly FileFetch[]): Promise<void> {
  for (const file of files) {
    const body = await blobs.get(file.key);
    if (sha256(body) !== file.sha256) throw new LonghaulError(errorTypes.corrupt, `${file.label} does not match its registered sha256`);
    fs.writeFileSync(file.into, body);
  }
}

/**
 * The files an ONNX policy reads: all but the trainer's own (the PyTorch weights `*.safetensors` and the optimizer state
 * `*.pt`), half of a trained SmolLM2-135M version's 1.3 GB. A weight-sync server (vLLM, SGLang) reads those and gets every file.
 */
export const servedFiles = (name: string): boolean => !/\.(safetensors|pt)$/.test(name);

/** The files of a version that a fetch takes: the manifest always, the rest where `files` (default every file) says so. */
export const fetchedFiles = <File extends { readonly name: string }>(files: readonly File[], filter?: (name: string) => boolean): File[] =>
  files.filter((file) => file.name === manifestFileName || (filter?.(file.name) ?? true));

/** The local folder of a policy version, downloaded (and checked) unless already cached. */
export async function materializePolicyVersion(options: MaterializeOptions): Promise<{ dir: string; row: PolicyVersionRow }> {
  const row = options.version === undefined ? await options.versions.latest() : await options.versions.get(options.version);
  if (!row) {
    throw new LonghaulError(
      errorTypes.notFound,
      options.version === undefined
        ? 'no policy version is registered; run `longhaul model prepare` (it publishes version 0)'
        : `policy version ${options.version} is not registered`,
    );
  }
  refusePruned(row);
  const dir = path.join(options.cacheDir, versionFolderName(row.version));
  const wanted = fetchedFiles(row.files, options.files);
  const fetchFiles = options.fetchFiles ?? ((files: readonly FileFetch[]) => fetchCheckedFiles(options.blobs, files));
  const fetches = (files: readonly PolicyFile[], into: (file: PolicyFile) => string): FileFetch[] =>
    files.map((file) => ({
      key: row.blobPrefix + file.name,
      sha256: file.sha256,
      into: into(file),
      label: `policy version ${row.version}: ${file.name}`,
    }));
  if (fs.existsSync(path.join(dir, manifestFileName))) {
    // A folder fetched for another reader (fewer files): add what this one needs, each file written whole, then renamed.
    const missing = wanted.filter((item) => !fs.existsSync(path.join(dir, item.name)));
    const partial = (file: PolicyFile) => path.join(dir, `${file.name}.partial-${process.pid}`);
    await fetchFiles(fetches(missing, partial));
    for (const file of missing) fs.renameSync(partial(file), path.join(dir, file.name));
    markUsed(dir);
    return { dir, row };
  }
  if (options.keep !== undefined) pruneVersionCache(options.cacheDir, { keep: Math.max(1, options.keep - 1) });
  ensureFreeSpace(
    options.cacheDir,
    versionBytes({ files: wanted }) + diskMarginBytes,
    `policy version ${row.version} (${wanted.length} files)`,
  );
  const staging = `${dir}.partial-${process.pid}`;
  fs.rmSync(staging, { recursive: true, force: true });
  fs.mkdirSync(staging, { recursive: true });
  await fetchFiles(fetches(wanted, (file) => path.join(staging, file.name)));
  fs.rmSync(dir, { recursive: true, force: true });
  fs.renameSync(staging, dir);
  return { dir, row };
}

/**
 * The version a new run starts from. Versions are global and each training step publishes base + 1,
 * so a run starts from the latest version; asked to start from an older one, this registers latest + 1
 * as a fork of it (same blob files, nothing copied; manifest.forkedFrom) and returns that.
 */
export async function runStartVersion(
  versions: PolicyVersionStore,
  requested?: number,
): Promise<{ version: number; forkedFrom: number | null }> {
  for (;;) {
    const latest = await versions.latest();
    if (!latest)
      throw new LonghaulError(errorTypes.invalidInput, 'no policy version is registered yet; run `longhaul model prepare` first');
    if (requested === undefined || requested === latest.version) return { version: latest.version, forkedFrom: null };
    const base = await versions.get(requested);
    if (!base)
      throw new LonghaulError(errorTypes.invalidInput, `policy version ${requested} is not registered (the latest is ${latest.version})`);
    refusePruned(base);
    const manifest = Object.fromEntries(Object.entries(base.manifest).filter(([key]) => key !== 'training')); // a fork is no training output
    const row: PolicyVersionRow = {
      version: latest.version + 1,
      name: base.name,
      blobPrefix: base.blobPrefix,
      files: base.files,
      manifest: { ...manifest, forkedFrom: requested },
      parentVersion: requested,
    };
    if ((await versions.register(row)).inserted) return { version: row.version, forkedFrom: requested };
  }
}
