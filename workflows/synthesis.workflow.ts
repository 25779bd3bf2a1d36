/**
 * The data-synthesis agent as durable workflows (issue 10; contract in contracts/synthesis.contract.ts).
 * `synthesizeQuestion`: one seed → one candidate: the synthesizer's actions (seed, inject, fuzz,
 * verify, exit) and the checks (quality, grounding, uniqueness, contamination, solvability with a
 * tool-using reference solver as trajectory children, difficulty from closed-book samples), every one
 * an activity, then the candidate's record. `synthesisRun`: tasks fanned out as children with bounded
 * concurrency, continue-as-new every `tasksPerExecution` tasks, then the dataset's publication.
 * A crash anywhere resumes from history: finished actions are not repeated, every task is recorded.
 */
import {
  continueAsNew,
  patched,
  proxyActivities,
  setHandler,
  startChild,
  upsertSearchAttributes,
  workflowInfo,
  ParentClosePolicy,
} from '@temporalio/workflow';
import type { GenerateActivityInput, GenerateActivityResult } from '../activities/policy.activities.js';
import { activityOptions, activityRetry } from './contracts/activity-options.js';
import { queuePrefixOf } from './contracts/queues.js';
import { searchAttributes } from './contracts/search-attributes.js';
import {
  synthesisRunStateQuery,
  type LlmUsage,
  type SolverAttempt,
  type SynthesisActivities,
  type SynthesisCandidate,
  type SynthesisRunInput,
  type SynthesisRunResult,
  type SynthesisRunState,
  type SynthesisState,
  type SynthesizeQuestionInput,
  type SynthesizeQuestionResult,
} from './contracts/synthesis.contract.js';
import { parseSynthesisRunInput, parseSynthesizeQuestionInput } from './contracts/synthesis.input.js';
import type { TrajectoryInput, TrajectoryResult } from './contracts/trajectory.contract.js';
import { validated } from './validated.js';
import type { trajectory } from './trajectory.workflow.js';

/** The closed-book prompt of the difficulty check (kept here: workflows build the request). */
const CLOSED_BOOK_SYSTEM = 'Answer the question from memory, without searching. Reply with only the answer inside <answer></answer>.';

/**
 * The synthesis activities are short (an indexed knowledge base in memory, a few queries): a minute
 * per attempt, so a task whose worker died is retried within a minute, not after the default two.
 */
const synthesisActivityOptions = { startToCloseTimeout: '1 minute', retry: activityRetry } as const;

/**
 * The LLM path's actions and its uniqueness check prompt a model (bounded attempts, each bounded by
 * the worker's LONGHAUL_SYNTH_LLM_TIMEOUT_SECONDS): ten minutes per activity attempt.
 */
const llmActivityOptions = { startToCloseTimeout: '10 minutes', retry: activityRetry } as const;

/** A task's own seed from the run's seed and its index (FNV-1a), so tasks differ and runs repeat. */
export function taskSeed(seed: number, taskIndex: number): number {
  let hash = 2166136261 ^ seed;
  for (const character of String(taskIndex)) hash = Math.imul(hash ^ character.charCodeAt(0), 16777619);
  return (hash >>> 0) % 2147483647;
}

