/**
 * The `syncWeights` activity on the gpu-infer queue: after the learner trains a version, the
 * configured WeightSync makes the serving side use it. It heartbeats while loading; a version that
 * cannot be served (not registered, refused by the server) fails at once, non-retryable, naming
 * the version and the fix; an unreachable server or store is retried with the activity's backoff.
 */
import { ApplicationFailure, CancelledFailure, Context } from '@temporalio/activity';
import { z } from 'zod';
import { type WeightSync } from './ports/weight-sync.port.js';
import type { SyncWeightsInput, SyncWeightsResult } from '../workflows/contracts/learner.contract.js';
import { toApplicationFailure } from '../workflows/contracts/application-failure.js';
import { parseActivityInput } from './activity-input.js';

const inputSchema = z
  .object({
    runId: z.string().min(1, 'expected the learner run id').max(512),
    version: z.number().int('expected an integer policy version').min(0, 'expected a policy version ≥ 0'),
  })
  .strict();

export interface WeightSyncActivityDependencies {
  readonly weightSync: WeightSync;
  /** Heartbeat period while syncing. @default 2000 */
  readonly heartbeatMs?: number;
}

export function createWeightSyncActivities({ weightSync, heartbeatMs = 2000 }: WeightSyncActivityDependencies) {
  return {
    /** Make `version` the served one; repeating it is harmless. */
    async syncWeights(raw: SyncWeightsInput): Promise<SyncWeightsResult> {
      const { runId, version } = parseActivityInput('syncWeights', inputSchema, raw);
      const context = Context.current();
      let phase = 'starting';
      const beat = () => context.heartbeat({ runId, version, adapter: weightSync.kind, phase });
      beat();
      const timer = setInterval(beat, heartbeatMs);
      const started = performance.now();
      // Seconds per phase the adapter reports (the onnx reload: waiting, files, open), so a slow sync says where it waited.
      const phases: Record<string, number> = {};
      let phaseStarted = started;
      const closePhase = () => {
        const now = performance.now();
        phases[phase] = (phases[phase] ?? 0) + (now - phaseStarted) / 1000;
        phaseStarted = now;
      };
      try {
        await weightSync.sync(
          version,
          (next) => {
            closePhase();
            phase = next;
            beat();
          },
          context.cancellationSignal,
        );
        closePhase();
      } catch (error) {
        if (context.cancellationSignal.aborted && !(error instanceof ApplicationFailure))
          throw new CancelledFailure(`syncWeights of policy version ${version} cancelled`);
        throw toApplicationFailure(error, `syncWeights (${weightSync.kind})`);
      } finally {
        clearInterval(timer);
      }
      const seconds = Math.round(performance.now() - started) / 1000;
      const reported = Object.fromEntries(
        Object.entries(phases)
          .filter(([name]) => name !== 'starting')
          .map(([name, value]) => [name, Math.round(value * 1000) / 1000]),
      );
      const breakdown = Object.entries(reported).map(([name, value]) => `${name} ${value.toFixed(1)}`);
      context.log.info(
        `syncWeights v${version} (${weightSync.kind}): ${seconds.toFixed(1)} s${breakdown.length ? ` (${breakdown.join(', ')})` : ''}`,
      );
      return { adapter: weightSync.kind, version, seconds, ...(breakdown.length ? { phases: reported } : {}) };
    },
  };
}

export type WeightSyncActivities = ReturnType<typeof createWeightSyncActivities>;
