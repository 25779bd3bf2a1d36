/**
 * The gpu-infer worker serves one policy version, read from LONGHAUL_POLICY_VERSION when it starts:
 * restart it on `version`, or with none on the latest (the variable cleared). Used by the demo and
 * by `bench transfer` to switch the version the evaluations and warm starts sample from.
 */
import { config } from '../infra/config.js';
import { workerService } from '../infra/services/workers.service.js';

export async function restartInference(version: number | undefined): Promise<void> {
  // The worker child inherits this process's environment.
  if (version === undefined) delete process.env.LONGHAUL_POLICY_VERSION;
  else process.env.LONGHAUL_POLICY_VERSION = String(version);
  const service = workerService(config(), 'gpu-infer');
  await service.stop();
  await service.start();
}
