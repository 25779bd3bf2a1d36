/**
 * The agent's per-turn activities. Each is idempotent by (trajectory, turn): its outcome is an
 * immutable blob, so a retry after a crash returns what the first attempt produced and a tool call
 * that completed never runs again. Workflow history gets small summaries only.
 */
import { CancelledFailure } from '@temporalio/common';
import { ApplicationFailure, Context } from '@temporalio/activity';
import type { BlobStore } from '../ports/blob-store.port.js';
import { generatedTokenCount, type GenerateResult, type PolicyBackend } from '../ports/policy.port.js';
import type { ParsedAction } from '../../workflows/contracts/trajectory.contract.js';
import type { LocalToolRunner, ToolActivities, ToolCall, ToolResult } from '../../workflows/contracts/tools.contract.js';
import type { FrozenObservations } from '../../workflows/contracts/trajectory.contract.js';
import { errorTypes } from '../../workflows/contracts/errors.js';
import type { FrozenObservationStore } from '../ports/frozen-observation-store.port.js';
import { defaultCacheKey } from '../tools/registry.js';
import type {
  GenerateTurnInput,
  GenerateTurnResult,
  LocalTurnToolsResult,
  RunTurnToolsInput,
  ToolCallSummary,
} from '../../workflows/contracts/agent-turn.contract.js';
import { actionKey, parseAction } from './parse-action.js';
import { buildPrompt, stopStrings } from './prompt.js';
import {
  createContextLoader,
  readJson,
  transcriptKeys,
  writeJson,
  type GenerationRecord,
  type PartialGeneration,
  type ToolsRecord,
} from './transcript.js';

const SUMMARY_CHARS = 300;

/** Tool-call inputs in history are cut short: the full call is in the generation blob. */
function summarizeAction(action: ParsedAction): ParsedAction {
  if (action.kind !== 'tools') return action.kind === 'answer' ? { kind: 'answer', answer: action.answer.slice(0, 2000) } : action;
  return { kind: 'tools', calls: action.calls.map((call) => ({ tool: call.tool, input: clip(call.input) })) };
}

function clip(input: unknown): unknown {
  const text = JSON.stringify(input) ?? 'null';
  return text.length <= SUMMARY_CHARS ? input : { truncated: text.slice(0, SUMMARY_CHARS) };
}

function summarizeGeneration(record: GenerationRecord): GenerateTurnResult {
  return {
    action: summarizeAction(record.action),
    actionKey: actionKey(record.action),
    generatedTokens: generatedTokenCount(record),
    promptTokens: record.promptTokenIds.length,
    policyVersion: record.policyVersion,
    versions: [...new Set(record.tokenVersions)].sort((a, b) => a - b),
    finishReason: record.finishReason,
    interruptions: record.interruptions,
  };
}

export interface AgentTurnDependencies {
  readonly blobs: BlobStore;
  readonly backend: PolicyBackend;
}

/** How a generation reports liveness and learns it should stop: Temporal's activity context, or nothing. */
export interface GenerationControl {
  heartbeat(details: unknown): void;
  readonly signal?: AbortSignal;
}

