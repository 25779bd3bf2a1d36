/**
 * The local caches of policy versions: `<home>/models/versions` (the inference side: what gpu-infer
 * serves and what a weight-sync server reads) and `<home>/models/train` (the trainer's staged bases
 * and outputs). A folder there is a copy of a registered version's blob-store files, so removing one
 * loses nothing: the next use downloads it again. Without a bound each version left ~2.2 GB in the
 * two caches (27 versions filled a 250 GB disk, docs/BENCHMARKS.md), so each cache keeps its most
 * recently used folders (LONGHAUL_VERSION_CACHE_KEEP) and folders left by a dead process, and a step
 * first checks that the disk has room for what it is about to write.
 */
import fs from 'node:fs';
import path from 'node:path';
import { errorTypes, LonghaulError } from '../../workflows/contracts/errors.js';

/** A version's folder name in a local cache: v000123. */
export const versionFolderName = (version: number) => `v${String(version).padStart(6, '0')}`;

const versionFolder = /^v\d{6,}$/;
/** `v000123.partial-<pid>` (a download) and `.v000123.tmp-<pid>` (the engine's unpublished output). */
const leftoverFolder = /^(?:\.v\d{6,}\.tmp-|v\d{6,}\.partial-)(\d+)$/;

/** Record a use of a cached folder (its mtime orders the cache). */
export function markUsed(dir: string): void {
  const now = new Date();
  try {
    fs.utimesSync(dir, now, now);
  } catch {
    // A folder removed meanwhile is downloaded again on its next use.
  }
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function folderBytes(dir: string): number {
  let total = 0;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const file = path.join(dir, entry.name);
    if (entry.isDirectory()) total += folderBytes(file);
    else if (entry.isFile()) total += fs.statSync(file, { throwIfNoEntry: false })?.size ?? 0;
  }
  return total;
}

export interface PruneOptions {
  /** Version folders kept, most recently used first (at least 1). */
  readonly keep: number;
  /** Folders never removed (in use now), kept beyond `keep`. */
  readonly protect?: Iterable<string>;
}

export interface PruneResult {
  readonly removed: readonly string[];
  readonly freedBytes: number;
}

/**
 * Remove all but the `keep` most recently used version folders under `root` (protected ones stay),
 * and the partial downloads and engine temp folders whose process is gone.
 */
export function pruneVersionCache(root: string, options: PruneOptions): PruneResult {
  if (!Number.isInteger(options.keep) || options.keep < 1)
    throw new LonghaulError(errorTypes.invalidInput, `expects a whole number ≥ 1, got ${options.keep}`, { field: 'keep' });
  if (!fs.existsSync(root)) return { removed: [], freedBytes: 0 };
  const protectedDirs = new Set([...(options.protect ?? [])].map((dir) => path.resolve(dir)));
  const entries = fs.readdirSync(root, { withFileTypes: true }).filter((entry) => entry.isDirectory());
  const versions = entries
    .filter((entry) => versionFolder.test(entry.name))
    .map((entry) => {
      const dir = path.resolve(root, entry.name);
      return { dir, used: fs.statSync(dir, { throwIfNoEntry: false })?.mtimeMs ?? 0 };
    })
    .sort((left, right) => right.used - left.used || right.dir.localeCompare(left.dir));
  const doomed = versions
    .slice(options.keep)
    .map((folder) => folder.dir)
    .filter((dir) => !protectedDirs.has(dir));
  for (const entry of entries) {
    const leftover = leftoverFolder.exec(entry.name);
    if (leftover && !processAlive(Number(leftover[1]))) doomed.push(path.resolve(root, entry.name));
  }
  let freedBytes = 0;
  const removed: string[] = [];
  for (const dir of doomed) {
    try {
      const bytes = folderBytes(dir);
      fs.rmSync(dir, { recursive: true, force: true });
      freedBytes += bytes;
      removed.push(dir);
    } catch {
      // Another process removed or is replacing it; the next prune sees it again.
    }
  }
  return { removed, freedBytes };
}

const gib = (bytes: number) => `${(bytes / 2 ** 30).toFixed(1)} GiB`;

/** Bytes free for this process on the file system holding `dir` (created if missing). */
export function freeBytes(dir: string): number {
  fs.mkdirSync(dir, { recursive: true });
  const stats = fs.statfsSync(dir);
  return stats.bavail * stats.bsize;
}

/**
 * Refuse, before writing anything, work that would fill the disk: a retryable LonghaulUnavailable
 * naming the folder, what is free and what is needed (a full disk otherwise surfaces as an engine
 * crash or an S3 server that turns read-only, and a retried step starts again from scratch).
 */
export function ensureFreeSpace(dir: string, neededBytes: number, what: string): void {
  const free = freeBytes(dir);
  if (free >= neededBytes) return;
  throw new LonghaulError(
    errorTypes.unavailable,
    `${dir} has ${gib(free)} free and ${what} needs about ${gib(neededBytes)}; free disk space there (\`longhaul model prune\` deletes the files of old policy versions; LONGHAUL_VERSION_CACHE_KEEP bounds the local caches). The step is retried and continues once there is room.`,
    { field: 'disk' },
  );
}

/** Headroom kept free beyond a step's own files (logs, databases, the S3 server's volume). */
export const diskMarginBytes = 2 ** 30;
