/**
 * Follow a started workflow until it ends, the way every long command shows progress: query its
 * state every `intervalMs` and hand it to `onState` (which draws bars or prints turns); a query that
 * fails (the first task has not run yet, a worker restarts) is skipped. Resolves with the
 * workflow's result, rejects with its failure.
 *
 * Waiting for the result is a long poll on the workflow's history. When the Temporal server cannot
 * answer for a while (restarting, or a machine out of memory: session 29's demo CLI died on "Failed to
 * get Workflow execution history" while the workflows ran on), the wait is taken up again, for up to
 * `patienceMs` of failures in a row; a workflow's own failure is never retried.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { ServiceError, type WorkflowHandle } from '@temporalio/client';
import type { QueryDefinition } from '@temporalio/common';

export interface FollowOptions<State> {
  /** The workflow's state query. */
  readonly query: QueryDefinition<State>;
  /** Called with each state read; awaited before the next query. */
  readonly onState: (state: State) => void | Promise<void>;
  /** Pause between queries. @default 1000 */
  readonly intervalMs?: number;
  /** How long the server may fail to answer, in a row, before the follow gives up. @default 600000 */
  readonly patienceMs?: number;
  /** Hears each failed wait that is taken up again. @default a line on stderr, at most every 30 s */
  readonly onRetry?: (error: Error, failingForMs: number) => void;
}

/** gRPC codes of a server that could not answer now, where asking again later can succeed. */
const transientCodes = new Set([
  1, // CANCELLED (a deadline the client cut)
  2, // UNKNOWN (the SDK's own retry treats it as retryable)
  4, // DEADLINE_EXCEEDED
  8, // RESOURCE_EXHAUSTED
  10, // ABORTED
  14, // UNAVAILABLE (after the SDK's own ~20 s of retries)
]);

/** A ServiceError whose gRPC cause says the server could not answer now (not that the workflow failed). */
export function isTransientServiceError(error: unknown): boolean {
  if (!(error instanceof ServiceError)) return false;
  const code = (error.cause as { code?: unknown } | undefined)?.code;
  return typeof code === 'number' && transientCodes.has(code);
}

/** A long poll that lasted this long was answered by a healthy server: the failures in a row start again. */
const healthyPollMs = 30_000;

/** The default onRetry: the command says why it is waiting, without a line every few seconds. */
function retryPrinter(workflowId: string): (error: Error, failingForMs: number) => void {
  let printedAt = -Infinity;
  return (error, failingForMs) => {
    if (failingForMs - printedAt < 30_000 && failingForMs >= printedAt) return;
    printedAt = failingForMs;
    const cause = (error.cause as Error | undefined)?.message ?? error.message;
    process.stderr.write(
      `longhaul: Temporal did not answer about ${workflowId} (${cause}); ${Math.round(failingForMs / 1000)} s so far, asking again (the workflow itself goes on)\n`,
    );
  };
}

async function waitForResult<Result>(handle: WorkflowHandle, options: FollowOptions<unknown>): Promise<Result> {
  const onRetry = options.onRetry ?? retryPrinter(handle.workflowId);
  let failingSince: number | undefined;
  for (;;) {
    const asked = Date.now();
    try {
      return (await handle.result()) as Result;
    } catch (error) {
      if (!isTransientServiceError(error)) throw error;
      if (failingSince === undefined || Date.now() - asked >= healthyPollMs) failingSince = asked;
      const failingForMs = Date.now() - failingSince;
      if (failingForMs >= (options.patienceMs ?? 600_000)) throw error;
      onRetry(error as Error, failingForMs);
      await sleep(Math.min(5_000, Math.max(250, (options.intervalMs ?? 1000) * 2)));
    }
  }
}

export async function followWorkflow<Result, State>(handle: WorkflowHandle, options: FollowOptions<State>): Promise<Result> {
  const settled: { done: boolean } = { done: false };
  const result = waitForResult<Result>(handle, options as FollowOptions<unknown>).finally(() => {
    settled.done = true;
  });
  const ended = result.then(
    () => undefined,
    () => undefined,
  );
  while (!settled.done) {
    const state = await handle.query(options.query).catch(() => undefined);
    if (state !== undefined) await options.onState(state);
    await Promise.race([sleep(options.intervalMs ?? 1000), ended]);
  }
  return result;
}
