import path from 'node:path';
import { metricsAddress, type Config } from '../config.js';
import { repoRoot } from '../paths.js';
import { queueRoles, taskQueueName, type QueueRole } from '../../workflows/contracts/queues.js';
import { changedSinceStart, runningPid, startDetached, stopProcess } from './processes.js';
import type { Service, ServiceStatus } from './service.js';

/** Touched by every build (infra/install.sh): a worker started before it runs the previous code. */
const buildStamp = path.join(repoRoot, 'dist', '.build-stamp');

/**
 * One background worker process per task queue (DESIGN §2), started by `longhaul up`. A worker that
 * runs but was started before the last build is restarted: after a pull or an edit, `up` (and the demo)
 * would otherwise keep serving workflows and activities from the old code beside a CLI of the new.
 */
export function workerService(config: Config, role: QueueRole): Service {
  const name = `worker-${role}`;
  const launch = () =>
    startDetached(config.home, {
      name,
      command: process.execPath,
      args: ['--enable-source-maps', path.join(repoRoot, 'dist', 'workers', `${role}.worker.js`)],
      cwd: repoRoot,
    });
  return {
    name,
    async start() {
      if (runningPid(config.home, name) !== undefined) {
        if (!changedSinceStart(config.home, name, buildStamp)) return 'reused';
        // Temporal retries what the old process had in flight; the new one picks it up.
        await stopProcess(config.home, name, 15_000);
        launch();
        return 'restarted';
      }
      launch();
      return 'launched';
    },
    async stop() {
      await stopProcess(config.home, name, 15_000);
    },
    async status(): Promise<ServiceStatus> {
      const pid = runningPid(config.home, name);
      const metrics = metricsAddress(config, role);
      return {
        name,
        embedded: true,
        running: pid !== undefined,
        address: `task queue ${taskQueueName(role, config.taskQueuePrefix)}`,
        ...(pid !== undefined ? { pid } : {}),
        ...(metrics ? { metrics: `http://${metrics}/metrics` } : {}),
      };
    },
  };
}

export function workerServices(config: Config): Service[] {
  return queueRoles.map((role) => workerService(config, role));
}
