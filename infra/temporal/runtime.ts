/**
 * The Temporal worker runtime of this process, logging at LONGHAUL_LOG_LEVEL: the SDK's own messages
 * (worker state, workflow and activity context loggers) through its DefaultLogger, and SDK Core's
 * native ones straight to the console, so `debug` shows the SDK's debug logs and `warn` silences its
 * info lines.
 */
import { DefaultLogger, Runtime, type LogLevel } from '@temporalio/worker';
import type { Config } from '../config.js';

const sdkLevels = { debug: 'DEBUG', info: 'INFO', warn: 'WARN', error: 'ERROR' } as const satisfies Record<Config['logLevel'], LogLevel>;

/**
 * SDK Core's own level: its info lines (worker initialised, shutdown initiated) repeat the SDK's, so
 * below `debug` it stays at the SDK's default, WARN. Core's logs are not forwarded to the logger: the
 * forwarding callback keeps the process alive while any worker connection is still open.
 */
const coreLevels = { debug: 'DEBUG', info: 'WARN', warn: 'WARN', error: 'ERROR' } as const satisfies Record<Config['logLevel'], LogLevel>;

/**
 * Install the process-wide runtime once, before the first worker connection. The first call wins:
 * the SDK allows one runtime per process, so later calls (another in-process worker) keep it, and a
 * runtime the SDK already created with its defaults is left as it is.
 */
export function installWorkerRuntime(
  logLevel: Config['logLevel'],
  metricsBindAddress: string | null = null,
  histogramBuckets: Record<string, number[]> = {},
): void {
  if (Runtime._instance !== undefined) return;
  const core = coreLevels[logLevel];
  try {
    Runtime.install({
      logger: new DefaultLogger(sdkLevels[logLevel]),
      telemetryOptions: {
        // Core's dependencies (gRPC, HTTP) only when they warn, as the SDK's default.
        logging: { filter: { core, other: core === 'DEBUG' ? 'WARN' : core }, console: {} },
        // The SDK's Prometheus exporter serves its own metrics and those made with Runtime.instance().metricMeter
        // (or an activity's Context.metricMeter) on one /metrics route. Seconds, as Prometheus conventions want.
        ...(metricsBindAddress
          ? {
              metrics: {
                prometheus: { bindAddress: metricsBindAddress, useSecondsForDurations: true, histogramBucketOverrides: histogramBuckets },
              },
            }
          : {}),
      },
    });
  } catch (error) {
    if (!metricsBindAddress) throw error;
    throw new Error(
      `LONGHAUL_METRICS_PORT: the Prometheus endpoint could not listen on ${metricsBindAddress} (${(error as Error).message}); ` +
        'another process holds the port: move the endpoints with LONGHAUL_METRICS_PORT (or LONGHAUL_METRICS_HOST), or set LONGHAUL_METRICS_PORT=0 to turn them off',
      { cause: error },
    );
  }
}
