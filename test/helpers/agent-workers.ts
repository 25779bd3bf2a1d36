/** In-process agent, gpu-infer and tools workers over the real server, for trajectory tests. */
import type { PolicyBackend } from '../../activities/ports/policy.port.js';
import type { ToolActivities } from '../../workflows/contracts/tools.contract.js';
import { createInProcessAgent, type InProcessAgent } from '../../composition/in-process-agent.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { createScriptedPolicy } from '../doubles/scripted-policy.js';
import { createScriptedTools } from '../doubles/scripted-tools.js';
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

/**
 * Every queue's workers for a learner run without a model: the scripted policy and tools, and a simulated
 * trainStep that publishes nothing but makes the policy report the trained version (after `stepDelayMs`),
 * returning `metrics` as the step's.
 */
export function scriptedLearnerWorkers(
  context: TestContext,
  options: { readonly stepDelayMs?: number; readonly metrics?: Record<string, number> } = {},
): Promise<AgentWorkers> {
  let served = 0;
  return agentWorkers(context, createScriptedPolicy({ version: () => served }), createScriptedTools(), {
    roles: ['agent', 'gpu-infer', 'tools', 'gpu-train'],
    extraActivities: {
      'gpu-train': {
        trainStep: async (input: { outputVersion: number }) => {
          served = input.outputVersion;
          if (options.stepDelayMs) await sleep(options.stepDelayMs);
          return { version: input.outputVersion, metrics: options.metrics ?? {} };
        },
      },
    },
  });
}
