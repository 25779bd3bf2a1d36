/**
 * The strict schema of a GenerateRequest (policy.port.ts), shared by the generate activity, the
 * backends and `longhaul serve`: a bad request fails with a message naming the field.
 */
import { z } from 'zod';
import type { GenerateRequest } from './policy.port.js';
import { errorTypes, LonghaulError } from '../../workflows/contracts/errors.js';

const tokenIds = z.array(z.number().int().min(0));

export const generateRequestSchema = z
  .object({
    prompt: z.string().max(4 * 1024 * 1024),
    messages: z
      .array(z.object({ role: z.enum(['system', 'user', 'assistant', 'tool']), content: z.string() }).strict())
      .min(1)
      .optional(),
    prefixTokenIds: tokenIds.max(1_000_000).optional(),
    prefixLogprobs: z.array(z.number().max(0)).optional(),
    prefixTokenVersions: z.array(z.number().int().min(0)).optional(),
    maxNewTokens: z.number().int().min(1).max(1_000_000),
    temperature: z.number().min(0).max(100).optional(),
    topP: z.number().gt(0).max(1).optional(),
    seed: z
      .number()
      .int()
      .min(0)
      .max(2 ** 32 - 1)
      .optional(),
    stop: z.array(z.string().min(1)).max(16).optional(),
    forcedText: z
      .string()
      .min(1)
      .max(1024 * 1024)
      .optional(),
  })
  .strict()
  .superRefine((request, context) => {
    if (request.forcedText !== undefined && (request.prefixTokenIds?.length ?? 0) > 0) {
      context.addIssue({
        code: 'custom',
        path: ['forcedText'],
        message: 'cannot be combined with prefixTokenIds (a forced turn is scored whole, never resumed)',
      });
    }
    if (request.messages === undefined && request.prompt === '' && (request.prefixTokenIds?.length ?? 0) === 0) {
      context.addIssue({ code: 'custom', path: ['prompt'], message: 'empty prompt and no messages' });
    }
    for (const field of ['prefixLogprobs', 'prefixTokenVersions'] as const) {
      const values = request[field];
      if (values !== undefined && values.length !== (request.prefixTokenIds?.length ?? 0)) {
        context.addIssue({
          code: 'custom',
          path: [field],
          message: `has ${values.length} entries but prefixTokenIds has ${request.prefixTokenIds?.length ?? 0}`,
        });
      }
    }
  });

/** Parse an untrusted request, or throw a LonghaulInvalidInput "<field>: <reason>". */
export function parseGenerateRequest(value: unknown): GenerateRequest {
  const parsed = generateRequestSchema.safeParse(value);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0]!;
  throw new LonghaulError(errorTypes.invalidInput, `${issue.path.join('.') || 'request'}: ${issue.message}`);
}