export async function synthesizeQuestion(raw: SynthesizeQuestionInput): Promise<SynthesizeQuestionResult> {
  const input = validated(() => parseSynthesizeQuestionInput(raw));
  const { settings } = input;
  const { workflowId, taskQueue } = workflowInfo();
  const options = activityOptions(queuePrefixOf(taskQueue));
  const act = proxyActivities<SynthesisActivities>(synthesisActivityOptions);
  const llm = input.synthesizer === 'llm';
  // The actions of the LLM path run longer and carry the settings (endpoint, retry bound); the grounded path's stay as they were.
  const actions = llm ? proxyActivities<SynthesisActivities>(llmActivityOptions) : act;
  const withSettings = llm ? { settings } : {};
  const policy = proxyActivities<{ generate(input: GenerateActivityInput): Promise<GenerateActivityResult> }>(options.generate);
  const startedAtMs = Date.now();
  const seed = taskSeed(input.seed, input.taskIndex);
  let tokens = 0;
  // The chat model's calls (LLM path: every action and the uniqueness judge), from the endpoint's usage; part of the candidate's tokens.
  let llmUsage: LlmUsage = { calls: 0, promptTokens: 0, completionTokens: 0 };
  const countLlm = <T extends { llmUsage?: LlmUsage }>(outcome: T): T => {
    if (outcome.llmUsage)
      llmUsage = {
        calls: llmUsage.calls + outcome.llmUsage.calls,
        promptTokens: llmUsage.promptTokens + outcome.llmUsage.promptTokens,
        completionTokens: llmUsage.completionTokens + outcome.llmUsage.completionTokens,
      };
    return outcome;
  };
  upsertSearchAttributes([
    { key: searchAttributes.kind, value: 'synthesis' },
    { key: searchAttributes.status, value: 'running' },
    { key: searchAttributes.dataset, value: input.datasetId },
  ]);

  async function finish(
    accepted: boolean,
    reason: string,
    candidate: SynthesisCandidate | null,
    state: SynthesisState | null,
  ): Promise<SynthesizeQuestionResult> {
    await act.recordCandidate({
      datasetId: input.datasetId,
      taskIndex: input.taskIndex,
      workflowId,
      accepted,
      reason,
      candidate,
      state,
      seconds: (Date.now() - startedAtMs) / 1000,
      tokens: tokens + llmUsage.promptTokens + llmUsage.completionTokens,
      ...(llm ? { llmUsage } : {}),
    });
    upsertSearchAttributes([{ key: searchAttributes.status, value: accepted ? 'accepted' : 'rejected' }]);
    return {
      datasetId: input.datasetId,
      taskIndex: input.taskIndex,
      workflowId,
      accepted,
      reason,
      question: candidate?.question ?? null,
      answer: candidate?.answer ?? null,
    };
  }

  // Synthesis: seed, then inject until the target hop count, then fuzz; each edit is verified and undone when it fails.
  const seeded = countLlm(
    await actions.synthesisSeed({ synthesizer: input.synthesizer, seed, taskIndex: input.taskIndex, ...withSettings }),
  );
  if (!seeded.state) return finish(false, `synthesis: ${seeded.reason}`, null, null);
  let state: SynthesisState = seeded.state;
  let lastFailure = '';
  for (let round = 0; round < settings.maxRounds; round += 1) {
    const hops = state.nodes.length - 1;
    const action = hops < settings.targetHops ? 'inject' : state.fuzzes < settings.targetFuzzes ? 'fuzz' : null;
    if (action === null) break;
    const outcome = countLlm(
      action === 'inject'
        ? await actions.synthesisInject({ state, seed, round, final: hops + 1 >= settings.targetHops, ...withSettings })
        : await actions.synthesisFuzz({ state, seed, round, ...withSettings }),
    );
    if (!outcome.state) {
      lastFailure = `${action}: ${outcome.reason}`;
      state = { ...state, actions: [...state.actions, { action, ok: false, detail: outcome.reason }] };
      break; // nothing more of this kind can be done
    }
    const check = countLlm(await actions.synthesisVerify({ state: outcome.state, ...withSettings }));
    if (check.ok) state = outcome.state;
    else {
      lastFailure = `verify: ${check.reason}`;
      state = { ...state, actions: [...state.actions, { action: 'verify', ok: false, detail: check.reason }] };
    }
  }
  const hops = state.nodes.length - 1;
  if (hops < settings.targetHops)
    return finish(false, `synthesis: reached ${hops} of ${settings.targetHops} hops${lastFailure ? ` (${lastFailure})` : ''}`, null, state);
  const exited = countLlm(await actions.synthesisExit({ state, ...withSettings }));
  const candidate = exited.candidate;
  if (!candidate) return finish(false, `synthesis: ${exited.reason}`, null, state);

  // Checks, cheapest first; a candidate stops at its first failed check. The LLM path's uniqueness needs the baselines' answers: it comes after them.
  for (const check of llm
    ? [act.checkQuality, act.checkGrounding, act.checkContamination]
    : [act.checkQuality, act.checkGrounding, act.checkUniqueness, act.checkContamination]) {
    const verdict = await check({ workflowId, candidate });
    if (!verdict.passed) return finish(false, `${verdict.check}: ${verdict.reason}`, candidate, null);
  }

  // Solvability: the reference solver, as trajectory children: by default it follows the gold path through the
  // real tools (teacher forcing); with solverMode "policy" the reference policy searches on its own (pass@k).
  const attempts: SolverAttempt[] = [];
  const goldReplay = settings.solverMode !== 'policy';
  for (let attempt = 0; attempt < settings.solverAttempts; attempt += 1) {
    const child: TrajectoryInput = {
      question: candidate.question,
      answers: [candidate.answer],
      questionId: `${input.datasetId}:${input.taskIndex}`,
      dataset: input.datasetId,
      runId: input.datasetId,
      ...(goldReplay ? { forcedTurns: candidate.goldTurns } : {}),
      // Since the patch the replay does not ask the policy to score the gold turns (a forward pass per turn,
      // ~30 s a task under load): solvability reads only the tool observations and the answer.
      ...(goldReplay && patched('synthesis-solver-unscored') ? { scoreForcedTurns: false } : {}),
      limits: goldReplay
        ? { maxTurns: candidate.goldTurns.length + 2, maxNewTokensPerTurn: 1024 }
        : { maxTurns: settings.solverMaxTurns, maxNewTokensPerTurn: 1024 },
      options: { seed: seed + attempt },
      rewardMetric: 'em',
    };
    const handle = await startChild<typeof trajectory>('trajectory', {
      workflowId: `${workflowId}-solver-${attempt}`,
      args: [child],
      parentClosePolicy: ParentClosePolicy.TERMINATE,
    });
    const result: TrajectoryResult = await handle.result();
    tokens += result.generatedTokens;
    attempts.push({
      trajectoryId: result.trajectoryId,
      reward: result.reward,
      answer: result.answer,
      turns: result.turns,
      recordKey: result.recordKey,
    });
  }
  const solvability = await act.checkSolvability({ workflowId, candidate, attempts, ...(goldReplay ? {} : { mode: 'policy' as const }) });
  if (!solvability.passed) return finish(false, `solvability: ${solvability.reason}`, candidate, null);

  // The evidence-only check: the reference policy gets the gold passages plus distractors found by searching the
  // question, and no tools. Recorded beside the solver's verdict; it rejects only with evidenceCheck "gate".
  // Off by default on the grounded path (its answers are proved), so its histories do not change.
  const evidenceMode = settings.evidenceCheck ?? (llm ? 'record' : 'off');
  if (evidenceMode !== 'off' && patched('synthesis-evidence-only')) {
    const prompt = await act.evidenceOnlyPrompt({ workflowId, candidate, distractors: settings.evidenceDistractors, seed });
    const generation = await policy.generate({
      key: `synthesis/${workflowId}/evidence-only`,
      request: {
        prompt: candidate.question,
        messages: [...prompt.messages],
        maxNewTokens: settings.closedBookMaxTokens,
        temperature: 0,
        seed,
        stop: ['</answer>'],
      },
    });
    tokens += generation.generatedTokens;
    const evidence = await act.checkEvidenceOnly({
      workflowId,
      candidate,
      prompt,
      reply: generation.text,
      gate: evidenceMode === 'gate',
      tokens: generation.generatedTokens,
    });
    if (!evidence.passed && evidenceMode === 'gate') return finish(false, `evidence: ${evidence.reason}`, candidate, null);
  }

  // Difficulty: n closed-book samples of the configured policy, no tools. Since the patch they are asked
  // for together, so the batching policy decodes them in one running batch instead of n one after another.
  const closedBook = (sample: number) =>
    policy.generate({
      key: `synthesis/${workflowId}/closed-book-${sample}`,
      request: {
        prompt: candidate.question,
        messages: [
          { role: 'system', content: CLOSED_BOOK_SYSTEM },
          { role: 'user', content: candidate.question },
        ],
        maxNewTokens: settings.closedBookMaxTokens,
        temperature: 1,
        seed: seed + sample,
        stop: ['</answer>'],
      },
    });
  const sampleIndices = Array.from({ length: settings.difficultySamples }, (_, sample) => sample);
  const generations: GenerateActivityResult[] = [];
  if (patched('synthesis-closed-book-together')) generations.push(...(await Promise.all(sampleIndices.map(closedBook))));
  else for (const sample of sampleIndices) generations.push(await closedBook(sample));
  const samples: string[] = generations.map((generation) => generation.text);
  for (const generation of generations) tokens += generation.generatedTokens;
  if (llm) {
    const uniqueness = countLlm(await actions.checkUniqueness({ workflowId, candidate, samples, attempts, settings }));
    if (!uniqueness.passed) return finish(false, `uniqueness: ${uniqueness.reason}`, candidate, null);
  }
  const difficulty = await act.checkDifficulty({
    workflowId,
    candidate,
    samples,
    threshold: settings.difficultyThreshold,
    solverPassRate: Number(solvability.details.passRate ?? 0),
  });
  if (!difficulty.passed) return finish(false, `difficulty: ${difficulty.reason}`, candidate, null);
  return finish(true, 'accepted', candidate, null);
}

