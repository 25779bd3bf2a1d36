/**
 * finishTrajectory: scores the answer and writes the trajectory record once (blob + row, keyed by
 * workflow id), so retries and resumes never duplicate it. Runs on the agent queue. With
 * rewardMetric "judge" nothing is written until the judge has answered: a judge that is down fails
 * the activity retryably; one that refuses the request, or none configured, fails it for good.
 */
import { ApplicationFailure } from '@temporalio/activity';
import type { BlobStore } from '../ports/blob-store.port.js';
import type { Judge } from '../ports/judge.port.js';
import type { TrajectoryRow, TrajectoryStore } from '../ports/trajectory-store.port.js';
import { trajectoryRecordSchema, trajectoryRecordSchemaName, type TrajectoryRecord } from '../ports/trajectory-record.schema.js';
import { parseActivityInput } from '../activity-input.js';
import type { FinishTrajectoryInput, FinishTrajectoryResult } from '../../workflows/contracts/agent-turn.contract.js';
import { rewardMetrics } from '../../workflows/contracts/trajectory.contract.js';
import { errorTypes, LonghaulError } from '../../workflows/contracts/errors.js';
import { judgeAnswer, type JudgeOutcome } from '../reward/judge.js';
import { scoreAnswer } from '../reward/metrics.js';
import { readableText } from '../../workflows/contracts/readable-text.js';
import { readJson, transcriptKeys, type GenerationRecord, type ToolsRecord } from './transcript.js';

export interface FinishDependencies {
  readonly blobs: BlobStore;
  readonly trajectories: TrajectoryStore;
  /** The LLM judge for rewardMetric "judge" (absent: such trajectories fail at scoring, naming the variable to set). */
  readonly judge?: Judge;
}

/** The reward metrics that need no judge, as the error names them: "em", "f1", … or "em_format". */
const answerMetrics = rewardMetrics
  .filter((metric) => metric !== 'judge')
  .map((metric) => JSON.stringify(metric))
  .join(', ')
  .replace(/, ([^,]*)$/, ' or $1');

async function judged(judge: Judge | undefined, input: FinishTrajectoryInput): Promise<JudgeOutcome> {
  if (!judge) {
    throw ApplicationFailure.nonRetryable(
      'finishTrajectory: rewardMetric "judge" needs an LLM judge and this agent worker has none: set LONGHAUL_JUDGE_BASE_URL ' +
        `(or LONGHAUL_OPENAI_BASE_URL) to an OpenAI-compatible /v1 endpoint and restart the agent worker, or use rewardMetric ${answerMetrics}`,
      errorTypes.invalidInput,
    );
  }
  try {
    return await judgeAnswer(judge, input.question, input.answers, input.answer);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    const refused = LonghaulError.is(error) && !error.retryable;
    const where = `the judge (model ${JSON.stringify(judge.model)} at ${judge.baseUrl})`;
    if (refused) {
      throw ApplicationFailure.nonRetryable(
        `finishTrajectory: ${where} refused the request: ${message}. Check LONGHAUL_JUDGE_MODEL and LONGHAUL_JUDGE_API_KEY`,
        errorTypes.invalidInput,
      );
    }
    throw ApplicationFailure.retryable(
      `finishTrajectory: ${where} is unreachable or failing: ${message}. Retrying; nothing is recorded until it answers`,
      errorTypes.unavailable,
    );
  }
}

/**
 * A trajectory's id keys its transcript and its record: a second workflow under the same id replays
 * the first one's turns and gets its row back. That is the point for a retry or a resume of the same
 * trajectory; for another run's or another question's trajectory it is a silent swap (an evaluation
 * once scored a learner's training trajectories as its held-out answers this way). Refused, for good.
 */
function refuseForeignTrajectory(existing: TrajectoryRow, input: FinishTrajectoryInput): void {
  const mine = { runId: readableText(input.runId), questionId: readableText(input.questionId), question: readableText(input.question) };
  const differing = (['runId', 'questionId', 'question'] as const).filter((field) => existing[field] !== mine[field]);
  if (differing.length === 0) return;
  throw ApplicationFailure.nonRetryable(
    `finishTrajectory: trajectory id ${JSON.stringify(input.trajectoryId)} already holds another trajectory ` +
      `(run ${JSON.stringify(existing.runId)}, question ${JSON.stringify(existing.questionId)}); this one is run ` +
      `${JSON.stringify(mine.runId)}, question ${JSON.stringify(mine.questionId)} (${differing.join(', ')} differ), and replayed its turns. ` +
      'Give this run, evaluation or warm start an id no earlier one used',
    errorTypes.corrupt,
  );
}

async function readTurns(blobs: BlobStore, id: string, turns: number) {
  const out: { generation: GenerationRecord; tools?: ToolsRecord }[] = [];
  for (let start = 0; start < turns; start += 32) {
    const batch = Array.from({ length: Math.min(32, turns - start) }, (_, index) => start + index);
    out.push(
      ...(await Promise.all(
        batch.map(async (turn) => {
          const generation = await readJson<GenerationRecord>(blobs, transcriptKeys.generation(id, turn));
          if (!generation) throw new Error(`record of ${id}: generation of turn ${turn} is missing`);
          const tools = generation.action.kind === 'tools' ? await readJson<ToolsRecord>(blobs, transcriptKeys.tools(id, turn)) : undefined;
          return tools ? { generation, tools } : { generation };
        }),
      )),
    );
  }
  return out;
}

