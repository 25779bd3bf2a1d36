/**
 * WebSearchClient over HTTP: SearXNG's JSON API (GET <url>?q=…&format=json) or a Serper-compatible
 * API (POST <url> {"q","num"} with X-API-KEY). Responses are parsed leniently (external data).
 */
import { z } from 'zod';
import type { WebSearchClient, WebSearchResult } from '../../activities/ports/search.port.js';

export interface WebSearchOptions {
  readonly url: string;
  readonly api: 'searxng' | 'serper';
  readonly apiKey: string | null;
  readonly timeoutMs: number;
}

const searxngSchema = z
  .object({
    results: z
      .array(z.object({ title: z.string().nullish(), url: z.string().nullish(), content: z.string().nullish() }).passthrough())
      .nullish(),
  })
  .passthrough();
const serperSchema = z
  .object({
    organic: z
      .array(z.object({ title: z.string().nullish(), link: z.string().nullish(), snippet: z.string().nullish() }).passthrough())
      .nullish(),
  })
  .passthrough();

export function createHttpWebSearchClient(options: WebSearchOptions): WebSearchClient {
  return {
    async search(query, k) {
      const response =
        options.api === 'searxng'
          ? await fetch(`${options.url}${options.url.includes('?') ? '&' : '?'}${new URLSearchParams({ q: query, format: 'json' })}`, {
              signal: AbortSignal.timeout(options.timeoutMs),
            })
          : await fetch(options.url, {
              method: 'POST',
              signal: AbortSignal.timeout(options.timeoutMs),
              headers: { 'content-type': 'application/json', ...(options.apiKey ? { 'x-api-key': options.apiKey } : {}) },
              body: JSON.stringify({ q: query, num: k }),
            });
      if (!response.ok) throw new Error(`search API answered HTTP ${response.status}`);
      const body: unknown = await response.json().catch(() => null);
      const results: WebSearchResult[] =
        options.api === 'searxng'
          ? (searxngSchema.safeParse(body).data?.results ?? []).map((r) => ({
              title: r.title ?? '',
              url: r.url ?? '',
              snippet: r.content ?? '',
            }))
          : (serperSchema.safeParse(body).data?.organic ?? []).map((r) => ({
              title: r.title ?? '',
              url: r.link ?? '',
              snippet: r.snippet ?? '',
            }));
      return results.filter((result) => result.url !== '').slice(0, k);
    },
  };
}
