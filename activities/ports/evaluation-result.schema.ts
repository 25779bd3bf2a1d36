/**
 * The evaluation result (`longhaul eval`), one zod schema shared by the writer (the evaluation
 * workflow's activities) and the readers (`longhaul report`, schedules, `--reproduce`).
 *
 * Stored twice: the summary row in Postgres table `evaluation_results` (migration
 * 0060_evaluation_results.sql; `summary` is `evaluationSummarySchema`), and the full result with every
 * sample as the blob `evaluations/<resultId>/result.json` (`evaluationResultSchema`).
 * Metrics are averaged over the k samples of each question, then over questions (Avg@k), with a 95 %
 * bootstrap interval over questions; Pass@k is the share of questions with at least one sample scoring 1.
 * Never best-of-k.
 */
import { z } from 'zod';

export const evaluationResultSchemaName = 'longhaul.evaluation/1';

/**
 * em: exact match after SQuAD normalisation; f1_asearcher: token-set F1 (ASearcher);
 * f1_flashrag: bag-of-tokens F1 (FlashRAG); cover_em: a normalised gold answer appears in the
 * normalised prediction; judge: the LLM judge's verdict (1 correct, else 0).
 */
export const evaluationMetrics = ['em', 'f1_asearcher', 'f1_flashrag', 'cover_em', 'judge'] as const;
export type EvaluationMetric = (typeof evaluationMetrics)[number];

const metricValues = z.partialRecord(z.enum(evaluationMetrics), z.number());
const metricIntervals = z.partialRecord(z.enum(evaluationMetrics), z.tuple([z.number(), z.number()]));

/** Everything that made the result, so that `--reproduce` can run it again identically. */
export const frozenEnvironmentSchema = z.object({
  /** sha256 of the normalised question rows evaluated, in order. */
  datasetHash: z.string(),
  corpusVersion: z.string(),
  promptTemplateHash: z.string(),
  tools: z.unknown(),
  sampling: z.object({
    temperature: z.number(),
    topP: z.number(),
    maxNewTokens: z.number().int(),
    /** Seed of sample j of question i is derived from this base seed. */
    seed: z.number().int(),
  }),
  policyVersion: z.number().int(),
  judge: z.object({ model: z.string(), baseUrl: z.string(), promptHash: z.string() }).optional(),
  /** git commit of the code that ran it, when known. */
  commit: z.string().optional(),
});

export const evaluationSampleSchema = z.object({
  trajectoryId: z.string(),
  answer: z.string().nullable(),
  scores: metricValues,
  turns: z.number().int(),
  toolCalls: z.number().int(),
  stopReason: z.string(),
  /** The judge's rationale, when judged. */
  judgeRationale: z.string().optional(),
});

export const evaluationQuestionSchema = z.object({
  questionId: z.string(),
  question: z.string(),
  answers: z.array(z.string()),
  samples: z.array(evaluationSampleSchema),
});

export const evaluationSummarySchema = z.object({
  resultId: z.string(),
  dataset: z.string(),
  datasetVersion: z.string(),
  questions: z.number().int(),
  k: z.number().int().min(1),
  policyVersion: z.number().int(),
  avgAtK: metricValues,
  avgAtKCi95: metricIntervals,
  passAtK: metricValues,
  /** Means over all samples. */
  meanTurns: z.number(),
  meanToolCalls: z.number(),
  stopReasons: z.record(z.string(), z.number().int()),
  /** The run (learner, demo) it belongs to, when any. */
  runId: z.string().optional(),
  /** The result this one reproduces, when `--reproduce`. */
  reproduces: z.string().optional(),
  seconds: z.number(),
  createdAt: z.string(),
});

export const evaluationResultSchema = z.object({
  schema: z.literal(evaluationResultSchemaName),
  summary: evaluationSummarySchema,
  environment: frozenEnvironmentSchema,
  perQuestion: z.array(evaluationQuestionSchema),
});

export type EvaluationSummary = z.infer<typeof evaluationSummarySchema>;
export type EvaluationResult = z.infer<typeof evaluationResultSchema>;
export type FrozenEnvironment = z.infer<typeof frozenEnvironmentSchema>;
