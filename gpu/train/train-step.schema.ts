/**
 * Inputs of `trainStep` and `sftStep`, validated before anything else happens. Hyperparameters use
 * the engine's names (gpu/train/manifest.ts); any left out take the defaults below, so a
 * caller can pass `{ learningRate: 1e-4 }` alone. The staleness bound comes from the learner's η
 * (`eta`), not from the hyperparameters.
 */
import { z } from 'zod';
import { rlHyperparametersSchema, sftHyperparametersSchema, type RlHyperparameters, type SftHyperparameters } from './manifest.js';
import { errorTypes, LonghaulError } from '../../workflows/contracts/errors.js';

/** Defaults every step shares (optimizer, trainable parameters, EMA, seed). */
const commonDefaults = {
  learningRate: 1e-5,
  weightDecay: 0.01,
  gradientClip: 1,
  microBatchSize: 4,
  trainable: { mode: 'full' },
  emaDecay: null,
  seed: 0,
} as const satisfies Partial<RlHyperparameters & SftHyperparameters>;

/** Defaults of an RL step (AReaL-style decoupled PPO, full fine-tuning). */
export const defaultRlHyperparameters: RlHyperparameters = {
  ...commonDefaults,
  ppo: {
    clipEpsilon: 0.2,
    importanceCap: 5,
    importanceCapMode: 'mask',
    aggregation: 'token',
    groupNormalise: true,
    turnDiscount: 1,
    entropyCoefficient: 0,
    minibatches: 1,
    maxStaleness: 4,
  },
};

/** Defaults of a supervised warm-start step. */
export const defaultSftHyperparameters: SftHyperparameters = { ...commonDefaults, epochs: 1 };

/** Run ids become blob-key and folder segments. */
const runIdSchema = z
  .string()
  .min(1)
  .max(200)
  .regex(/^[A-Za-z0-9_:-][A-Za-z0-9._:-]*$/, 'expected letters, digits, ".", "_", ":" or "-" (not starting with ".")');

const stepFields = {
  runId: runIdSchema,
  /** Training step within the run (0-based); with runId, the idempotency key. */
  step: z.number().int().min(0),
  /** The batch, as claimed from the buffer (`claimBatch`). */
  trajectoryIds: z
    .array(z.string().min(1))
    .min(1)
    .refine((ids) => new Set(ids).size === ids.length, 'must not repeat a trajectory id'),
  baseVersion: z.number().int().min(0),
  /** Must be baseVersion + 1. */
  outputVersion: z.number().int().min(1),
};

const trainStepShape = z
  .object({
    ...stepFields,
    /** Trajectories per question (G); group normalisation needs G ≥ 2. */
    groupSize: z.number().int().min(1),
    /** The learner's η: when given, the one staleness bound of every check (hyperparameters.ppo.maxStaleness follows it). */
    eta: z.number().int().min(0).max(1000).optional(),
    hyperparameters: z.record(z.string(), z.unknown()).default({}),
  })
  .strict();

const sftStepShape = z.object({ ...stepFields, hyperparameters: z.record(z.string(), z.unknown()).default({}) }).strict();

export type TrainStepRequest = Omit<z.infer<typeof trainStepShape>, 'hyperparameters'> & { readonly hyperparameters: RlHyperparameters };
export type SftStepRequest = Omit<z.infer<typeof sftStepShape>, 'hyperparameters'> & { readonly hyperparameters: SftHyperparameters };

/** The field names an object schema accepts at `path`, for "did you mean" in a refusal. */
function knownKeys(schema: z.ZodType, path: readonly PropertyKey[]): string[] {
  let node: unknown = schema;
  for (const key of path) node = node instanceof z.ZodObject ? (node.shape as Record<string, unknown>)[String(key)] : undefined;
  return node instanceof z.ZodObject ? Object.keys(node.shape) : [];
}

/** Parse or throw a LonghaulInvalidInput error whose field is "<prefix>.<field path>" (an unknown key is named itself). */
function parseOrRefuse<T>(schema: z.ZodType<T>, value: unknown, prefix = ''): T {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0]!;
  const path = [prefix, ...issue.path.map(String)].filter(Boolean);
  if (issue.code === 'unrecognized_keys') {
    const known = knownKeys(schema, issue.path);
    throw new LonghaulError(errorTypes.invalidInput, `unknown field${known.length ? ` (expected one of: ${known.join(', ')})` : ''}`, {
      field: [...path, issue.keys[0]!].join('.'),
    });
  }
  throw new LonghaulError(errorTypes.invalidInput, issue.message, { field: path.join('.') || 'input' });
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

