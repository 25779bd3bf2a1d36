/** Hybrid search: reciprocal-rank fusion of several engines (score = Σ 1 / (c + rank)). */
import type { SearchEngine, SearchHit } from '../../activities/ports/search.port.js';

export function createHybridSearchEngine(
  engines: readonly SearchEngine[],
  options: { constant?: number; depth?: number } = {},
): SearchEngine {
  const constant = options.constant ?? 60;
  const first = engines[0];
  if (!first) throw new Error('hybrid search needs at least one engine');
  return {
    name: 'hybrid',
    async search(query, k) {
      const depth = Math.max(k, options.depth ?? 50);
      const lists = await Promise.all(engines.map((engine) => engine.search(query, depth)));
      const fused = new Map<string, { hit: SearchHit; score: number }>();
      for (const hits of lists) {
        hits.forEach((hit, rank) => {
          const key = `${hit.documentId}\u0000${hit.page}`;
          const entry = fused.get(key) ?? { hit, score: 0 };
          entry.score += 1 / (constant + rank + 1);
          fused.set(key, entry);
        });
      }
      return [...fused.values()]
        .sort((a, b) => b.score - a.score)
        .slice(0, k)
        .map(({ hit, score }) => ({ ...hit, score }));
    },
    page: (documentId, page) => first.page(documentId, page),
  };
}
