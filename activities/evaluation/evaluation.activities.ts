/**
 * The evaluation workflow's activities (agent queue): the frozen environment's hashes, scoring one
 * question's k samples (answer metrics and, when asked, the LLM judge with its rationale) into a blob,
 * and the result at the end (statistics.ts) as the blob `evaluations/<id>/result.json` plus an
 * evaluation_results row. Every write is idempotent: a retried or restarted evaluation writes the
 * same question blobs once and the row once.
 */
import { createHash } from 'node:crypto';
import { ApplicationFailure } from '@temporalio/activity';
import { z } from 'zod';
import type { BlobStore } from '../ports/blob-store.port.js';
import {
  evaluationQuestionSchema,
  evaluationResultSchema,
  evaluationResultSchemaName,
  type EvaluationResult,
} from '../ports/evaluation-result.schema.js';
import type { EvaluationResultStore } from '../ports/evaluation-store.port.js';
import type { Judge } from '../ports/judge.port.js';
import { trajectoryRecordSchema } from '../ports/trajectory-record.schema.js';
import { buildPrompt } from '../agent/prompt.js';
import { evaluationJudgePromptText, judgeWithRationale, type EvaluationJudgement } from '../reward/judge.js';
import { answerScores, evaluationStatistics } from './statistics.js';
import {
  evaluationKeys,
  type EvaluationActivities,
  type EvaluationOutcome,
  type ScoreQuestionInput,
} from '../../workflows/contracts/evaluation.contract.js';
import type { Protocol } from '../../workflows/contracts/trajectory.contract.js';
import { errorTypes, LonghaulError } from '../../workflows/contracts/errors.js';

export interface EvaluationDependencies {
  readonly blobs: BlobStore;
  readonly evaluations: EvaluationResultStore;
  /** The version of the corpus the tools search (a digest of the search corpus). */
  readonly corpusVersion: () => Promise<string>;
  readonly judge?: Judge | undefined;
}

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/** A stored question: the result's question entry plus what the result does not keep per question. */
const storedQuestionSchema = evaluationQuestionSchema.extend({
  index: z.number().int(),
  versionsUsed: z.array(z.number().int()),
});

async function judged(
  judge: Judge | undefined,
  question: string,
  golds: readonly string[],
  answer: string | null,
): Promise<EvaluationJudgement> {
  if (!judge)
    throw ApplicationFailure.nonRetryable(
      'scoreEvaluationQuestion: the evaluation asks for the LLM judge and this agent worker has none: set LONGHAUL_JUDGE_BASE_URL ' +
        '(or LONGHAUL_OPENAI_BASE_URL) and restart the agent worker, or evaluate without --judge',
      errorTypes.invalidInput,
    );
  try {
    return await judgeWithRationale(judge, question, golds, answer);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    const where = `the judge (model ${JSON.stringify(judge.model)} at ${judge.baseUrl})`;
    if (LonghaulError.is(error) && !error.retryable)
      throw ApplicationFailure.nonRetryable(
        `scoreEvaluationQuestion: ${where} refused the request: ${message}. Check LONGHAUL_JUDGE_MODEL and LONGHAUL_JUDGE_API_KEY`,
        errorTypes.invalidInput,
      );
    // Down is not wrong: retried until the judge answers, and nothing is scored meanwhile.
    throw ApplicationFailure.retryable(
      `scoreEvaluationQuestion: ${where} is unreachable or failing: ${message}. Retrying`,
      errorTypes.unavailable,
    );
  }
}

async function readJsonBlob(blobs: BlobStore, key: string): Promise<unknown> {
  return JSON.parse((await blobs.get(key)).toString('utf8')) as unknown;
}

