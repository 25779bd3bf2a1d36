/** In-process agent, gpu-infer and tools workers over the real server, for trajectory tests. */
import type { PolicyBackend } from '../../activities/ports/policy.port.js';
import type { ToolActivities } from '../../workflows/contracts/tools.contract.js';
import { createInProcessAgent, type InProcessAgent } from '../../composition/in-process-agent.js';
import type { TestContext } from './stack.js';

export type AgentWorkers = InProcessAgent;

export function agentWorkers(context: TestContext, backend: PolicyBackend, tools: Pick<ToolActivities, 'runTools'>): Promise<AgentWorkers> {
  return createInProcessAgent({
    config: context.config,
    blobs: context.blobs,
    pool: context.pool,
    backend,
    tools,
    prefix: context.config.taskQueuePrefix,
  });
}
