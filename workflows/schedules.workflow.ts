/**
 * The workflows a Temporal Schedule starts (`longhaul schedule`). Each run resolves the newest policy
 * version when it starts, so one schedule follows training as it publishes versions.
 */
import { ApplicationFailure, executeChild, proxyActivities, workflowInfo } from '@temporalio/workflow';
import { activityOptions, activityRetry } from './contracts/activity-options.js';
import { evaluationWorkflowType, type EvaluationOutcome } from './contracts/evaluation.contract.js';
import { errorTypes } from './contracts/errors.js';
import { queuePrefixOf } from './contracts/queues.js';
import {
  resultIdOf,
  schedulableBenchmarks,
  type BenchmarkRecord,
  type ScheduleActivities,
  type ScheduledBenchmarkInput,
  type ScheduledEvaluationInput,
} from './contracts/schedules.contract.js';
import type { evaluation } from './evaluation.workflow.js';
import { parseEvaluationInput } from './contracts/evaluation.input.js';
import { InputError, objectInput, rejectUnknown, stringListField } from './contracts/validate.js';
import { validated } from './validated.js';

/** Evaluate the newest policy version with the schedule's settings, as a child `evaluation` workflow. */
export async function scheduledEvaluation(input: ScheduledEvaluationInput): Promise<EvaluationOutcome> {
  const { workflowId, taskQueue } = workflowInfo();
  // Checked before the first activity: the evaluation's own parser, with the two fields each run sets itself.
  validated(() => {
    const fields = objectInput(input, 'scheduledEvaluation');
    for (const own of ['resultId', 'policyVersion'])
      if (fields[own] !== undefined) throw new InputError(own, 'is set by each scheduled run; leave it out');
    return parseEvaluationInput({ ...fields, resultId: resultIdOf(workflowId), policyVersion: 0 });
  });
  const { scheduledRunContext } = proxyActivities<ScheduleActivities>(activityOptions(queuePrefixOf(taskQueue)).bookkeeping);
  const { policyVersion, commit } = await scheduledRunContext();
  if (policyVersion === null)
    throw ApplicationFailure.create({
      type: errorTypes.invalidInput,
      message: 'no policy version is registered yet: run `longhaul model prepare` (the schedule is paused until resumed)',
      nonRetryable: true,
    });
  const resultId = resultIdOf(workflowId);
  return executeChild<typeof evaluation>(evaluationWorkflowType, {
    workflowId: `evaluation-${resultId}`,
    args: [{ ...input, resultId, policyVersion, ...(commit ? { commit } : {}) }],
  });
}

/** Run one system benchmark as an activity and store its result per policy version and per commit. */
export async function scheduledBenchmark(input: ScheduledBenchmarkInput): Promise<BenchmarkRecord> {
  validated(() => {
    const fields = objectInput(input, 'scheduledBenchmark');
    rejectUnknown(fields, ['benchmark', 'args']);
    if (fields.args !== undefined) stringListField(fields, 'args', { maxItems: 100, maxLength: 1000, default: [] });
    return fields;
  });
  if (!schedulableBenchmarks.includes(input.benchmark))
    throw ApplicationFailure.create({
      type: errorTypes.invalidInput,
      message: `benchmark: expected one of ${schedulableBenchmarks.join(', ')}, got ${JSON.stringify(input.benchmark)}`,
      nonRetryable: true,
    });
  const { workflowId } = workflowInfo();
  const { runScheduledBenchmark } = proxyActivities<ScheduleActivities>({
    startToCloseTimeout: '3 hours',
    heartbeatTimeout: '2 minutes',
    // A benchmark that fails says so in its output; run it once more, then fail (and pause the schedule).
    retry: { ...activityRetry, maximumAttempts: 2 },
  });
  return runScheduledBenchmark({ ...input, id: resultIdOf(workflowId) });
}
