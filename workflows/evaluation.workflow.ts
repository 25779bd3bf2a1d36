/**
 * The evaluation workflow (issue 11): k samples per question as trajectory children, at most
 * `concurrency` trajectories at once. Each question is scored and stored as a blob as soon as its k
 * samples finish, so a restarted evaluation skips what is done; the state carried across
 * continue-as-new is a few counters (it drains in-flight questions first). Tool observations go
 * through the frozen observations of the evaluation (scope = the result id, or the reproduced one's),
 * so `longhaul eval --reproduce` sees exactly what the original saw. The statistics and the result
 * are computed by `finishEvaluation` (activities/evaluation).
 */
import {
  condition,
  continueAsNew,
  executeChild,
  patched,
  proxyActivities,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import { activityOptions } from './contracts/activity-options.js';
import {
  evaluationRunId,
  evaluationStateQuery,
  evaluationTrajectoryId,
  type EvaluationActivities,
  type EvaluationCarried,
  type EvaluationInput,
  type EvaluationOutcome,
  type EvaluationSampleOutcome,
} from './contracts/evaluation.contract.js';
import { parseEvaluationInput } from './contracts/evaluation.input.js';
import type { LearnerActivities } from './contracts/learner.contract.js';
import { queuePrefixOf } from './contracts/queues.js';
import { searchAttributes } from './contracts/search-attributes.js';
import type { TrajectorySettings } from './contracts/trajectory.contract.js';
import { childTrajectoryInput } from './trajectory-child.js';
import { validated } from './validated.js';
import type { trajectory } from './trajectory.workflow.js';

/** Evaluations started before it named their samples `<result>-q<i>-s<j>`, which a run of the same name also uses. */
const evaluationTrajectoryIdsPatch = 'evaluation-trajectory-ids';

export async function evaluation(raw: EvaluationInput): Promise<EvaluationOutcome> {
  const input = validated(() => parseEvaluationInput(raw));
  const { taskQueue } = workflowInfo();
  const options = activityOptions(queuePrefixOf(taskQueue));
  const questions = proxyActivities<Pick<LearnerActivities, 'loadQuestion'>>(options.bookkeeping);
  const bookkeeping = proxyActivities<EvaluationActivities>(options.bookkeeping);
  // Scoring asks the judge, which may be down for a while: retried without limit, never scored 0.
  const scoring = proxyActivities<EvaluationActivities>(options.finish);
  const settings = input.trajectory;
  const protocol = settings.options?.protocol ?? 'tags';
  const offered = settings.options?.tools ?? ['search', 'access', 'answer'];
  const environment = await bookkeeping.evaluationEnvironment({ protocol, tools: offered, judge: input.judge });
  let run: EvaluationCarried = raw.carried ?? {
    next: 0,
    done: 0,
    startedAtMs: Date.now(),
    corpusVersion: input.corpusVersion ?? environment.corpusVersion,
  };
  const scope = input.reproduces ?? input.resultId;
  let inflight = 0;
  const capacity = Math.max(input.concurrency, input.k);
  setHandler(evaluationStateQuery, () => ({ resultId: input.resultId, questions: input.questions, done: run.done, inflight }));
  upsertSearchAttributes([
    { key: searchAttributes.kind, value: 'evaluation' },
    { key: searchAttributes.status, value: 'running' },
    { key: searchAttributes.dataset, value: input.dataset },
    { key: searchAttributes.policyVersion, value: input.policyVersion },
    ...(input.runId ? [{ key: searchAttributes.runId, value: input.runId }] : []),
  ]);

  async function evaluateQuestion(index: number): Promise<void> {
    try {
      if (await bookkeeping.evaluationQuestionDone({ resultId: input.resultId, index })) return;
      const question = await questions.loadQuestion({ datasetKey: input.datasetKey, index });
      if (!question)
        throw new Error(`question ${index} of ${input.datasetKey} is missing (the set has fewer than ${input.questions} rows)`);
      const sampleSettings: TrajectorySettings = {
        ...settings,
        options: { ...(settings.options ?? {}), seed: input.seed + index * input.k },
        frozenObservations: { scope, corpusVersion: run.corpusVersion },
      };
      const samples = await Promise.all(
        Array.from({ length: input.k }, async (_, sample): Promise<EvaluationSampleOutcome> => {
          const result = await executeChild<typeof trajectory>('trajectory', {
            workflowId: patched(evaluationTrajectoryIdsPatch)
              ? evaluationTrajectoryId(input.resultId, index, sample)
              : `${input.resultId}-q${index}-s${sample}`,
            args: [
              childTrajectoryInput({
                question,
                runId: evaluationRunId(input.resultId),
                datasetKey: input.dataset,
                policyVersion: input.policyVersion,
                sample,
                settings: sampleSettings,
              }),
            ],
          });
          return {
            trajectoryId: result.trajectoryId,
            answer: result.answer,
            turns: result.turns,
            stopReason: result.stopReason,
            recordKey: result.recordKey,
            versionsUsed: result.versionsUsed,
          };
        }),
      );
      await scoring.scoreEvaluationQuestion({ resultId: input.resultId, index, question, samples, judge: input.judge });
    } finally {
      inflight -= input.k;
    }
    run = { ...run, done: run.done + 1 };
  }

  const running = new Set<Promise<void>>();
  let failure: unknown;
  while (run.next < input.questions && failure === undefined) {
    if (workflowInfo().continueAsNewSuggested) {
      // Drain what is in flight (its children report to this run), then continue with counters only.
      await Promise.allSettled([...running]);
      if (failure !== undefined) break;
      await continueAsNew<typeof evaluation>({ ...raw, carried: run });
    }
    await condition(() => inflight + input.k <= capacity || failure !== undefined);
    if (failure !== undefined) break;
    const index = run.next;
    run = { ...run, next: index + 1 };
    inflight += input.k;
    const job: Promise<void> = evaluateQuestion(index)
      .catch((error: unknown) => {
        failure ??= error;
      })
      .finally(() => running.delete(job));
    running.add(job);
  }
  await Promise.allSettled([...running]);
  if (failure !== undefined) {
    upsertSearchAttributes([{ key: searchAttributes.status, value: 'failed' }]);
    throw failure;
  }
  const outcome = await bookkeeping.finishEvaluation({
    resultId: input.resultId,
    dataset: input.dataset,
    datasetVersion: input.datasetVersion,
    questions: input.questions,
    k: input.k,
    policyVersion: input.policyVersion,
    seed: input.seed,
    ...(input.runId ? { runId: input.runId } : {}),
    ...(input.reproduces ? { reproduces: input.reproduces } : {}),
    seconds: (Date.now() - run.startedAtMs) / 1000,
    environment: {
      corpusVersion: run.corpusVersion,
      promptTemplateHash: environment.promptTemplateHash,
      tools: {
        offered,
        protocol,
        maxCallsPerTurn: settings.options?.maxCallsPerTurn ?? 1,
        maxObservationChars: settings.options?.maxObservationChars ?? 5000,
        contextMode: settings.options?.contextMode ?? 'full',
        limits: settings.limits ?? {},
        observationScope: scope,
        // What --reproduce runs again.
        trajectory: settings,
        concurrency: input.concurrency,
      },
      sampling: {
        temperature: settings.options?.temperature ?? 0,
        topP: 1,
        maxNewTokens: settings.limits?.maxNewTokensPerTurn ?? 512,
        seed: input.seed,
      },
      ...(environment.judge ? { judge: environment.judge } : {}),
      ...(input.commit ? { commit: input.commit } : {}),
    },
  });
  upsertSearchAttributes([
    { key: searchAttributes.status, value: 'completed' },
    { key: searchAttributes.meanReward, value: outcome.avgAtK.em ?? 0 },
  ]);
  return outcome;
}
