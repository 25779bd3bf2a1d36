// Prebuilds the workflow bundle once at build time, so workers start fast: node dist/workers/bundle-workflows.js
import fs from 'node:fs';
import path from 'node:path';
import { bundleWorkflowCode } from '@temporalio/worker';
import { repoRoot, workflowBundlePath } from '../infra/paths.js';

const { code } = await bundleWorkflowCode({
  workflowsPath: path.join(repoRoot, 'dist', 'workflows', 'index.js'),
  logger: {
    log() {},
    trace() {},
    debug() {},
    info() {},
    warn: (message: string) => console.warn(message),
    error: (message: string) => console.error(message),
  },
});
fs.writeFileSync(workflowBundlePath, code);
console.error(`[build] workflow bundle: ${(code.length / 1024).toFixed(0)} KiB → ${path.relative(repoRoot, workflowBundlePath)}`);
