/**
 * The trajectory record (blob `trajectories/<id>/record.json`), one zod schema: finishTrajectory
 * (activities/agent/finish.activities.ts) builds it typed and validates it before writing; readers
 * (the trainer and the warm start through gpu/train/batch.ts, later evaluation and reports)
 * `.pick()` the fields they need, so a record with more fields still reads. Objects are not
 * strict for that reason: an unknown field is dropped on read, never an error.
 */
import { z } from 'zod';
import { rewardMetrics, stopReasons } from '../../workflows/contracts/trajectory.contract.js';
import { finishReasons, tokenCountSources, trainingFields } from './policy.port.js';

export const trajectoryRecordSchemaName = 'longhaul.trajectory/1';

const tokenIds = z.array(z.number().int().min(0));

/** One tool call of a turn, without its observation text (that is in the turn's tools blob). */
export const toolCallSummarySchema = z.object({
  tool: z.string(),
  ok: z.boolean(),
  invalid: z.boolean(),
  latencyMs: z.number().min(0),
  cacheHit: z.boolean(),
  truncated: z.boolean(),
  documentIds: z.array(z.string()),
});

const parsedActionSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('tools'), calls: z.array(z.object({ tool: z.string(), input: z.unknown() })).readonly() }),
  z.object({ kind: z.literal('answer'), answer: z.string() }),
  z.object({ kind: z.literal('invalid'), reason: z.string() }),
]);

/** The LLM judge's verdicts (rewardMetric "judge"). */
export const judgeVerdicts = ['correct', 'incorrect', 'none', 'no answer'] as const;
export type JudgeVerdict = (typeof judgeVerdicts)[number];

/** The judge's grading as recorded: model, endpoint, prompt and reply, so that a score can be audited. */
export const judgementSchema = z.object({
  score: z.union([z.literal(0), z.literal(1)]),
  verdict: z.enum(judgeVerdicts),
  /** Why the score is 0 without an "incorrect" verdict. */
  error: z.string().optional(),
  model: z.string().optional(),
  baseUrl: z.string().optional(),
  messages: z.array(z.object({ role: z.string(), content: z.string() })).optional(),
  /** The judge's reply, first 500 characters. */
  reply: z.string().optional(),
});

export const turnRecordSchema = z.object({
  turn: z.number().int().min(0),
  /** The version the turn asked for; tokenVersions says which version generated each token. */
  policyVersion: z.number().int(),
  promptTokenIds: tokenIds,
  tokenIds,
  /** Behaviour logprob per generated token; null where the backend gave none that is finite (JSON has no NaN or Infinity): such a turn cannot be trained on. */
  logprobs: z.array(z.number().nullable()),
  tokenVersions: z.array(z.number().int()),
  text: z.string(),
  action: parsedActionSchema,
  finishReason: z.enum(finishReasons),
  /** How many times the generation was interrupted and resumed. */
  interruptions: z.number().int().min(0),
  /**
   * Sampling temperature of the turn (0 = greedy). The behaviour logprobs are log-softmax(logits / T) at
   * top-p 1 (greedy: T = 1); the trainer scores at the same T. Absent in records written before it was kept: T = 1.
   */
  temperature: z.number().min(0).optional(),
  /** Present when the server sent no token ids or logprobs for this turn: what is missing and how its tokens were counted. */
  untrainable: z
    .object({ missing: z.array(z.enum(trainingFields)), generatedTokens: z.number().int().min(0), countedFrom: z.enum(tokenCountSources) })
    .optional(),
  tools: z.array(toolCallSummarySchema),
});

export const trajectoryRecordSchema = z.object({
  schema: z.literal(trajectoryRecordSchemaName),
  trajectoryId: z.string().min(1),
  runId: z.string(),
  dataset: z.string(),
  questionId: z.string(),
  question: z.string(),
  /** Gold answers. */
  answers: z.array(z.string()),
  answer: z.string().nullable(),
  stopReason: z.enum(stopReasons),
  turns: z.number().int().min(0),
  invalidSteps: z.number().int().min(0),
  generatedTokens: z.number().int().min(0),
  versionsUsed: z.array(z.number().int()),
  rewardMetric: z.enum(rewardMetrics),
  /** The reward the trainer uses: rewardParts[rewardMetric] (0 without gold answers). */
  reward: z.number(),
  rewardParts: z.record(z.string(), z.number()),
  /** Why a reward part scored 0 because its metric failed (e.g. the judge). */
  rewardErrors: z.record(z.string(), z.string()),
  /** The judge's grading, when rewardMetric is "judge". */
  judge: judgementSchema.optional(),
  /** False when some turn's server returned no token ids or logprobs: the trainer cannot use this trajectory. */
  trainable: z.boolean(),
  /** A fork (`longhaul fork`): the parent trajectory and the turn it branched at; turns before it replay the parent's text. */
  forkOf: z.object({ trajectoryId: z.string().min(1), turn: z.number().int().min(0) }).optional(),
  turnRecords: z.array(turnRecordSchema),
});

export type TurnRecord = z.infer<typeof turnRecordSchema>;
export type TrajectoryRecord = z.infer<typeof trajectoryRecordSchema>;

/** What training reads of a record (RL samples and the warm start's SFT samples): tokens, logprobs, versions, reward, group. */
export const trainingRecordSchema = trajectoryRecordSchema
  .pick({ trajectoryId: true, runId: true, questionId: true, reward: true })
  .extend({
    turnRecords: z.array(
      turnRecordSchema.pick({ turn: true, promptTokenIds: true, tokenIds: true, logprobs: true, tokenVersions: true, temperature: true }),
    ),
  });
export type TrainingRecord = z.infer<typeof trainingRecordSchema>;
