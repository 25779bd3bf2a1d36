/** The embedded stack as a whole: what `longhaul up`, `down` and `status` drive. */
import type { Config } from '../config.js';
import { postgresService } from './postgres.service.js';
import { s3Service } from './s3.service.js';
import { temporalService } from './temporal.service.js';
import { workerServices } from './workers.service.js';
import type { Service, ServiceStatus } from './service.js';

export function coreServices(config: Config): Service[] {
  return [postgresService(config), s3Service(config), temporalService(config)];
}

export interface UpOptions {
  readonly workers: boolean;
  readonly onStarted?: (service: string, seconds: number) => void;
}

/** Start what is not running; a second call is harmless. Core services start in parallel. */
export async function stackUp(config: Config, options: UpOptions): Promise<void> {
  await Promise.all(coreServices(config).map(async (service) => {
    const startedAt = Date.now();
    await service.start();
    options.onStarted?.(service.name, (Date.now() - startedAt) / 1000);
  }));
  if (!options.workers) return;
  for (const worker of workerServices(config)) {
    await worker.start();
    options.onStarted?.(worker.name, 0);
  }
}

/** Stop workers, then services. Data (workflows, rows, objects) stays under LONGHAUL_HOME. */
export async function stackDown(config: Config): Promise<void> {
  await Promise.all(workerServices(config).map((worker) => worker.stop()));
  await Promise.all(coreServices(config).map((service) => service.stop()));
}

export async function stackStatus(config: Config): Promise<ServiceStatus[]> {
  return Promise.all([...coreServices(config), ...workerServices(config)].map((service) => service.status()));
}
