/** In-process agent, gpu-infer and tools workers over the real server, for trajectory tests. */
import type { PolicyBackend } from '../../activities/ports/policy.port.js';
import type { ToolActivities } from '../../workflows/contracts/tools.contract.js';
import { createInProcessAgent, type InProcessAgent } from '../../composition/in-process-agent.js';
import type { TestContext } from './stack.js';

export type AgentWorkers = InProcessAgent;

/** Other queues (`roles`) and a test's own activities (`extraActivities`) as createInProcessAgent takes them. */
export type AgentWorkerOptions = Pick<Parameters<typeof createInProcessAgent>[0], 'roles' | 'extraActivities'>;

export function agentWorkers(
  context: TestContext,
  backend: PolicyBackend,
  tools: Pick<ToolActivities, 'runTools'>,
  options: AgentWorkerOptions = {},
): Promise<AgentWorkers> {
  return createInProcessAgent({
    config: context.config,
    blobs: context.blobs,
    pool: context.pool,
    backend,
    tools,
    prefix: context.config.taskQueuePrefix,
    ...options,
  });
}
