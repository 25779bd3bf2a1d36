/**
 * One search-agent episode as a durable workflow (DESIGN §2). Per turn: generateTurn on the
 * gpu-infer queue (the policy; output parsed there), runTurnTools on the tools queue, then the
 * termination checks. History holds summaries and counters; texts and tokens are blobs.
 */
import {
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  ContinueAsNew,
  continueAsNew,
  getExternalWorkflowHandle,
  isCancellation,
  patched,
  proxyActivities,
  proxyLocalActivities,
  setCurrentDetails,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { GenerateTurnActivities, LocalTurnToolActivities, TurnToolActivities } from '../activities/agent/agent-turn.activities.js';
import type { FinishActivities } from '../activities/agent/finish.activities.js';
import type { GenerateTurnResult } from './contracts/agent-turn.contract.js';
import { activityOptions } from './contracts/activity-options.js';
import { queuePrefixOf } from './contracts/queues.js';
import { readableText } from './contracts/readable-text.js';
import { searchAttributes } from './contracts/search-attributes.js';
import {
  interruptSignal,
  setPolicyVersionUpdate,
  trajectoryFailedSignal,
  trajectoryFinishedSignal,
  trajectoryStateQuery,
  defaultRewardFormatCredit,
  formatRewardMetrics,
  type CarriedState,
  type StopReason,
  type TrajectoryInput,
  type TrajectoryResult,
} from './contracts/trajectory.contract.js';
import { parseTrajectoryInput } from './contracts/trajectory.input.js';
import { nonRetryableErrorTypes } from './contracts/errors.js';
import { validated } from './validated.js';

function activitiesFor(prefix: string) {
  const options = activityOptions(prefix);
  const policy = proxyActivities<GenerateTurnActivities>(options.generate);
  const tools = proxyActivities<TurnToolActivities>(options.tools);
  const finish = proxyActivities<FinishActivities>(options.finish);
  const local = proxyLocalActivities<LocalTurnToolActivities>(options.localTools);
  // Activity proxies have no own properties: pick the functions, don't spread the proxies.
  return {
    generateTurn: policy.generateTurn,
    runTurnTools: tools.runTurnTools,
    runTurnToolsLocally: local.runTurnToolsLocally,
    finishTrajectory: finish.finishTrajectory,
  };
}

function describeAction(result: GenerateTurnResult): string {
  const { action } = result;
  if (action.kind === 'answer') return `answer ${JSON.stringify(action.answer.slice(0, 80))}`;
  if (action.kind === 'invalid') return `invalid: ${action.reason.slice(0, 80)}`;
  return action.calls.map((call) => `${call.tool} ${JSON.stringify(call.input).slice(0, 80)}`).join('; ');
}

/**
 * Patch: a trajectory that fails for good tells its `reportTo` workflow (the learner) before it
 * fails, so the learner's group settles without it even across the learner's continue-as-new
 * (issue 14). Trajectories started earlier failed silently.
 */
const reportFailurePatch = 'trajectory-report-failure';

/**
 * Patch: an interrupted generation that fails instead of ending cancelled (its worker died, so the
 * heartbeat timed out; or storing its partial output failed) is resubmitted like a cancelled one.
 * Temporal does not retry an activity whose cancellation was requested, so before this patch such
 * a trajectory failed for good (found by `longhaul chaos`, issue 14).
 */
const interruptFailurePatch = 'trajectory-interrupt-failure';

/**
 * Patch: a turn whose every tool call is local (the tool declares it cheap and on this machine) runs
 * as a local activity in the agent worker, its result recorded in a marker, instead of a tools-queue
 * activity: a turn becomes one workflow task and one activity task instead of two of each (issue 12).
 * Other turns, and trajectories started earlier, use the tools queue.
 */
const localToolsPatch = 'trajectory-local-tools';

/** A failure a retry could get past (not a refusal: invalid input, corrupt data). */
function retryableActivityFailure(error: unknown): boolean {
  if (!(error instanceof ActivityFailure)) return false;
  const cause = error.cause;
  return !(
    cause instanceof ApplicationFailure &&
    (cause.nonRetryable || (nonRetryableErrorTypes as readonly string[]).includes(cause.type ?? ''))
  );
}

export async function trajectory(raw: TrajectoryInput): Promise<TrajectoryResult> {
  try {
    return await episode(raw);
  } catch (error) {
    const reportTo = (raw as { reportTo?: unknown } | undefined)?.reportTo;
    if (typeof reportTo === 'string' && !isCancellation(error) && !(error instanceof ContinueAsNew) && patched(reportFailurePatch)) {
      const runId = (raw as { runId?: unknown }).runId;
      try {
        await getExternalWorkflowHandle(reportTo).signal(trajectoryFailedSignal, {
          trajectoryId: workflowInfo().workflowId,
          ...(typeof runId === 'string' ? { runId } : {}),
          message: (error instanceof Error ? error.message : String(error)).slice(0, 500),
        });
      } catch {
        // The learner has closed: nothing waits for this trajectory any more.
      }
    }
    throw error;
  }
}

async function episode(raw: TrajectoryInput): Promise<TrajectoryResult> {
  const input = validated(() => parseTrajectoryInput(raw));
  const { workflowId: trajectoryId, taskQueue } = workflowInfo();
  const act = activitiesFor(queuePrefixOf(taskQueue));
  const carried = (raw as TrajectoryInput).carried;
  let state: CarriedState = carried ?? {
    turn: 0,
    generatedTokens: 0,
    invalidSteps: 0,
    repeats: 0,
    lastActionKey: '',
    startedAtMs: Date.now(),
    versionsUsed: [],
    policyVersion: input.policyVersion,
  };
  let lastAction = carried ? '(continued)' : '(starting)';
  let generation: CancellationScope | undefined;
  let interruptRequested = false;
  let status: 'running' | 'completed' | 'cancelled' = 'running';

  setHandler(trajectoryStateQuery, () => ({
    trajectoryId,
    turn: state.turn,
    status,
    lastAction,
    generatedTokens: state.generatedTokens,
    invalidSteps: state.invalidSteps,
    policyVersion: state.policyVersion,
    versionsUsed: state.versionsUsed,
    generating: generation !== undefined,
  }));
  setHandler(
    setPolicyVersionUpdate,
    (version: number) => {
      state = { ...state, policyVersion: version };
      return version;
    },
    {
      validator: (version: number) => {
        if (!Number.isInteger(version) || version < 0)
          throw new Error(`policyVersion must be a non-negative integer, got ${JSON.stringify(version)}`);
      },
    },
  );
  setHandler(interruptSignal, () => {
    if (!generation) return;
    interruptRequested = true;
    generation.cancel();
  });
  upsertSearchAttributes([
    { key: searchAttributes.kind, value: 'trajectory' },
    { key: searchAttributes.status, value: 'running' },
    { key: searchAttributes.policyVersion, value: state.policyVersion },
    // Readable text only (no NUL, no unpaired surrogate): a visibility store on Postgres refuses them. Identical for readable ids.
    ...(input.dataset ? [{ key: searchAttributes.dataset, value: readableText(input.dataset) }] : []),
    ...(input.questionId ? [{ key: searchAttributes.questionId, value: readableText(input.questionId) }] : []),
    ...(input.runId ? [{ key: searchAttributes.runId, value: readableText(input.runId) }] : []),
  ]);

  async function generateWithInterrupts(): Promise<GenerateTurnResult> {
    for (;;) {
      const scope = new CancellationScope();
      generation = scope;
      try {
        return await scope.run(() =>
          act.generateTurn({
            trajectoryId,
            turn: state.turn,
            question: input.question,
            maxNewTokens: input.limits.maxNewTokensPerTurn,
            maxCallsPerTurn: input.options.maxCallsPerTurn,
            temperature: input.options.temperature,
            seed: input.options.seed,
            policyVersion: state.policyVersion,
            ...(state.turn < input.forcedTurns.length
              ? { forcedText: input.forcedTurns[state.turn], ...(input.scoreForcedTurns ? {} : { forcedUnscored: true }) }
              : {}),
            prompt: {
              protocol: input.options.protocol,
              contextMode: input.options.contextMode,
              recentChars: input.options.recentChars,
              tools: input.options.tools,
              template: 'chatml',
            },
          }),
        );
      } catch (error) {
        if (
          interruptRequested &&
          !CancellationScope.current().consideredCancelled &&
          (isCancellation(error) || (retryableActivityFailure(error) && patched(interruptFailurePatch)))
        ) {
          interruptRequested = false; // resubmit under the version now in force, after the saved partial output
          continue;
        }
        throw error;
      } finally {
        generation = undefined;
      }
    }
  }

  let answer: string | null = null;
  let stopReason: StopReason | undefined;
  try {
    while (stopReason === undefined) {
      if (state.turn >= input.limits.maxTurns) {
        stopReason = 'max_turns';
        break;
      }
      if (state.generatedTokens >= input.limits.maxTotalTokens) {
        stopReason = 'max_tokens';
        break;
      }
      if (Date.now() - state.startedAtMs > input.limits.maxWallSeconds * 1000) {
        stopReason = 'max_wall_time';
        break;
      }
      const result = await generateWithInterrupts();
      const { action } = result;
      if (action.kind === 'tools') {
        const toolsInput = {
          trajectoryId,
          turn: state.turn,
          maxObservationChars: input.options.maxObservationChars,
          ...(input.frozenObservations ? { frozen: input.frozenObservations } : {}),
        };
        const ranLocally = input.options.localTools && patched(localToolsPatch) && (await act.runTurnToolsLocally(toolsInput)).local;
        if (!ranLocally) await act.runTurnTools(toolsInput);
      }
      const repeats = result.actionKey === state.lastActionKey ? state.repeats + 1 : 1;
      state = {
        ...state,
        turn: state.turn + 1,
        generatedTokens: state.generatedTokens + result.generatedTokens,
        repeats,
        lastActionKey: result.actionKey,
        invalidSteps: state.invalidSteps + (action.kind === 'invalid' ? 1 : 0),
        versionsUsed: [...new Set([...state.versionsUsed, ...result.versions])].sort((a, b) => a - b),
      };
      lastAction = describeAction(result);
      if (action.kind === 'answer') {
        answer = action.answer;
        stopReason = 'answered';
        break;
      }
      if (action.kind === 'invalid' && (input.options.onInvalid === 'stop' || state.invalidSteps >= input.limits.maxInvalidSteps)) {
        stopReason = 'invalid';
        break;
      }
      if (input.limits.maxRepeats > 0 && repeats >= input.limits.maxRepeats) {
        stopReason = 'repeated';
        break;
      }
      if (state.turn % 10 === 0) {
        upsertSearchAttributes([
          { key: searchAttributes.turns, value: state.turn },
          { key: searchAttributes.policyVersion, value: state.policyVersion },
        ]);
        setCurrentDetails(`turn ${state.turn} · ${state.generatedTokens} tokens · last: ${lastAction}`);
      }
      if (workflowInfo().continueAsNewSuggested) await continueAsNew<typeof trajectory>({ ...(raw as TrajectoryInput), carried: state });
    }
  } catch (error) {
    if (!isCancellation(error)) throw error;
    status = 'cancelled';
    // A clean partial record, even though the workflow was cancelled.
    await CancellationScope.nonCancellable(() => finish('cancelled', null));
    throw error;
  }
  return finish(stopReason ?? 'no_action', answer);

  async function finish(reason: StopReason, finalAnswer: string | null): Promise<TrajectoryResult> {
    const outcome = await act.finishTrajectory({
      trajectoryId,
      question: input.question,
      answers: input.answers,
      questionId: input.questionId,
      dataset: input.dataset,
      runId: input.runId,
      turns: state.turn,
      stopReason: reason,
      answer: finalAnswer,
      invalidSteps: state.invalidSteps,
      generatedTokens: state.generatedTokens,
      versionsUsed: state.versionsUsed,
      rewardMetric: input.rewardMetric,
      // Only rewards with a format term send its weight, so the activity input of every other trajectory (and its history) is unchanged.
      ...(formatRewardMetrics.includes(input.rewardMetric) ? { rewardFormatWeight: input.rewardFormatWeight } : {}),
      ...(formatRewardMetrics.includes(input.rewardMetric) && input.rewardFormatCredit !== defaultRewardFormatCredit
        ? { rewardFormatCredit: input.rewardFormatCredit }
        : {}),
      // Only sent when set, so the activity input of every other trajectory (and its history) is unchanged.
      ...(input.rewardUnanswered !== 0 ? { rewardUnanswered: input.rewardUnanswered } : {}),
      // Only forks carry it, so the activity input of every other trajectory (and its history) is unchanged.
      ...(input.forkOf ? { forkOf: input.forkOf } : {}),
    });
    if (status === 'running') status = 'completed';
    upsertSearchAttributes([
      { key: searchAttributes.status, value: status },
      { key: searchAttributes.turns, value: state.turn },
      { key: searchAttributes.reward, value: outcome.reward },
      { key: searchAttributes.policyVersion, value: state.policyVersion },
    ]);
    setCurrentDetails(`${reason} after ${state.turn} turns · reward ${outcome.reward.toFixed(3)} · answer ${JSON.stringify(finalAnswer)}`);
    const result: TrajectoryResult = {
      trajectoryId,
      turns: state.turn,
      stopReason: reason,
      answer: finalAnswer,
      reward: outcome.reward,
      rewardParts: outcome.rewardParts,
      recordKey: outcome.recordKey,
      generatedTokens: state.generatedTokens,
      versionsUsed: state.versionsUsed,
    };
    if (input.reportTo) {
      try {
        await getExternalWorkflowHandle(input.reportTo).signal(trajectoryFinishedSignal, {
          ...result,
          runId: input.runId,
          questionId: input.questionId,
        });
      } catch {
        // The learner has closed (it finished its steps while this rollout ran): the record is saved, the trajectory succeeded.
      }
    }
    return result;
  }
}
