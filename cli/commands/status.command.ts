import type { Config } from '../../infra/config.js';
import { config } from '../../infra/config.js';
import type { ServiceStatus, StartOutcome } from '../../infra/services/service.js';
import { stackStatus } from '../../infra/services/stack.js';
import { parseFlags } from '../arguments.js';
import type { Command } from '../command.js';

/** The line `up` and the demo print as each service comes up. */
export function startedLine(name: string, seconds: number, outcome: StartOutcome): string {
  const took = seconds >= 0.05 ? ` (${seconds.toFixed(1)} s)` : '';
  return outcome === 'restarted' ? `  ✓ ${name} restarted: it ran the code of an earlier build${took}` : `  ✓ ${name}${took}`;
}

export function printStatus(statuses: ServiceStatus[], json: boolean, settings: Config): void {
  if (json) {
    console.log(
      JSON.stringify({
        home: settings.home,
        webUi: settings.temporal.embedded ? `http://127.0.0.1:${settings.temporal.uiPort}` : null,
        services: statuses,
      }),
    );
    return;
  }
  for (const status of statuses) {
    const mark = status.running ? '●' : '○';
    const origin = status.embedded ? '' : ' (external)';
    console.log(
      `${mark} ${status.name.padEnd(17)} ${status.running ? 'running' : 'stopped'}${origin}  ${status.address}${status.pid ? `  pid ${status.pid}` : ''}${status.detail ? `  ${status.detail}` : ''}${status.metrics ? `  metrics ${status.metrics}` : ''}`,
    );
  }
}

export const statusCommand: Command = {
  name: 'status',
  summary: 'show each service and worker: running or not, address, pid',
  usage: `longhaul status [--json]

  --json   one JSON object: {"home","webUi","services":[{"name","embedded","running","address","pid"?,"detail"?,"metrics"?}]}
Each worker's line ends with its Prometheus endpoint (LONGHAUL_METRICS_PORT; docs/CONFIG.md).
Exit code 0 when every service and worker runs, 1 otherwise.`,
  async run(args) {
    const { values } = parseFlags(args, { json: { type: 'boolean' } });
    const statuses = await stackStatus(config());
    printStatus(statuses, Boolean(values.json), config());
    return statuses.every((status) => status.running) ? 0 : 1;
  },
};
