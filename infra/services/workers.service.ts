import path from 'node:path';
import { metricsAddress, type Config } from '../config.js';
import { repoRoot } from '../paths.js';
import { queueRoles, taskQueueName, type QueueRole } from '../../workflows/contracts/queues.js';
import { runningPid, startDetached, stopProcess } from './processes.js';
import type { Service, ServiceStatus } from './service.js';

/** One background worker process per task queue (DESIGN §2), started by `longhaul up`. */
export function workerService(config: Config, role: QueueRole): Service {
  const name = `worker-${role}`;
  return {
    name,
    async start() {
      if (runningPid(config.home, name) !== undefined) return 'reused';
      startDetached(config.home, {
        name,
        command: process.execPath,
        args: ['--enable-source-maps', path.join(repoRoot, 'dist', 'workers', `${role}.worker.js`)],
        cwd: repoRoot,
      });
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
