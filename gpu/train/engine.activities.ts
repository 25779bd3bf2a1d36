/** Activities that drive the Python engine (gpu/engine). The engine knows nothing about Temporal. */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import path from 'node:path';
import { ApplicationFailure } from '@temporalio/activity';
import { repoRoot } from '../../infra/paths.js';
import { errorTypes } from '../../workflows/contracts/errors.js';

const run = promisify(execFile);

export interface EngineInfo {
  readonly torch: string;
  readonly cuda: boolean;
  readonly threads: number;
  readonly python: string;
}

export function createEngineActivities({ python }: { python: string }) {
  return {
    /** What the engine runs on: torch version, CUDA availability, CPU threads. */
    async engineInfo(): Promise<EngineInfo> {
      try {
        const { stdout } = await run(python, ['-m', 'longhaul_engine.info'], {
          cwd: path.join(repoRoot, 'gpu', 'engine'),
          timeout: 120_000,
        });
        return JSON.parse(stdout.trim().split('\n').pop() ?? '{}') as EngineInfo;
      } catch (error) {
        throw ApplicationFailure.retryable(`engine info failed: ${(error as Error).message}`, errorTypes.unavailable);
      }
    },
  };
}
