/**
 * Inputs of `trainStep` and `sftStep`, validated before anything else happens. Hyperparameters use
 * the engine's names (gpu/train/manifest.ts); any left out take the defaults below, so a
 * caller can pass `{ learningRate: 1e-4 }` alone. The staleness bound comes from the learner's η
 * (`eta`), not from the hyperparameters.
 */
import { z } from 'zod';
import { rlHyperparametersSchema, sftHyperparametersSchema, type RlHyperparameters, type SftHyperparameters } from './manifest.js';
import { InvalidBatchError } from './samples.js';

/** Defaults of an RL step (AReaL-style decoupled PPO, full fine-tuning). */
export const defaultRlHyperparameters: RlHyperparameters = {
  learningRate: 1e-5, weightDecay: 0.01, gradientClip: 1, microBatchSize: 4, trainable: { mode: 'full' }, emaDecay: null, seed: 0,
  ppo: {
    clipEpsilon: 0.2, importanceCap: 5, importanceCapMode: 'mask', aggregation: 'token', groupNormalise: true,
    turnDiscount: 1, entropyCoefficient: 0, minibatches: 1, maxStaleness: 4,
  },
};

/** Defaults of a supervised warm-start step. */
export const defaultSftHyperparameters: SftHyperparameters = {
  learningRate: 1e-5, weightDecay: 0.01, gradientClip: 1, microBatchSize: 4, trainable: { mode: 'full' }, emaDecay: null, seed: 0, epochs: 1,
};

/** Run ids become blob-key and folder segments. */
const runIdSchema = z.string().min(1).max(200).regex(/^[A-Za-z0-9_:-][A-Za-z0-9._:-]*$/, 'expected letters, digits, ".", "_", ":" or "-" (not starting with ".")');

const stepFields = {
  runId: runIdSchema,
  /** Training step within the run (0-based); with runId, the idempotency key. */
  step: z.number().int().min(0),
  /** The batch, as claimed from the buffer (`claimBatch`). */
  trajectoryIds: z.array(z.string().min(1)).min(1).refine((ids) => new Set(ids).size === ids.length, 'must not repeat a trajectory id'),
  baseVersion: z.number().int().min(0),
  /** Must be baseVersion + 1. */
  outputVersion: z.number().int().min(1),
};

const trainStepShape = z.object({
  ...stepFields,
  /** Trajectories per question (G); group normalisation needs G ≥ 2. */
  groupSize: z.number().int().min(1),
  /** The learner's η: when given, the one staleness bound of every check (hyperparameters.ppo.maxStaleness follows it). */
  eta: z.number().int().min(0).max(1000).optional(),
  hyperparameters: z.record(z.string(), z.unknown()).default({}),
}).strict();

const sftStepShape = z.object({ ...stepFields, hyperparameters: z.record(z.string(), z.unknown()).default({}) }).strict();

export type TrainStepRequest = Omit<z.infer<typeof trainStepShape>, 'hyperparameters'> & { readonly hyperparameters: RlHyperparameters };
export type SftStepRequest = Omit<z.infer<typeof sftStepShape>, 'hyperparameters'> & { readonly hyperparameters: SftHyperparameters };

/** Parse or throw InvalidBatchError "<field path>: <problem>". */
function parseOrRefuse<T>(schema: z.ZodType<T>, value: unknown, prefix = ''): T {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0]!;
  const where = [prefix, ...issue.path.map(String)].filter(Boolean).join('.');
  throw new InvalidBatchError(`${where || 'input'}: ${issue.message}`);
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

function checkVersions(input: { baseVersion: number; outputVersion: number }): void {
  if (input.outputVersion !== input.baseVersion + 1) {
    throw new InvalidBatchError(`outputVersion is ${input.outputVersion}, must be baseVersion + 1 = ${input.baseVersion + 1}`);
  }
}

export function parseTrainStepInput(raw: unknown): TrainStepRequest {
  const input = parseOrRefuse(trainStepShape, raw);
  checkVersions(input);
  const given = input.hyperparameters;
  if (given.ppo !== undefined && !isObject(given.ppo)) throw new InvalidBatchError('hyperparameters.ppo: expected an object');
  const givenPpo = isObject(given.ppo) ? given.ppo : {};
  if (input.eta !== undefined && givenPpo.maxStaleness !== undefined && givenPpo.maxStaleness !== input.eta) {
    throw new InvalidBatchError(`hyperparameters.ppo.maxStaleness is ${JSON.stringify(givenPpo.maxStaleness)} but the learner's η (settings.eta) is ${input.eta}: η is set once, on the learner; remove ppo.maxStaleness`);
  }
  const ppo = { ...defaultRlHyperparameters.ppo, ...givenPpo, ...(input.eta !== undefined ? { maxStaleness: input.eta } : {}) };
  const merged = { ...defaultRlHyperparameters, ...given, ppo };
  const hyperparameters = parseOrRefuse(rlHyperparametersSchema, merged, 'hyperparameters');
  if (hyperparameters.ppo.groupNormalise && input.groupSize < 2) {
    throw new InvalidBatchError(`groupSize is ${input.groupSize}, hyperparameters.ppo.groupNormalise needs at least 2 samples per group (G >= 2)`);
  }
  return { ...input, hyperparameters };
}

export function parseSftStepInput(raw: unknown): SftStepRequest {
  const input = parseOrRefuse(sftStepShape, raw);
  checkVersions(input);
  const hyperparameters = parseOrRefuse(sftHyperparametersSchema, { ...defaultSftHyperparameters, ...input.hyperparameters }, 'hyperparameters');
  return { ...input, hyperparameters };
}