function checkVersions(input: { baseVersion: number; outputVersion: number }): void {
  if (input.outputVersion !== input.baseVersion + 1) {
    throw new LonghaulError(
      errorTypes.invalidInput,
      `outputVersion is ${input.outputVersion}, must be baseVersion + 1 = ${input.baseVersion + 1}`,
    );
  }
}

/**
 * An RL step's hyperparameters: `given` over the defaults (ppo merged key by key), checked against
 * the engine's schema; with `groupSize`, also that group normalisation has G >= 2. The CLI, the
 * learner's `checkHyperparameters` at start and every `trainStep` run this same check.
 */
export function parseRlHyperparameters(given: Record<string, unknown>, groupSize?: number, eta?: number): RlHyperparameters {
  if (given.ppo !== undefined && !isObject(given.ppo))
    throw new LonghaulError(errorTypes.invalidInput, 'expected an object', { field: 'hyperparameters.ppo' });
  const givenPpo = isObject(given.ppo) ? given.ppo : {};
  // η is the learner's (settings.eta): it is the staleness bound of every check, so ppo.maxStaleness follows it.
  if (eta !== undefined && givenPpo.maxStaleness !== undefined && givenPpo.maxStaleness !== eta) {
    throw new LonghaulError(
      errorTypes.invalidInput,
      `hyperparameters.ppo.maxStaleness is ${JSON.stringify(givenPpo.maxStaleness)} but the learner's η (settings.eta) is ${eta}: η is set once, on the learner; remove ppo.maxStaleness`,
    );
  }
  const ppo = { ...defaultRlHyperparameters.ppo, ...givenPpo, ...(eta !== undefined ? { maxStaleness: eta } : {}) };
  const hyperparameters = parseOrRefuse(rlHyperparametersSchema, { ...defaultRlHyperparameters, ...given, ppo }, 'hyperparameters');
  if (groupSize !== undefined && hyperparameters.ppo.groupNormalise && groupSize < 2) {
    throw new LonghaulError(
      errorTypes.invalidInput,
      `groupSize is ${groupSize}, hyperparameters.ppo.groupNormalise needs at least 2 samples per group (G >= 2)`,
    );
  }
  return hyperparameters;
}

/** A warm-start (SFT) step's hyperparameters over the defaults, checked against the engine's schema. */
export function parseSftHyperparameters(given: Record<string, unknown>): SftHyperparameters {
  return parseOrRefuse(sftHyperparametersSchema, { ...defaultSftHyperparameters, ...given }, 'hyperparameters');
}

export function parseTrainStepInput(raw: unknown): TrainStepRequest {
  const input = parseOrRefuse(trainStepShape, raw);
  checkVersions(input);
  return { ...input, hyperparameters: parseRlHyperparameters(input.hyperparameters, input.groupSize, input.eta) };
}

export function parseSftStepInput(raw: unknown): SftStepRequest {
  const input = parseOrRefuse(sftStepShape, raw);
  checkVersions(input);
  return { ...input, hyperparameters: parseSftHyperparameters(input.hyperparameters) };
}

const checkHyperparametersShape = z.discriminatedUnion('kind', [
  z
    .object({
      kind: z.literal('rl'),
      groupSize: z.number().int().min(1).optional(),
      eta: z.number().int().min(0).max(1000).optional(),
      hyperparameters: z.record(z.string(), z.unknown()).default({}),
    })
    .strict(),
  z.object({ kind: z.literal('sft'), hyperparameters: z.record(z.string(), z.unknown()).default({}) }).strict(),
]);

/** The input of `checkHyperparameters`, parsed: the hyperparameters with their defaults, or a refusal naming the field. */
export function parseCheckHyperparametersInput(raw: unknown): RlHyperparameters | SftHyperparameters {
  const input = parseOrRefuse(checkHyperparametersShape, raw);
  return input.kind === 'rl'
    ? parseRlHyperparameters(input.hyperparameters, input.groupSize, input.eta)
    : parseSftHyperparameters(input.hyperparameters);
}
