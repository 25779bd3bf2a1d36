/** Lenient schemas of OpenAI-compatible responses: only what we read, everything else optional. */
import { z } from 'zod';

const tokenIds = z
  .array(z.number().int())
  .nullish()
  .transform((value) => value ?? undefined);
/** OpenAI's token counts (servers without token ids still send them, e.g. llama.cpp). */
const usage = z
  .object({ prompt_tokens: z.number().int().min(0).nullish(), completion_tokens: z.number().int().min(0).nullish() })
  .passthrough()
  .nullish();

export const completionResponseSchema = z
  .object({
    prompt_token_ids: tokenIds,
    usage,
    choices: z
      .array(
        z
          .object({
            text: z.string().nullish(),
            finish_reason: z.string().nullish(),
            token_ids: tokenIds,
            prompt_token_ids: tokenIds,
            logprobs: z
              .object({
                tokens: z.array(z.string()).nullish(),
                token_logprobs: z.array(z.number().nullable()).nullish(),
              })
              .passthrough()
              .nullish(),
          })
          .passthrough(),
      )
      .min(1, 'no choices'),
  })
  .passthrough();

export const chatResponseSchema = z
  .object({
    prompt_token_ids: tokenIds,
    usage,
    choices: z
      .array(
        z
          .object({
            message: z.object({ content: z.string().nullish() }).passthrough().nullish(),
            finish_reason: z.string().nullish(),
            token_ids: tokenIds,
            prompt_token_ids: tokenIds,
            logprobs: z
              .object({
                content: z.array(z.object({ token: z.string().nullish(), logprob: z.number().nullish() }).passthrough()).nullish(),
              })
              .passthrough()
              .nullish(),
          })
          .passthrough(),
      )
      .min(1, 'no choices'),
  })
  .passthrough();

export interface Completion {
  readonly text: string;
  readonly finishReason: string;
  readonly tokenIds: number[];
  readonly logprobs: number[];
  readonly promptTokenIds: number[];
  /** The response's `usage.completion_tokens`, when it has one. */
  readonly completionTokens?: number;
  /** The response's `usage.prompt_tokens`, when it has one. */
  readonly promptTokens?: number;
}

/** Token ids from explicit `token_ids`, else from vLLM's "token_id:<n>" token strings; empty when neither. */
export function parseTokens(tokens: readonly string[], explicit: readonly number[] | undefined): number[] {
  if (explicit) return [...explicit];
  const ids: number[] = [];
  for (const token of tokens) {
    const match = /^token_id:(\d+)$/.exec(token);
    if (!match) return [];
    ids.push(Number(match[1]));
  }
  return ids;
}
