/**
 * Follow a started workflow until it ends, the way every long command shows progress: query its
 * state every `intervalMs` and hand it to `onState` (which draws bars or prints turns); a query that
 * fails (the first task has not run yet, a worker restarts) is skipped. Resolves with the
 * workflow's result, rejects with its failure.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { WorkflowHandle } from '@temporalio/client';
import type { QueryDefinition } from '@temporalio/common';

export interface FollowOptions<State> {
  /** The workflow's state query. */
  readonly query: QueryDefinition<State>;
  /** Called with each state read; awaited before the next query. */
  readonly onState: (state: State) => void | Promise<void>;
  /** Pause between queries. @default 1000 */
  readonly intervalMs?: number;
}

export async function followWorkflow<Result, State>(handle: WorkflowHandle, options: FollowOptions<State>): Promise<Result> {
  const settled: { done: boolean } = { done: false };
  const result = handle.result().finally(() => {
    settled.done = true;
  }) as Promise<Result>;
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