/** The turn's generation, usable with or without Temporal (the overhead benchmark calls it directly). */
export function createTurnGenerator({ blobs, backend }: AgentTurnDependencies) {
  const loadContext = createContextLoader(blobs);
  // Heartbeat every second from the start to the end, blob reads and writes included: with many
  // generations in flight they queue for seconds, and a silence past the heartbeat timeout (now 1 minute)
  // fails the attempt (bench concurrency, 1,000 in flight: generations retried up to 8 times). A turn
  // under a second sends none: each heartbeat is a write on the server.
  return async function generate(input: GenerateTurnInput, control: GenerationControl): Promise<GenerateTurnResult> {
    const beat = setInterval(() => control.heartbeat({ turn: input.turn }), 1000);
    try {
      return await generateOnce(input, control);
    } finally {
      clearInterval(beat);
    }
  };

  async function generateOnce(input: GenerateTurnInput, control: GenerationControl): Promise<GenerateTurnResult> {
    const { trajectoryId: id, turn } = input;
    const done = await readJson<GenerationRecord>(blobs, transcriptKeys.generation(id, turn));
    if (done) return summarizeGeneration(done);
    const segments = await loadContext(id, turn - 1);
    const prompt = buildPrompt(input.question, segments, input.prompt);
    if (input.forcedText !== undefined && input.forcedUnscored === true) {
      // Teacher forcing without the policy (the synthesizer's solvability replay): no forward pass, so no
      // token ids or logprobs; the record says so (untrainable), with the token count estimated from the text.
      const record: GenerationRecord = {
        turn,
        text: input.forcedText,
        promptChars: prompt.length,
        promptTokenIds: [],
        tokenIds: [],
        logprobs: [],
        tokenVersions: [],
        policyVersion: input.policyVersion,
        finishReason: 'stop',
        action: parseAction(input.forcedText, {
          protocol: input.prompt.protocol,
          tools: input.prompt.tools,
          maxCallsPerTurn: input.maxCallsPerTurn,
        }),
        interruptions: 0,
        temperature: input.temperature,
        untrainable: {
          missing: ['tokenIds', 'logprobs'],
          generatedTokens: Math.ceil(input.forcedText.length / 4),
          countedFrom: 'estimate',
        },
      };
      await writeJson(blobs, transcriptKeys.generation(id, turn), record);
      return summarizeGeneration(record);
    }
    const partial = await readJson<PartialGeneration>(blobs, transcriptKeys.partial(id, turn));
    let result: GenerateResult = await backend.generate(
      {
        prompt,
        maxNewTokens: Math.max(1, input.maxNewTokens - (partial?.tokenIds.length ?? 0)),
        temperature: input.temperature,
        seed: input.seed + turn,
        stop: stopStrings(input.prompt),
        ...(partial ? { prefixTokenIds: partial.tokenIds } : {}),
        ...(input.forcedText !== undefined ? { forcedText: input.forcedText } : {}),
      },
      control.signal,
    );
    if (result.finishReason === 'interrupted') {
      // Keep what was generated; the resubmitted activity continues after it under the new version.
      await writeJson(blobs, transcriptKeys.partial(id, turn), {
        text: result.text,
        tokenIds: result.tokenIds,
        logprobs: result.logprobs,
        tokenVersions: result.tokenVersions,
        interruptions: (partial?.interruptions ?? 0) + 1,
      } satisfies PartialGeneration);
      throw new CancelledFailure('generation interrupted; partial output saved');
    }
    if (partial) {
      // The backend re-tags resumed tokens with its current version: restore what produced them.
      const kept = partial.tokenIds.length;
      result = {
        ...result,
        tokenVersions: [...partial.tokenVersions, ...result.tokenVersions.slice(kept)],
        logprobs: [...partial.logprobs, ...result.logprobs.slice(kept)],
      };
    }
    const action = parseAction(result.text, {
      protocol: input.prompt.protocol,
      tools: input.prompt.tools,
      maxCallsPerTurn: input.maxCallsPerTurn,
    });
    const record: GenerationRecord = {
      turn,
      text: result.text,
      promptChars: prompt.length,
      promptTokenIds: result.promptTokenIds,
      tokenIds: result.tokenIds,
      logprobs: result.logprobs,
      tokenVersions: result.tokenVersions,
      policyVersion: result.policyVersion,
      finishReason: result.finishReason,
      action,
      interruptions: partial?.interruptions ?? 0,
      temperature: input.temperature,
      ...(result.untrainable ? { untrainable: result.untrainable } : {}),
    };
    await writeJson(blobs, transcriptKeys.generation(id, turn), record);
    return summarizeGeneration(record);
  }
}

/** generateTurn runs on the gpu-infer queue, next to the policy. */
export function createGenerateTurnActivities(dependencies: AgentTurnDependencies) {
  const generate = createTurnGenerator(dependencies);
  return {
    async generateTurn(input: GenerateTurnInput): Promise<GenerateTurnResult> {
      const context = Context.current();
      return generate(input, { heartbeat: (details) => context.heartbeat(details), signal: context.cancellationSignal });
    },
  };
}

/**
 * A turn's calls through the frozen observations of an evaluation: each stored observation is
 * reused as it was (cacheHit), the others run once and are stored, first writer wins, so concurrent
 * samples asking the same thing and a later reproduction all see one observation.
 */
