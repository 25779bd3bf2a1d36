/**
 * Policy versions are global to a stack and each training step publishes base + 1, so two runs that
 * train on one stack at once race for the same numbers, and the one that loses fails at a step
 * ("policy version N is already registered by run …"). The commands that start training (demo,
 * train, warm-start) refuse before they register or start anything while another run trains.
 */
import type { Client } from '@temporalio/client';
import { learnerWorkflowType } from '../workflows/contracts/learner.contract.js';
import { warmStartWorkflowType } from '../workflows/contracts/warm-start.contract.js';
import { errorTypes, LonghaulError } from '../workflows/contracts/errors.js';

/** The first learner or warm start running on this stack other than `ownWorkflowIds`, if any. */
export async function runningTraining(
  client: Client,
  ownWorkflowIds: readonly string[] = [],
): Promise<{ workflowId: string; type: string } | undefined> {
  const query = `ExecutionStatus = 'Running' AND WorkflowType IN ('${learnerWorkflowType}', '${warmStartWorkflowType}')`;
  for await (const execution of client.workflow.list({ query }))
    if (!ownWorkflowIds.includes(execution.workflowId)) return { workflowId: execution.workflowId, type: execution.type };
  return undefined;
}

/** Refuse (exit 2) while a learner or warm start other than `ownWorkflowIds` runs on this stack. */
export async function refuseConcurrentTraining(client: Client, ownWorkflowIds: readonly string[]): Promise<void> {
  const execution = await runningTraining(client, ownWorkflowIds);
  if (execution) {
    throw new LonghaulError(
      errorTypes.invalidInput,
      `${execution.workflowId} (${execution.type}) is training on this stack now; policy versions are global and each step publishes base + 1, so two runs training at once race for the same version numbers. Wait for it to finish, stop it (\`temporal workflow terminate -w ${execution.workflowId}\`), or train on another stack (its own LONGHAUL_HOME and ports)`,
      { field: 'stack' },
    );
  }
}

/**
 * Refuse (exit 2) run ids that already have trajectories. A trajectory's id (`<run>-q<i>-s<j>`) keys
 * its durable transcript: a second run under the same id would replay the first one's rollouts
 * instead of sampling its own (and finishTrajectory refuses them when their questions differ).
 */
export async function refuseUsedRunIds(
  trajectories: { countTrajectories(runId: string, idPrefixes: readonly string[]): Promise<number> },
  runIds: readonly string[],
  flag: string,
): Promise<void> {
  for (const runId of runIds) {
    const count = await trajectories.countTrajectories(runId, [`${runId}-q`]);
    if (count > 0)
      throw new LonghaulError(
        errorTypes.invalidInput,
        `run ${JSON.stringify(runId)} already has ${count} trajectories on this stack; a new run under the same id would replay them instead of sampling its own. Choose another --${flag} (\`longhaul report --run ${runId}\` shows the old one)`,
        { field: `--${flag}` },
      );
  }
}
