/**
 * Two stored evaluation results side by side, question by question (pure, no I/O): is version B
 * better than version A on this set? Questions are paired by id (and must ask the same thing); per
 * metric the Avg@k of each side over the paired questions, the paired difference after − before
 * with its seeded 95 % bootstrap interval, and how many questions rose, fell or stayed.
 */
import type { EvaluationMetric, EvaluationResult } from '../ports/evaluation-result.schema.js';
import { mean, pairedDifference, type PerQuestionScore } from './statistics.js';

/** Each question's mean over its samples of `metric` (0 where a sample lacks it, as no answer scores). */
export function questionScores(result: EvaluationResult, metric: EvaluationMetric): PerQuestionScore[] {
  return result.perQuestion.map((question) => ({
    questionId: question.questionId,
    score: mean(question.samples.map((sample) => sample.scores[metric] ?? 0)),
  }));
}

export interface ComparedSide {
  readonly resultId: string;
  readonly dataset: string;
  readonly datasetVersion: string;
  readonly policyVersion: number;
  readonly questions: number;
  readonly k: number;
  readonly temperature: number;
}

export interface MetricComparison {
  /** Avg@k over the paired questions. */
  readonly before: number;
  readonly after: number;
  /** Mean over the paired questions of after − before, and its 95 % bootstrap interval. */
  readonly difference: number;
  readonly ci95: [number, number];
  /** Questions whose score rose, fell, or did not move. */
  readonly improved: number;
  readonly worsened: number;
  readonly unchanged: number;
}

export interface EvaluationComparison {
  readonly before: ComparedSide;
  readonly after: ComparedSide;
  readonly paired: number;
  /** Question ids scored on one side only. */
  readonly beforeOnly: number;
  readonly afterOnly: number;
  /** Ids on both sides whose question text differs: not paired. */
  readonly mismatched: readonly string[];
  readonly metrics: Partial<Record<EvaluationMetric, MetricComparison>>;
}

function side(result: EvaluationResult): ComparedSide {
  return {
    resultId: result.summary.resultId,
    dataset: result.summary.dataset,
    datasetVersion: result.summary.datasetVersion,
    policyVersion: result.summary.policyVersion,
    questions: result.summary.questions,
    k: result.summary.k,
    temperature: result.environment.sampling.temperature,
  };
}

/** The metrics every sample of `questions` carries (the judge's only when every sample was judged). */
function sharedMetrics(questions: EvaluationResult['perQuestion']): EvaluationMetric[] {
  const samples = questions.flatMap((question) => question.samples);
  const names = new Set(samples.flatMap((sample) => Object.keys(sample.scores) as EvaluationMetric[]));
  return [...names].filter((metric) => samples.every((sample) => sample.scores[metric] !== undefined)).sort();
}

export function compareEvaluations(before: EvaluationResult, after: EvaluationResult, seed = 0): EvaluationComparison {
  const earlier = new Map(before.perQuestion.map((question) => [question.questionId, question]));
  const later = new Set(after.perQuestion.map((question) => question.questionId));
  const mismatched = after.perQuestion
    .filter((question) => earlier.has(question.questionId) && earlier.get(question.questionId)!.question !== question.question)
    .map((question) => question.questionId);
  const skip = new Set(mismatched);
  const pairedIds = new Set(after.perQuestion.map((q) => q.questionId).filter((id) => earlier.has(id) && !skip.has(id)));
  const keep = (result: EvaluationResult): EvaluationResult => ({
    ...result,
    perQuestion: result.perQuestion.filter((question) => pairedIds.has(question.questionId)),
  });
  const [first, second] = [keep(before), keep(after)];
  const afterMetrics = new Set(sharedMetrics(second.perQuestion));
  const metrics: Partial<Record<EvaluationMetric, MetricComparison>> = {};
  for (const metric of sharedMetrics(first.perQuestion).filter((name) => afterMetrics.has(name))) {
    const from = questionScores(first, metric);
    const to = questionScores(second, metric);
    const difference = pairedDifference(from, to, seed);
    const start = new Map(from.map((item) => [item.questionId, item.score]));
    const deltas = to.map((item) => item.score - start.get(item.questionId)!);
    metrics[metric] = {
      before: mean(from.map((item) => item.score)),
      after: mean(to.map((item) => item.score)),
      difference: difference.mean,
      ci95: difference.ci95,
      improved: deltas.filter((delta) => delta > 0).length,
      worsened: deltas.filter((delta) => delta < 0).length,
      unchanged: deltas.filter((delta) => delta === 0).length,
    };
  }
  return {
    before: side(before),
    after: side(after),
    paired: pairedIds.size,
    beforeOnly: before.perQuestion.filter((question) => !later.has(question.questionId)).length,
    afterOnly: after.perQuestion.filter((question) => !earlier.has(question.questionId)).length,
    mismatched,
    metrics,
  };
}
