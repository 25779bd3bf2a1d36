/**
 * The `generate` activity on the gpu-infer queue: one policy generation, idempotent by key. The
 * full record (prompt and generated token ids, behaviour logprobs, per-token versions) goes to the
 * blob store at `generations/<key>.json`; a retry after a crash returns that record instead of
 * generating a different one. Workflow history gets a small summary.
 */
import { CancelledFailure } from '@temporalio/common';
import { ApplicationFailure, Context } from '@temporalio/activity';
import { z } from 'zod';
import type { BlobStore } from './ports/blob-store.port.js';
import {
  finishReasons,
  generatedTokenCount,
  tokenCountSources,
  trainingFields,
  type GenerateRequest,
  type GenerateResult,
  type PolicyBackend,
} from './ports/policy.port.js';
import { generateRequestSchema } from './ports/policy-request.schema.js';
import { errorTypes } from '../workflows/contracts/errors.js';
import type { PolicyCapabilitiesResult } from '../workflows/contracts/policy-capabilities.contract.js';
import { toApplicationFailure } from '../workflows/contracts/application-failure.js';
import { parseActivityInput } from './activity-input.js';

/** Input of `generate`. */
export interface GenerateActivityInput {
  /** Idempotency key, e.g. "<trajectoryId>/turn-0003": letters, digits, ".", "_", "-" and "/" segments. */
  readonly key: string;
  readonly request: GenerateRequest;
  /** Key of an earlier, interrupted generation of this turn: continue after its tokens (they keep their versions and logprobs). */
  readonly resumeFrom?: string;
}

/** What the workflow gets back; the tokens stay in the blob. */
export interface GenerateActivityResult {
  readonly text: string;
  readonly blobKey: string;
  readonly policyVersion: number;
  readonly finishReason: GenerateResult['finishReason'];
  readonly promptTokens: number;
  readonly generatedTokens: number;
}

/** The stored record at `generations/<key>.json`. */
export interface GenerationBlob extends GenerateResult {
  readonly key: string;
}

const keySchema = z
  .string()
  .min(1)
  .max(512)
  .regex(/^[A-Za-z0-9._-]+(\/[A-Za-z0-9._-]+)*$/, 'expected segments of letters, digits, ".", "_" or "-" separated by "/"')
  .refine((key) => !key.split('/').some((segment) => segment === '.' || segment === '..'), 'must not contain "." or ".." segments');

const inputSchema = z.object({ key: keySchema, request: generateRequestSchema, resumeFrom: keySchema.optional() }).strict();

const blobSchema = z.object({
  key: z.string(),
  text: z.string(),
  promptTokenIds: z.array(z.number().int()),
  tokenIds: z.array(z.number().int()),
  logprobs: z.array(z.number()),
  tokenVersions: z.array(z.number().int()),
  policyVersion: z.number().int(),
  finishReason: z.enum(finishReasons),
  untrainable: z
    .object({
      missing: z.array(z.enum(trainingFields)),
      generatedTokens: z.number().int().min(0),
      countedFrom: z.enum(tokenCountSources),
    })
    .optional(),
});

export const generationBlobKey = (key: string) => `generations/${key}.json`;

export interface PolicyActivityDependencies {
  readonly backend: PolicyBackend;
  readonly blobs: BlobStore;
  /** Heartbeat period while generating. @default 1000 */
  readonly heartbeatMs?: number;
}

/** `policyCapabilities`: what the backend's generations carry (an OpenAI-compatible server is probed; unreachable: retried). */
export function createPolicyCapabilityActivities({
  backend,
  heartbeatMs = 1000,
}: Pick<PolicyActivityDependencies, 'backend' | 'heartbeatMs'>) {
  return {
    async policyCapabilities(): Promise<PolicyCapabilitiesResult> {
      const context = Context.current();
      const beat = setInterval(() => context.heartbeat({ probing: backend.name }), heartbeatMs);
      try {
        const { tokenIds, logprobs, detail } = await backend.capabilities();
        return { backend: backend.name, tokenIds, logprobs, detail };
      } catch (error) {
        throw toApplicationFailure(error, 'policyCapabilities');
      } finally {
        clearInterval(beat);
      }
    },
  };
}

export function createPolicyActivities({ backend, blobs, heartbeatMs = 1000 }: PolicyActivityDependencies) {
  async function readRecord(key: string): Promise<GenerationBlob | undefined> {
    const blobKey = generationBlobKey(key);
    if (!(await blobs.exists(blobKey))) return undefined;
    const parsed = blobSchema.safeParse(JSON.parse((await blobs.get(blobKey)).toString('utf8')) as unknown);
    if (!parsed.success)
      throw ApplicationFailure.nonRetryable(
        `generate: ${blobKey} is not a generation record: ${parsed.error.issues[0]!.message}`,
        errorTypes.corrupt,
      );
    return parsed.data;
  }

  async function resumedRequest(request: GenerateRequest, resumeFrom: string | undefined): Promise<GenerateRequest> {
    if (resumeFrom === undefined) return request;
    const earlier = await readRecord(resumeFrom);
    if (!earlier)
      throw ApplicationFailure.nonRetryable(`generate: resumeFrom: no generation stored under "${resumeFrom}"`, errorTypes.invalidInput);
    return { ...request, prefixTokenIds: earlier.tokenIds, prefixLogprobs: earlier.logprobs, prefixTokenVersions: earlier.tokenVersions };
  }

  return {
    /** Generate once per key; an interrupted (cancelled) generation is stored, then the cancellation is rethrown. */
    async generate(rawInput: GenerateActivityInput): Promise<GenerateActivityResult> {
      const input = parseActivityInput('generate', inputSchema, rawInput);
      const { key, resumeFrom } = input;
      const stored = await readRecord(key);
      if (stored) return summarize(stored);
      const request = await resumedRequest(input.request, resumeFrom);
      const context = Context.current();
      const beat = setInterval(() => context.heartbeat({ key }), heartbeatMs);
      let result: GenerateResult;
      try {
        result = await backend.generate(request, context.cancellationSignal);
      } catch (error) {
        throw toApplicationFailure(error, 'generate');
      } finally {
        clearInterval(beat);
      }
      const record: GenerationBlob = {
        key,
        text: result.text,
        promptTokenIds: result.promptTokenIds,
        tokenIds: result.tokenIds,
        logprobs: result.logprobs,
        tokenVersions: result.tokenVersions,
        policyVersion: result.policyVersion,
        finishReason: result.finishReason,
        ...(result.untrainable ? { untrainable: result.untrainable } : {}),
      };
      await blobs.put(generationBlobKey(key), JSON.stringify(record), 'application/json');
      if (result.finishReason === 'interrupted' && context.cancellationSignal.aborted) {
        throw new CancelledFailure(`generation ${key} interrupted after ${result.tokenIds.length} tokens; resume with resumeFrom "${key}"`);
      }
      return summarize(record);
    },
    ...createPolicyCapabilityActivities({ backend, heartbeatMs }),
  };
}

function summarize(record: GenerationBlob): GenerateActivityResult {
  return {
    text: record.text,
    blobKey: generationBlobKey(record.key),
    policyVersion: record.policyVersion,
    finishReason: record.finishReason,
    promptTokens: record.promptTokenIds.length,
    generatedTokens: generatedTokenCount(record),
  };
}

export type PolicyActivities = ReturnType<typeof createPolicyActivities>;