async function runFrozen(
  store: FrozenObservationStore,
  tools: Pick<ToolActivities, 'runTools'>,
  input: RunTurnToolsInput & { frozen: FrozenObservations },
  calls: readonly ToolCall[],
): Promise<ToolResult[]> {
  const keys = calls.map((call) => ({
    scope: input.frozen.scope,
    tool: call.tool,
    inputKey: `${defaultCacheKey(call.input)}#${input.maxObservationChars}`,
    corpusVersion: input.frozen.corpusVersion,
  }));
  const found = await Promise.all(keys.map((key) => store.get(key)));
  const results: (ToolResult | null)[] = found.map((result) => (result ? { ...result, cacheHit: true, latencyMs: 0 } : null));
  const missing = results.flatMap((result, index) => (result === null ? [index] : []));
  if (missing.length > 0) {
    const fresh = await tools.runTools({
      key: `${input.trajectoryId}/turn-${input.turn}/frozen-${missing.join('-')}`,
      calls: missing.map((index) => calls[index]!),
      maxObservationChars: input.maxObservationChars,
    });
    await Promise.all(
      missing.map(async (index, position) => {
        const ours = fresh[position]!;
        const stored = await store.putIfAbsent(keys[index]!, ours);
        // Another sample stored this observation first: use it (and say so), not ours.
        results[index] =
          stored.observation === ours.observation && stored.ok === ours.ok ? ours : { ...stored, cacheHit: true, latencyMs: 0 };
      }),
    );
  }
  return results.map((result) => result!);
}

interface TurnToolDependencies {
  blobs: BlobStore;
  tools: Pick<ToolActivities, 'runTools'>;
  observations?: FrozenObservationStore | undefined;
}

/**
 * One turn's calls, run once: the turn's tools record (a blob) is the outcome, so a retry returns it.
 * With `onlyIf`, nothing runs and null comes back unless the calls pass it (the local activity's test).
 */
async function runTurn(
  { blobs, tools, observations }: TurnToolDependencies,
  input: RunTurnToolsInput,
  onlyIf?: (calls: readonly ToolCall[]) => boolean,
): Promise<ToolCallSummary[] | null> {
  const key = transcriptKeys.tools(input.trajectoryId, input.turn);
  let record = await readJson<ToolsRecord>(blobs, key);
  if (!record) {
    const generation = await readJson<GenerationRecord>(blobs, transcriptKeys.generation(input.trajectoryId, input.turn));
    if (!generation || generation.action.kind !== 'tools')
      throw new Error(`turn ${input.turn} of ${input.trajectoryId} has no tool calls to run`);
    const { frozen } = input;
    if (onlyIf && ((frozen && !observations) || !onlyIf(generation.action.calls))) return null;
    if (frozen && !observations)
      throw ApplicationFailure.nonRetryable(
        'runTurnTools: frozen observations were asked for and this tools worker has no store for them (build it with an observation store)',
        errorTypes.invalidInput,
      );
    const results =
      frozen && observations
        ? await runFrozen(observations, tools, { ...input, frozen }, generation.action.calls)
        : await tools.runTools({
            key: `${input.trajectoryId}/turn-${input.turn}`,
            calls: generation.action.calls,
            maxObservationChars: input.maxObservationChars,
          });
    record = { turn: input.turn, results };
    await writeJson(blobs, key, record);
  }
  return record.results.map((result) => ({
    tool: result.tool,
    ok: result.ok,
    invalid: result.invalid,
    truncated: result.truncated,
    latencyMs: result.latencyMs,
    cacheHit: result.cacheHit,
    documentIds: result.documentIds.slice(0, 20),
  }));
}

/** runTurnTools runs on the tools queue and wraps the tool registry's runTools (through the frozen observations when asked). */
export function createTurnToolActivities(dependencies: TurnToolDependencies) {
  return {
    async runTurnTools(input: RunTurnToolsInput): Promise<ToolCallSummary[]> {
      return (await runTurn(dependencies, input))!;
    },
  };
}

/**
 * runTurnToolsLocally runs in the agent worker as a local activity (no task queue round trip, its
 * result recorded in the workflow's history): a turn whose every call is local (`tools.runsLocally`)
 * runs here, through the same runner, limits, cache, call records and turn record as on the tools
 * queue; any other turn is left untouched and the workflow sends it to the tools queue. Without a
 * runner (`tools` absent), every turn goes to the tools queue.
 */
export function createLocalTurnToolActivities({
  blobs,
  tools,
  observations,
}: {
  blobs: BlobStore;
  tools?: LocalToolRunner | undefined;
  observations?: FrozenObservationStore | undefined;
}) {
  return {
    async runTurnToolsLocally(input: RunTurnToolsInput): Promise<LocalTurnToolsResult> {
      if (!tools) return { local: false };
      const results = await runTurn({ blobs, tools, observations }, input, (calls) => calls.every((call) => tools.runsLocally(call)));
      return results ? { local: true, results } : { local: false };
    },
  };
}

export type GenerateTurnActivities = ReturnType<typeof createGenerateTurnActivities>;
export type TurnToolActivities = ReturnType<typeof createTurnToolActivities>;
export type LocalTurnToolActivities = ReturnType<typeof createLocalTurnToolActivities>;
