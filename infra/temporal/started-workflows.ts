/**
 * The workflows this process started, and stopping them: a long CLI command that is interrupted
 * (Ctrl-C, SIGTERM) terminates what it started instead of leaving it running on the server.
 */
import { Client, Connection, WorkflowNotFoundError, type WorkflowClientInterceptor } from '@temporalio/client';
import type { Config } from '../config.js';
import { visibilityString } from './visibility-query.js';

/** A workflow started through a client from `connectClient` in this process. */
export interface StartedWorkflow {
  readonly workflowId: string;
  /** Its first run: terminating by it never touches a later workflow that reuses the id. */
  readonly firstExecutionRunId: string;
  readonly workflowType: string;
}

const listeners = new Set<(started: StartedWorkflow) => void>();

/** Be told of every workflow this process starts (through `connectClient`); returns the unsubscribe. */
export function onWorkflowStarted(listener: (started: StartedWorkflow) => void): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

let refusal: Error | undefined;

/**
 * From now on every start through a tracked client fails with `reason` before reaching the server: an
 * interrupted command goes on running until it unwinds, and must not start workflows that nobody stops.
 */
export function refuseStarts(reason: Error): void {
  refusal = reason;
}

function notify(workflowId: string, firstExecutionRunId: string, workflowType: string): void {
  for (const listener of listeners) listener({ workflowId, firstExecutionRunId, workflowType });
}

/** The client interceptor `connectClient` installs: reports starts (execute, start, signalWithStart), or refuses them (`refuseStarts`). */
export const startedWorkflowTracker: WorkflowClientInterceptor = {
  async start(input, next) {
    if (refusal) throw refusal;
    const runId = await next(input);
    notify(input.options.workflowId, runId, input.workflowType);
    return runId;
  },
  async signalWithStart(input, next) {
    if (refusal) throw refusal;
    const runId = await next(input);
    notify(input.options.workflowId, runId, input.workflowType);
    return runId;
  },
};

export interface TerminationReport {
  /** Workflow ids terminated here: the started ones still running, and their running children. */
  readonly terminated: readonly string[];
  /** Those that could not be terminated, with why: they may still be running. */
  readonly failed: readonly { readonly workflowId: string; readonly error: string }[];
}

/**
 * Terminate those of `workflows` still running, and the running children of each (the learner
 * abandons its trajectory children on close, so they are found by ParentWorkflowId).
 * Terminate rather than cancel: it needs no worker, and the command's in-process workers are stopping.
 */
export async function terminateRunning(config: Config, workflows: readonly StartedWorkflow[], reason: string): Promise<TerminationReport> {
  const terminated: string[] = [];
  const failed: { workflowId: string; error: string }[] = [];
  if (workflows.length === 0) return { terminated, failed };
  const connection = await Connection.connect({ address: config.temporal.address, connectTimeout: 10_000 });
  const client = new Client({ connection, namespace: config.temporal.namespace });
  const terminate = async (workflowId: string, firstExecutionRunId?: string): Promise<boolean> => {
    try {
      await client.workflow.getHandle(workflowId, undefined, firstExecutionRunId ? { firstExecutionRunId } : {}).terminate(reason);
      terminated.push(workflowId);
      return true;
    } catch (error) {
      if (!(error instanceof WorkflowNotFoundError)) failed.push({ workflowId, error: (error as Error).message }); // not found: already closed
      return false;
    }
  };
  try {
    await forEachBounded(workflows, 16, async (workflow) => {
      if (!(await terminate(workflow.workflowId, workflow.firstExecutionRunId))) return;
      const children: string[] = [];
      const query = `ParentWorkflowId = ${visibilityString(workflow.workflowId)} AND ExecutionStatus = 'Running'`;
      for await (const child of client.workflow.list({ query })) children.push(child.workflowId);
      await forEachBounded(children, 16, (child) => terminate(child));
    });
  } finally {
    await connection.close();
  }
  return { terminated, failed };
}

async function forEachBounded<T>(items: readonly T[], width: number, body: (item: T) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(width, items.length) }, async () => {
      while (next < items.length) await body(items[next++]!);
    }),
  );
}