export function createFinishActivities({ blobs, trajectories, judge }: FinishDependencies) {
  return {
    async finishTrajectory(input: FinishTrajectoryInput): Promise<FinishTrajectoryResult> {
      const existing = await trajectories.get(input.trajectoryId);
      if (existing) {
        refuseForeignTrajectory(existing, input);
        return { reward: existing.reward, rewardParts: existing.rewardParts, recordKey: existing.recordKey, written: false };
      }
      const turns = await readTurns(blobs, input.trajectoryId, input.turns);
      // What is scored and written to Postgres (text and jsonb refuse NUL; unpaired surrogates are not Unicode): the
      // parser already cleans answers, this also covers questions, gold answers and ids from a dataset or a hand-started
      // workflow. The record keeps the question and gold answers as given and every turn's raw text.
      const answer = input.answer === null ? null : readableText(input.answer);
      const gold = input.answers.map(readableText);
      const { parts, errors } = scoreAnswer(
        answer,
        gold,
        { turns: input.turns, invalidSteps: input.invalidSteps, answered: input.answer !== null },
        { formatWeight: input.rewardFormatWeight, formatCredit: input.rewardFormatCredit },
      );
      const judgement =
        input.rewardMetric === 'judge'
          ? await judged(judge, { ...input, question: readableText(input.question), answer, answers: gold })
          : undefined;
      if (judgement) {
        parts.judge = judgement.score;
        if (judgement.error) errors.judge = judgement.error;
      }
      // No gold answer: nothing to score. No answer given: rewardUnanswered (default 0), whatever the metric.
      const reward = input.answers.length === 0 ? 0 : answer === null ? (input.rewardUnanswered ?? 0) : (parts[input.rewardMetric] ?? 0);
      const recordKey = transcriptKeys.record(input.trajectoryId);
      const candidate: TrajectoryRecord = {
        schema: trajectoryRecordSchemaName,
        trajectoryId: input.trajectoryId,
        runId: input.runId,
        dataset: input.dataset,
        questionId: input.questionId,
        question: input.question,
        answers: [...input.answers],
        answer,
        stopReason: input.stopReason,
        turns: input.turns,
        invalidSteps: input.invalidSteps,
        generatedTokens: input.generatedTokens,
        versionsUsed: [...input.versionsUsed],
        rewardMetric: input.rewardMetric,
        reward,
        rewardParts: parts,
        rewardErrors: errors,
        ...(judgement ? { judge: { ...judgement, messages: judgement.messages && [...judgement.messages] } } : {}),
        // False when some turn's server returned no token ids or logprobs (see GenerateResult.untrainable).
        trainable: turns.every(({ generation }) => generation.untrainable === undefined),
        ...(input.forkOf ? { forkOf: { trajectoryId: input.forkOf.trajectoryId, turn: input.forkOf.turn } } : {}),
        turnRecords: turns.map(({ generation, tools }) => ({
          turn: generation.turn,
          policyVersion: generation.policyVersion,
          tokenVersions: [...generation.tokenVersions],
          promptTokenIds: [...generation.promptTokenIds],
          tokenIds: [...generation.tokenIds],
          // JSON has no NaN or Infinity (it would write null anyway): say so explicitly; the trainer refuses such a turn.
          logprobs: generation.logprobs.map((logprob) => (Number.isFinite(logprob) ? logprob : null)),
          text: generation.text,
          action: generation.action,
          finishReason: generation.finishReason,
          interruptions: generation.interruptions,
          ...(generation.temperature !== undefined ? { temperature: generation.temperature } : {}),
          ...(generation.untrainable ? { untrainable: { ...generation.untrainable, missing: [...generation.untrainable.missing] } } : {}),
          tools: (tools?.results ?? []).map((result) => ({
            tool: result.tool,
            ok: result.ok,
            invalid: result.invalid,
            latencyMs: result.latencyMs,
            cacheHit: result.cacheHit,
            truncated: result.truncated,
            documentIds: [...result.documentIds],
          })),
        })),
      };
      // Validated before it is written: the record is immutable, a malformed one must never reach the trainer.
      const record = parseActivityInput('finishTrajectory: trajectory record', trajectoryRecordSchema, candidate);
      await blobs.put(recordKey, JSON.stringify(record), 'application/json');
      const written = await trajectories.insert({
        trajectoryId: input.trajectoryId,
        runId: readableText(input.runId),
        dataset: readableText(input.dataset),
        questionId: readableText(input.questionId),
        question: readableText(input.question),
        answer,
        gold,
        reward,
        rewardParts: parts,
        stopReason: input.stopReason,
        turns: input.turns,
        invalidSteps: input.invalidSteps,
        generatedTokens: input.generatedTokens,
        versions: [...input.versionsUsed],
        recordKey,
      });
      return { reward, rewardParts: parts, recordKey, written };
    },
  };
}

export type FinishActivities = ReturnType<typeof createFinishActivities>;
