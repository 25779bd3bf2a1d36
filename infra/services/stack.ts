/** The embedded stack as a whole: what `longhaul up`, `down` and `status` drive. */
import type { Config } from '../config.js';
import { postgresService } from './postgres.service.js';
import { s3Service } from './s3.service.js';
import { temporalService } from './temporal.service.js';
import { workerServices } from './workers.service.js';
import type { Service, ServiceStatus, StartOutcome } from './service.js';

export function coreServices(config: Config): Service[] {
  return [postgresService(config), s3Service(config), temporalService(config)];
}

export interface UpOptions {
  readonly workers: boolean;
  readonly onStarted?: (service: string, seconds: number, outcome: StartOutcome) => void;
  /** Aborting it makes `stackUp` stop what it launched (once the starts in flight have settled) and throw. */
  readonly signal?: AbortSignal;
}

/**
 * Start what is not running; a second call is harmless. Core services start in parallel.
 * All or nothing: when any start fails (or `signal` aborts), the services this call launched are
 * stopped again before it throws, so a failed start never leaves ports held; services that were
 * already running before the call are left as they were.
 */
export async function stackUp(config: Config, options: UpOptions): Promise<void> {
  const launched: Service[] = [];
  const start = async (service: Service) => {
    const startedAt = Date.now();
    const outcome = await service.start();
    if (outcome !== 'reused') launched.push(service);
    options.onStarted?.(service.name, (Date.now() - startedAt) / 1000, outcome);
  };
  try {
    options.signal?.throwIfAborted();
    // allSettled, not all: a failure must wait for the other starts, or they would launch after the rollback.
    const failures = (await Promise.allSettled(coreServices(config).map(start)))
      .filter((outcome): outcome is PromiseRejectedResult => outcome.status === 'rejected')
      .map((outcome) => outcome.reason as Error);
    if (failures.length === 1) throw failures[0]!;
    if (failures.length > 1) throw new Error(failures.map((failure) => failure.message).join('\n'));
    if (!options.workers) return;
    for (const worker of workerServices(config)) {
      options.signal?.throwIfAborted();
      await start(worker);
    }
    options.signal?.throwIfAborted();
  } catch (error) {
    const rollback = await stopAll(launched.reverse()).then(
      () => undefined,
      (failure: Error) => failure,
    );
    if (rollback) throw new Error(`${(error as Error).message}\n(then, stopping what this start had launched: ${rollback.message})`);
    throw error;
  }
}

/** Stop workers, then services. Data (workflows, rows, objects) stays under LONGHAUL_HOME. */
export async function stackDown(config: Config): Promise<void> {
  await stopAll(workerServices(config));
  await stopAll(coreServices(config));
}

/** Stop each service, all of them even when one fails; then report every failure at once. */
async function stopAll(services: readonly Service[]): Promise<void> {
  const failures = (await Promise.allSettled(services.map((service) => service.stop()))).flatMap((outcome, index) =>
    outcome.status === 'rejected' ? [`${services[index]!.name}: ${(outcome.reason as Error).message}`] : [],
  );
  if (failures.length > 0) throw new Error(`could not stop ${failures.join('\n')}`);
}

export async function stackStatus(config: Config): Promise<ServiceStatus[]> {
  return Promise.all([...coreServices(config), ...workerServices(config)].map((service) => service.status()));
}
