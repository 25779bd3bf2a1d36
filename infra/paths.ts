import { fileURLToPath } from 'node:url';
import path from 'node:path';
import fs from 'node:fs';

/** The repository root, found by walking up from this file to the folder that holds package.json. */
function findRepoRoot(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (fs.existsSync(path.join(dir, 'package.json')) && fs.existsSync(path.join(dir, 'longhaul'))) return dir;
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error('cannot find the Longhaul repository root above ' + fileURLToPath(import.meta.url));
    dir = parent;
  }
}

export const repoRoot = findRepoRoot();

/** The prebuilt workflow bundle (infra/install.sh builds it with workers/bundle-workflows.ts). */
export const workflowBundlePath = path.join(repoRoot, 'dist', 'workflow-bundle.js');
