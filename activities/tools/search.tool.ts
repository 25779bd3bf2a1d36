/** `search`: the local search engine (Postgres full-text search by default). */
import { z } from 'zod';
import type { SearchEngine } from '../ports/search.port.js';
import type { SearchToolInput } from '../../workflows/contracts/tools.contract.js';
import { defaultCacheKey, type ToolPlugin } from './registry.js';

export interface SearchToolOptions {
  /** Hits when the call gives no k. @default 5 */
  readonly defaultK?: number;
  /** The largest k a call may ask for. @default 20 */
  readonly maxK?: number;
  /** Each hit's text is cut to this many characters. @default 1000 */
  readonly hitChars?: number;
  /** Whether the engine runs on this machine (Postgres full-text search): then a search may run as a local activity. @default false */
  readonly localEngine?: boolean;
}

export function createSearchTool(engine: SearchEngine, options: SearchToolOptions = {}): ToolPlugin<SearchToolInput> {
  const maxK = options.maxK ?? 20;
  const hitChars = options.hitChars ?? 1000;
  const inputSchema = z.strictObject({
    query: z.string().trim().min(1).max(500).describe('What to search for: keywords or a question.'),
    k: z
      .number()
      .int()
      .min(1)
      .max(maxK)
      .optional()
      .describe(`How many passages to return (1-${maxK}, default ${options.defaultK ?? 5}).`),
  });
  return {
    name: 'search',
    description: 'Search the local document collection. Returns the best-matching passages, each with its document id for `access`.',
    inputSchema,
    successCriterion: 'at least one passage was found',
    cacheable: true,
    runsLocally: () => options.localEngine ?? false,
    cacheKey: (input) => defaultCacheKey({ query: input.query.toLowerCase(), k: input.k ?? options.defaultK ?? 5 }),
    async execute(input) {
      const hits = await engine.search(input.query, input.k ?? options.defaultK ?? 5);
      if (hits.length === 0) return { observation: `No results for "${input.query}".`, documentIds: [] };
      const observation = hits
        .map((hit, index) => {
          const text = hit.text.length > hitChars ? `${hit.text.slice(0, hitChars)}…` : hit.text;
          return `Doc ${index + 1} (id: ${hit.documentId}, page ${hit.page}) ${hit.title}\n${text}`;
        })
        .join('\n\n');
      return { observation, documentIds: [...new Set(hits.map((hit) => hit.documentId))] };
    },
    judge: (output) => (output.documentIds?.length ?? 0) > 0,
  };
}
