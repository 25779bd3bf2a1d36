/**
 * The Temporal worker runtime of this process, logging at LONGHAUL_LOG_LEVEL: the SDK's own messages
 * (worker state, workflow and activity context loggers) and SDK Core's native ones, forwarded to the
 * same logger, so `debug` shows the SDK's debug logs and `warn` silences its info lines.
 */
import { DefaultLogger, Runtime, type LogLevel } from '@temporalio/worker';
import type { Config } from '../config.js';

const sdkLevels = { debug: 'DEBUG', info: 'INFO', warn: 'WARN', error: 'ERROR' } as const satisfies Record<Config['logLevel'], LogLevel>;

/**
 * Install the process-wide runtime once, before the first worker connection. The first call wins:
 * the SDK allows one runtime per process, so later calls (another in-process worker) keep it, and a
 * runtime the SDK already created with its defaults is left as it is.
 */
export function installWorkerRuntime(logLevel: Config['logLevel']): void {
  if (Runtime._instance !== undefined) return;
  const level = sdkLevels[logLevel];
  Runtime.install({
    logger: new DefaultLogger(level),
    // Core's own crates at our level; its dependencies (gRPC, HTTP) only when they warn.
    telemetryOptions: { logging: { filter: { core: level, other: level === 'ERROR' ? 'ERROR' : 'WARN' }, forward: {} } },
  });
}
