/** `web_search`: a web search API (SearXNG JSON or a Serper-compatible API) behind the WebSearchClient port. */
import { z } from 'zod';
import type { WebSearchClient } from '../ports/search.port.js';
import { defaultCacheKey, type ToolPlugin } from './registry.js';

export interface WebSearchToolInput {
  readonly query: string;
  readonly k?: number;
}

export function createWebSearchTool(client: WebSearchClient): ToolPlugin<WebSearchToolInput> {
  return {
    name: 'web_search',
    description: 'Search the web. Returns titles, URLs and snippets; read a result with `access` or `web_fetch`.',
    inputSchema: z.strictObject({
      query: z.string().trim().min(1).max(500).describe('What to search the web for.'),
      k: z.number().int().min(1).max(10).optional().describe('How many results (1-10, default 5).'),
    }),
    successCriterion: 'the search API answered with at least one result',
    cacheable: true,
    cacheKey: (input) => defaultCacheKey({ query: input.query.toLowerCase(), k: input.k ?? 5 }),
    async execute(input, context) {
      const results = await client.search(input.query, input.k ?? 5, context?.signal);
      if (results.length === 0) return { observation: `No web results for "${input.query}".`, documentIds: [] };
      const observation = results.map((result, index) => `[${index + 1}] ${result.title}\n${result.url}\n${result.snippet}`).join('\n\n');
      return { observation, documentIds: results.map((result) => result.url) };
    },
    judge: (output) => (output.documentIds?.length ?? 0) > 0,
  };
}
