import { config } from '../../infra/config.js';
import { openServices } from '../../composition/services.js';
import { stackUp } from '../../infra/services/stack.js';
import { readJson, transcriptKeys, observationText, type GenerationRecord, type ToolsRecord } from '../../activities/agent/transcript.js';
import type { BlobStore } from '../../activities/ports/blob-store.port.js';
import { taskQueueName } from '../../workflows/contracts/queues.js';
import {
  trajectoryStateQuery,
  trajectoryWorkflowType,
  type TrajectoryResult,
  type TrajectoryState,
} from '../../workflows/contracts/trajectory.contract.js';
import { parseTrajectoryInput } from '../../workflows/contracts/trajectory.input.js';
import { integerFlag, parseFlags } from '../arguments.js';
import { UsageError, type Command } from '../command.js';
import { followWorkflow } from '../follow-workflow.js';
import { preflight } from '../preflight.js';

const oneLine = (text: string, max: number) => {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max)}…` : flat;
};

async function printTurn(blobs: BlobStore, id: string, turn: number, verbose: boolean): Promise<void> {
  const generation = await readJson<GenerationRecord>(blobs, transcriptKeys.generation(id, turn));
  if (!generation) return;
  const { action } = generation;
  const what =
    action.kind === 'answer'
      ? `answer: ${action.answer}`
      : action.kind === 'invalid'
        ? `invalid: ${action.reason}`
        : action.calls.map((call) => `${call.tool} ${JSON.stringify(call.input)}`).join(' | ');
  console.log(`turn ${turn + 1} · v${generation.policyVersion} · ${generation.tokenIds.length} tokens · ${what}`);
  if (verbose) console.log(`  model: ${oneLine(generation.text, 400)}`);
  if (action.kind === 'tools') {
    const tools = await readJson<ToolsRecord>(blobs, transcriptKeys.tools(id, turn));
    if (tools) console.log(`  → ${oneLine(observationText(tools.results), verbose ? 600 : 160)}`);
  }
}

export const runCommand: Command = {
  name: 'run',
  summary: 'run one trajectory for a question and stream its turns as they happen',
  usage: `longhaul run "<question>" [--answer A]... [--max-turns N] [--max-new-tokens N] [--context full|recent]
                 [--protocol tags|json] [--temperature T] [--seed S] [--id ID] [--verbose] [--json]

Starts the stack if needed, runs the trajectory workflow (policy per LONGHAUL_POLICY_BACKEND, tools
from the tools worker) and prints each turn: the action, then what the tool returned. With --answer,
the reward is computed against those gold answers. The trajectory survives a crash of any worker.

  --answer A          a gold answer (repeat for several)
  --max-turns N       turn limit (default 200)
  --max-new-tokens N  new tokens per generation (default 512)
  --context MODE      full (one growing prompt, default) or recent (rebuilt from recent history)
  --id ID             workflow id (default run-<time>)
  --verbose           also print the model's full text per turn
  --json              print the final result as JSON on the last line`,
  async run(args) {
    const { values, positionals } = parseFlags(
      args,
      {
        answer: { type: 'string', multiple: true },
        'max-turns': { type: 'string' },
        'max-new-tokens': { type: 'string' },
        context: { type: 'string' },
        protocol: { type: 'string' },
        temperature: { type: 'string' },
        seed: { type: 'string' },
        id: { type: 'string' },
        verbose: { type: 'boolean' },
        json: { type: 'boolean' },
      },
      true,
    );
    const question = positionals.join(' ').trim();
    if (!question) throw new UsageError('a question is required, e.g. longhaul run "What is the capital of Peru?"');
    if (values.context && !['full', 'recent'].includes(values.context))
      throw new UsageError(`--context expects full or recent, got "${values.context}"`);
    if (values.protocol && !['tags', 'json'].includes(values.protocol))
      throw new UsageError(`--protocol expects tags or json, got "${values.protocol}"`);
    const temperature = values.temperature === undefined ? 0 : Number(values.temperature);
    if (!Number.isFinite(temperature) || temperature < 0 || temperature > 5)
      throw new UsageError(`--temperature expects a number between 0 and 5, got "${values.temperature}"`);
    const input = {
      question,
      answers: values.answer ?? [],
      limits: {
        maxTurns: integerFlag(values['max-turns'], 'max-turns', 200, 1, 100_000),
        maxNewTokensPerTurn: integerFlag(values['max-new-tokens'], 'max-new-tokens', 512, 1, 65_536),
      },
      options: {
        contextMode: values.context ?? 'full',
        protocol: values.protocol ?? 'tags',
        temperature,
        seed: integerFlag(values.seed, 'seed', 0, 0, 2 ** 31 - 1),
      },
    };
    preflight(() => parseTrajectoryInput(input), {
      answers: 'answer',
      'limits.maxTurns': 'max-turns',
      'limits.maxNewTokensPerTurn': 'max-new-tokens',
      'options.contextMode': 'context',
      'options.protocol': 'protocol',
      'options.temperature': 'temperature',
      'options.seed': 'seed',
    });
    const settings = config();
    await stackUp(settings, { workers: true });
    const services = openServices(settings);
    try {
      const { blobs } = services;
      const client = await services.client();
      const workflowId = values.id ?? `run-${new Date().toISOString().replace(/[:.]/g, '-')}`;
      const handle = await client.workflow.start(trajectoryWorkflowType, {
        taskQueue: taskQueueName('agent', settings.taskQueuePrefix),
        workflowId,
        args: [input],
        staticSummary: `run: ${oneLine(question, 200)}`,
      });
      if (settings.temporal.embedded)
        console.error(
          `trajectory ${workflowId} · Web UI http://127.0.0.1:${settings.temporal.uiPort}/namespaces/${settings.temporal.namespace}/workflows/${workflowId}`,
        );
      let printed = 0;
      const result = await followWorkflow<TrajectoryResult, TrajectoryState>(handle, {
        query: trajectoryStateQuery,
        intervalMs: 250,
        async onState(state) {
          for (; printed < state.turn; printed += 1) await printTurn(blobs, workflowId, printed, Boolean(values.verbose));
        },
      });
      for (; printed < result.turns; printed += 1) await printTurn(blobs, workflowId, printed, Boolean(values.verbose));
      console.log(
        `${result.stopReason} after ${result.turns} turns · answer ${JSON.stringify(result.answer)} · reward ${result.reward.toFixed(3)} ${JSON.stringify(result.rewardParts)}`,
      );
      if (values.json) console.log(JSON.stringify(result));
      return 0;
    } finally {
      await services.close();
    }
  },
};
