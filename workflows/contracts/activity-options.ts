/**
 * Activity options and the retry policy, declared once for every workflow (proxyActivities).
 * Timeouts are per role: what the activity does decides how long one attempt may take and how
 * often it must heartbeat. Pure data (no zod, no I/O): workflows import it.
 */
import { ActivityCancellationType, type ActivityOptions, type RetryPolicy } from '@temporalio/workflow';
import { nonRetryableErrorTypes } from './errors.js';
import { taskQueueName } from './queues.js';

/**
 * The retry policy of every Longhaul activity: 1 s, doubling, at most 30 s apart, without limit;
 * refusals (invalid input, corrupt data) are never retried.
 */
export const activityRetry: RetryPolicy = {
  initialInterval: '1s',
  backoffCoefficient: 2,
  maximumInterval: '30s',
  nonRetryableErrorTypes: [...nonRetryableErrorTypes],
};

/** The options of each kind of activity, on the task queues of a workflow's queue prefix. */
export function activityOptions(prefix: string) {
  return {
    /** Postgres/blob bookkeeping on the workflow's own (agent) queue: buffer, questions, runs. */
    bookkeeping: { startToCloseTimeout: '2 minutes', retry: activityRetry },
    /** finishTrajectory: reads every turn's blobs, scores (maybe with a judge model), writes the record. */
    finish: { startToCloseTimeout: '5 minutes', retry: activityRetry },
    /**
     * One turn's local tool calls as a local activity in the agent worker (same limit as on the tools
     * queue); the workflow task heartbeats while it runs.
     */
    localTools: { startToCloseTimeout: '2 minutes', retry: activityRetry },
    /** One turn's tool calls on the tools queue (each tool has its own shorter limit). */
    tools: { taskQueue: taskQueueName('tools', prefix), startToCloseTimeout: '2 minutes', retry: activityRetry },
    /**
     * One turn's generation on gpu-infer: long (a slow model, a long turn), heartbeating every second;
     * a cancel waits for the partial generation to be stored. The heartbeat timeout is a minute, not
     * seconds: onnxruntime-node's session run blocks the worker's event loop (heartbeats included)
     * for the whole batched step, and on a loaded 2-core machine one prefill run of 8 prompts took
     * over 15 s, timing out every generation in flight at once (measured: attempt 15 of one turn).
     * A dead worker is noticed within the minute.
     */
    generate: {
      taskQueue: taskQueueName('gpu-infer', prefix),
      startToCloseTimeout: '30 minutes',
      heartbeatTimeout: '1 minute',
      retry: activityRetry,
      cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
    },
    /** syncWeights on gpu-infer: downloads and loads a version (minutes for a large model). */
    weightSync: {
      taskQueue: taskQueueName('gpu-infer', prefix),
      startToCloseTimeout: '30 minutes',
      heartbeatTimeout: '1 minute',
      retry: activityRetry,
    },
    /** trainStep / sftStep on gpu-train: one engine run, heartbeating from its progress lines. */
    train: {
      taskQueue: taskQueueName('gpu-train', prefix),
      startToCloseTimeout: '6 hours',
      heartbeatTimeout: '2 minutes',
      retry: activityRetry,
    },
  } satisfies Record<string, ActivityOptions>;
}

/**
 * The skeleton workflow's steps: a short start-to-close and a faster retry, so a step whose worker
 * died is retried on another within seconds (test/skeleton tests kill workers mid-step).
 */
export const skeletonActivityOptions = {
  startToCloseTimeout: '10 seconds',
  retry: { initialInterval: '500ms', backoffCoefficient: 2, maximumInterval: '10s', nonRetryableErrorTypes: [...nonRetryableErrorTypes] },
} satisfies ActivityOptions;