export async function synthesisRun(raw: SynthesisRunInput): Promise<SynthesisRunResult> {
  const input = validated(() => parseSynthesisRunInput(raw));
  const act = proxyActivities<SynthesisActivities>(synthesisActivityOptions);
  const carried = raw.carried ?? { nextIndex: 0, accepted: 0, finished: 0, startedAtMs: Date.now() };
  let { nextIndex, accepted, finished } = carried;
  let phase: SynthesisRunState['phase'] = 'synthesizing';
  setHandler(synthesisRunStateQuery, (): SynthesisRunState => ({
    datasetId: input.datasetId,
    phase,
    count: input.count,
    started: nextIndex,
    finished,
    accepted,
  }));
  upsertSearchAttributes([
    { key: searchAttributes.kind, value: 'synthesis-run' },
    { key: searchAttributes.status, value: 'running' },
    { key: searchAttributes.dataset, value: input.datasetId },
  ]);
  if (!raw.carried)
    await act.synthesisBegin({ datasetId: input.datasetId, synthesizer: input.synthesizer, seed: input.seed, settings: input.settings });

  const running = new Set<Promise<void>>();
  const limit = Math.min(input.count, nextIndex + input.tasksPerExecution);
  while (nextIndex < limit) {
    while (running.size >= input.concurrency) await Promise.race(running);
    const taskIndex = nextIndex;
    nextIndex += 1;
    const taskInput: SynthesizeQuestionInput = {
      datasetId: input.datasetId,
      taskIndex,
      seed: input.seed,
      synthesizer: input.synthesizer,
      settings: input.settings,
    };
    const handle = await startChild<typeof synthesizeQuestion>('synthesizeQuestion', {
      workflowId: `${input.datasetId}-task-${taskIndex}`,
      args: [taskInput],
      parentClosePolicy: ParentClosePolicy.TERMINATE,
    });
    const done: Promise<void> = handle
      .result()
      .then(
        (result) => {
          if (result.accepted) accepted += 1;
        },
        async (error: unknown) => {
          // A task that failed outright is still a recorded task: a rejection with the failure as its reason.
          await act.recordCandidate({
            datasetId: input.datasetId,
            taskIndex,
            workflowId: handle.workflowId,
            accepted: false,
            reason: `failed: ${String((error as Error).cause instanceof Error ? ((error as Error).cause as Error).message : (error as Error).message).slice(0, 300)}`,
            candidate: null,
            state: null,
            seconds: 0,
            tokens: 0,
          });
        },
      )
      .finally(() => {
        finished += 1;
        running.delete(done);
      });
    running.add(done);
  }
  await Promise.all(running);
  if (nextIndex < input.count)
    await continueAsNew<typeof synthesisRun>({ ...raw, carried: { nextIndex, accepted, finished, startedAtMs: carried.startedAtMs } });

  phase = 'publishing';
  const result = await act.publishDataset({ datasetId: input.datasetId, count: input.count });
  phase = 'done';
  upsertSearchAttributes([{ key: searchAttributes.status, value: 'completed' }]);
  return { ...result, wallSeconds: (Date.now() - carried.startedAtMs) / 1000 };
}
