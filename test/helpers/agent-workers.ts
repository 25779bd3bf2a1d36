/** In-process agent, gpu-infer and tools workers over the real server, for trajectory tests. */
import type { Worker } from '@temporalio/worker';
import { createGenerateTurnActivities, createTurnToolActivities } from '../../activities/agent/agent-turn.activities.js';
import { createFinishActivities } from '../../activities/agent/finish.activities.js';
import type { PolicyBackend } from '../../activities/ports/policy.port.js';
import type { ToolActivities } from '../../workflows/contracts/tools.contract.js';
import { createPgTrajectoryStore } from '../../infra/postgres/trajectory-store.pg.js';
import { inProcessWorker, type TestContext } from './stack.js';

export interface AgentWorkers {
  /** Run `body` while all three workers poll; shut them down afterwards. */
  run<T>(body: () => Promise<T>): Promise<T>;
}

export async function agentWorkers(context: TestContext, backend: PolicyBackend, tools: Pick<ToolActivities, 'runTools'>): Promise<AgentWorkers> {
  const workers: Worker[] = [
    await inProcessWorker(context, 'agent', createFinishActivities({ blobs: context.blobs, trajectories: createPgTrajectoryStore(context.pool) })),
    await inProcessWorker(context, 'gpu-infer', createGenerateTurnActivities({ blobs: context.blobs, backend }), false),
    await inProcessWorker(context, 'tools', createTurnToolActivities({ blobs: context.blobs, tools }), false),
  ];
  return {
    async run(body) {
      const running = workers.map((worker) => worker.run());
      try {
        return await body();
      } finally {
        for (const worker of workers) worker.shutdown();
        await Promise.allSettled(running);
      }
    },
  };
}
