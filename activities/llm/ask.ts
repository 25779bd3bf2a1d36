/**
 * Ask a chat model once and parse its reply: the step the LLM judge and the LLM-driven synthesizer
 * share. The reply is untrusted text: `parse` returns null (or throws) for a reply it cannot use, and
 * the caller decides what that means (a score of 0, a rejection with its reason, one more attempt).
 */
import { generatedTokenCount, type GenerateRequest, type PolicyBackend } from '../ports/policy.port.js';

export type ChatMessage = { readonly role: 'system' | 'user' | 'assistant'; readonly content: string };

export interface Asked<T> {
  /** The reply, as returned. */
  readonly reply: string;
  /** What `parse` made of it; null when unusable. */
  readonly parsed: T | null;
  readonly generatedTokens: number;
  /** Prompt and completion tokens of the call: the server's `usage` when it sent one, else counted from token ids (or estimated). */
  readonly usage: { readonly promptTokens: number; readonly completionTokens: number };
}

export async function askAndParse<T>(
  backend: PolicyBackend,
  messages: readonly ChatMessage[],
  options: { maxNewTokens: number; temperature: number; seed?: number },
  parse: (reply: string) => T | null,
): Promise<Asked<T>> {
  const request: GenerateRequest = {
    prompt: '',
    messages: [...messages],
    maxNewTokens: options.maxNewTokens,
    temperature: options.temperature,
    ...(options.seed === undefined ? {} : { seed: options.seed }),
  };
  const result = await backend.generate(request);
  const generatedTokens = generatedTokenCount(result);
  return {
    reply: result.text,
    parsed: parse(result.text),
    generatedTokens,
    usage: result.usage ?? { promptTokens: result.promptTokenIds.length, completionTokens: generatedTokens },
  };
}

/** The first JSON object of a reply (models wrap it in prose or code fences); null when there is none that parses. */
export function jsonObjectOf(reply: string): Record<string, unknown> | null {
  const start = reply.indexOf('{');
  const end = reply.lastIndexOf('}');
  if (start < 0 || end <= start) return null;
  try {
    const parsed: unknown = JSON.parse(reply.slice(start, end + 1));
    return parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}