export function createEvaluationActivities(deps: EvaluationDependencies): EvaluationActivities {
  const { blobs } = deps;
  return {
    async evaluationEnvironment(input) {
      const template = buildPrompt('{question}', [], {
        protocol: input.protocol as Protocol,
        contextMode: 'full',
        recentChars: 25_000,
        tools: input.tools,
        template: 'chatml',
      });
      return {
        corpusVersion: await deps.corpusVersion(),
        promptTemplateHash: sha256(template),
        ...(input.judge && deps.judge
          ? { judge: { model: deps.judge.model, baseUrl: deps.judge.baseUrl, promptHash: sha256(evaluationJudgePromptText) } }
          : {}),
      };
    },

    async evaluationQuestionDone({ resultId, index }) {
      return blobs.exists(evaluationKeys.question(resultId, index));
    },

    async scoreEvaluationQuestion(input: ScoreQuestionInput) {
      const key = evaluationKeys.question(input.resultId, input.index);
      if (await blobs.exists(key)) return { stored: false };
      const { question } = input;
      const samples = await Promise.all(
        input.samples.map(async (sample) => {
          const record = trajectoryRecordSchema.parse(await readJsonBlob(blobs, sample.recordKey));
          const scores: Record<string, number> = answerScores(sample.answer, question.answers);
          let judgeRationale: string | undefined;
          if (input.judge) {
            const judgement = await judged(deps.judge, question.question, question.answers, sample.answer);
            scores.judge = judgement.score;
            judgeRationale = judgement.rationale;
          }
          return {
            trajectoryId: sample.trajectoryId,
            answer: sample.answer,
            scores,
            turns: sample.turns,
            toolCalls: record.turnRecords.reduce((count, turn) => count + turn.tools.length, 0),
            stopReason: sample.stopReason,
            ...(judgeRationale !== undefined ? { judgeRationale } : {}),
          };
        }),
      );
      const stored = storedQuestionSchema.parse({
        index: input.index,
        questionId: question.id,
        question: question.question,
        answers: [...question.answers],
        samples,
        versionsUsed: [...new Set(input.samples.flatMap((sample) => sample.versionsUsed))].sort((a, b) => a - b),
      });
      await blobs.put(key, JSON.stringify(stored), 'application/json');
      return { stored: true };
    },

    async finishEvaluation(input): Promise<EvaluationOutcome> {
      const resultKey = evaluationKeys.result(input.resultId);
      let result: EvaluationResult;
      if (await blobs.exists(resultKey)) {
        result = evaluationResultSchema.parse(await readJsonBlob(blobs, resultKey));
      } else {
        const questions: z.infer<typeof storedQuestionSchema>[] = [];
        for (let start = 0; start < input.questions; start += 32) {
          const batch = Array.from({ length: Math.min(32, input.questions - start) }, (_, offset) => start + offset);
          questions.push(
            ...(await Promise.all(
              batch.map(async (index) =>
                storedQuestionSchema.parse(await readJsonBlob(blobs, evaluationKeys.question(input.resultId, index))),
              ),
            )),
          );
        }
        const statistics = evaluationStatistics(questions, { seed: input.seed });
        const versionsUsed = [...new Set(questions.flatMap((question) => question.versionsUsed))].sort((a, b) => a - b);
        result = evaluationResultSchema.parse({
          schema: evaluationResultSchemaName,
          summary: {
            resultId: input.resultId,
            dataset: input.dataset,
            datasetVersion: input.datasetVersion,
            questions: input.questions,
            k: input.k,
            policyVersion: input.policyVersion,
            ...statistics,
            ...(input.runId ? { runId: input.runId } : {}),
            ...(input.reproduces ? { reproduces: input.reproduces } : {}),
            seconds: input.seconds,
            createdAt: new Date().toISOString(),
          },
          environment: { datasetHash: input.datasetVersion, policyVersion: input.policyVersion, ...input.environment },
          perQuestion: questions.map(({ questionId, question, answers, samples }) => ({ questionId, question, answers, samples })),
        });
        // The versions that actually generated (the served version is weight sync's business) go beside the result.
        await blobs.put(resultKey, JSON.stringify({ ...result, versionsUsed }), 'application/json');
      }
      await deps.evaluations.insert({
        resultId: input.resultId,
        dataset: result.summary.dataset,
        datasetVersion: result.summary.datasetVersion,
        policyVersion: result.summary.policyVersion,
        k: result.summary.k,
        questions: result.summary.questions,
        runId: result.summary.runId ?? '',
        gitCommit: result.environment.commit ?? '',
        summary: result.summary,
        resultKey,
      });
      const { summary } = result;
      return {
        resultId: summary.resultId,
        dataset: summary.dataset,
        questions: summary.questions,
        k: summary.k,
        policyVersion: summary.policyVersion,
        avgAtK: summary.avgAtK,
        avgAtKCi95: summary.avgAtKCi95,
        passAtK: summary.passAtK,
        meanTurns: summary.meanTurns,
        meanToolCalls: summary.meanToolCalls,
        stopReasons: summary.stopReasons,
        seconds: summary.seconds,
        resultKey,
      };
    },
  };
}
