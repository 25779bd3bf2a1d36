/**
 * The gpu-infer worker serves one policy version, read from LONGHAUL_POLICY_VERSION when it starts:
 * restart it on `version`, or with none on the latest (the variable cleared). Used by the demo, by
 * `bench transfer` and by `eval --version` to switch the version the evaluations and warm starts sample from.
 */
import type { Client } from '@temporalio/client';
import { config } from '../infra/config.js';
import { workerService } from '../infra/services/workers.service.js';
import { UsageError } from './command.js';
import { onInterrupt } from './interrupt.js';
import { runningTraining } from './training-guard.js';

export async function restartInference(version: number | undefined): Promise<void> {
  // The worker child inherits this process's environment.
  if (version === undefined) delete process.env.LONGHAUL_POLICY_VERSION;
  else process.env.LONGHAUL_POLICY_VERSION = String(version);
  const service = workerService(config(), 'gpu-infer');
  await service.stop();
  await service.start();
}

/**
 * Serve `version` for an evaluation of it, when it is not the latest registered (which the gpu-infer
 * worker serves unless it was started on another or a learner synced one): refused while a learner or
 * warm start runs on this stack (its rollouts would be sampled from `version`), else the worker is
 * restarted on `version`. Returns what puts it back on the latest (also run on Ctrl-C), or null when
 * nothing was switched.
 */
export async function serveForEvaluation(
  client: Client,
  version: number,
  latest: number,
  log: (line: string) => void,
): Promise<(() => Promise<void>) | null> {
  if (version === latest) return null;
  const training = await runningTraining(client);
  if (training)
    throw new UsageError(
      `--version ${version}: the gpu-infer worker serves one policy version, and ${training.workflowId} (${training.type}) is training on it now; evaluating v${version} would switch its rollouts to v${version}. Wait for it to finish, or evaluate the latest (v${latest}: leave out --version)`,
    );
  log(`serving v${version} for this evaluation: restarting worker-gpu-infer on it (the latest is v${latest})`);
  const worker = inferenceSwitch(log, latest);
  await worker.serve(version);
  return () => worker.restore();
}

export interface InferenceSwitch {
  /** Restart the gpu-infer worker on `version`; the first switch arms the restore on Ctrl-C. */
  serve(version: number): Promise<void>;
  /** Put the worker back on what it served before, once (nothing when nothing was switched). */
  restore(): Promise<void>;
}

/**
 * The gpu-infer worker switched between versions by one command and put back on what it served before
 * (the latest, or LONGHAUL_POLICY_VERSION) exactly once: when the command ends, or on Ctrl-C as an
 * interrupt cleanup — the handler exits after a short grace, often before the command's finally has run.
 * `latest` only names the latest version in the log line.
 */
export function inferenceSwitch(log: (line: string) => void, latest?: number): InferenceSwitch {
  const pinned = process.env.LONGHAUL_POLICY_VERSION;
  const before =
    pinned === undefined ? `the latest version${latest === undefined ? '' : ` (v${latest})`}` : `v${pinned} (LONGHAUL_POLICY_VERSION)`;
  let restoring: Promise<void> | undefined;
  let unregister: (() => void) | undefined;
  const putBack = () =>
    (restoring ??= restartInference(pinned === undefined ? undefined : Number(pinned)).then(() =>
      log(`worker-gpu-infer serves ${before} again`),
    ));
  return {
    async serve(version) {
      unregister ??= onInterrupt(`restart worker-gpu-infer on ${pinned === undefined ? 'the latest version' : `v${pinned}`}`, putBack);
      await restartInference(version);
    },
    async restore() {
      if (!unregister) return;
      unregister();
      await putBack();
    },
  };
}
