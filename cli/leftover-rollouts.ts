/**
 * When a learner run ends, the trajectories it admitted during its last step are still generating:
 * they are children with parent-close policy ABANDON (so that they outlive continue-as-new), so nothing
 * stops them, and they run on to their end for nobody, taking the policy and the tools from whatever
 * runs next (the demo's evaluation right after RL). The commands that wait for a learner (demo, train)
 * cancel them once it has finished; each writes its partial record as a cancelled trajectory. The
 * learner itself is not involved: by then its result is final, and its counts never include them.
 */
import type { Client } from '@temporalio/client';
import { visibilityString } from '../infra/temporal/visibility-query.js';
import { searchAttributes } from '../workflows/contracts/search-attributes.js';

/** Cancel the run's trajectories still running; resolves to how many accepted the request. */
export async function cancelLeftoverRollouts(client: Client, runId: string): Promise<number> {
  const query = `ExecutionStatus = 'Running' AND ${searchAttributes.kind.name} = 'trajectory' AND ${searchAttributes.runId.name} = ${visibilityString(runId)}`;
  const ids: string[] = [];
  for await (const execution of client.workflow.list({ query })) ids.push(execution.workflowId);
  const outcomes = await Promise.all(
    ids.map((workflowId) =>
      client.workflow
        .getHandle(workflowId)
        .cancel()
        // One that finished between the list and the request refuses it: nothing to do.
        .then(
          () => true,
          () => false,
        ),
    ),
  );
  return outcomes.filter(Boolean).length;
}

/** The line the commands print (nothing when no rollout was left). */
export function leftoverRolloutsLine(cancelled: number): string | null {
  return cancelled > 0
    ? `  cancelled ${String(cancelled)} rollout${cancelled === 1 ? '' : 's'} still generating when RL ended (trained on by no step; each keeps a partial record)`
    : null;
}
