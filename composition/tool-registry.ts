/** Builds the tool registry a tools worker serves, from config: which tools exist depends on what is configured. */
import type pg from 'pg';
import { createAccessTool } from '../activities/tools/access.tool.js';
import { createAnswerTool } from '../activities/tools/answer.tool.js';
import { limitTool, defaultToolLimits } from '../activities/tools/limits.js';
import { ToolRegistry, type AnyToolPlugin } from '../activities/tools/registry.js';
import { createSearchTool } from '../activities/tools/search.tool.js';
import { createSqlTool } from '../activities/tools/sql.tool.js';
import { createWebFetchTool } from '../activities/tools/web-fetch.tool.js';
import { createWebSearchTool } from '../activities/tools/web-search.tool.js';
import type { SearchEngine } from '../activities/ports/search.port.js';
import { type Config } from '../infra/config.js';
import { createDenseSearchEngine } from '../infra/search/dense-search.pg.js';
import { createHttpEmbeddingClient } from '../infra/search/embeddings.http.js';
import { createHybridSearchEngine } from '../infra/search/hybrid-search.js';
import { createPool } from '../infra/postgres/database.js';
import { createFtsSearchEngine } from '../infra/search/fts-search.pg.js';
import { createPgReadOnlySql } from '../infra/search/read-only-sql.pg.js';
import { createHttpPageFetcher } from '../infra/search/web-fetch.http.js';
import { createHttpWebSearchClient } from '../infra/search/web-search.http.js';
import { errorTypes, LonghaulError } from '../workflows/contracts/errors.js';

export interface BuiltTools {
  readonly registry: ToolRegistry;
  close(): Promise<void>;
}

/** The engine LONGHAUL_SEARCH_ENGINE names; dense and hybrid need LONGHAUL_EMBEDDINGS_URL. */
export function searchEngine(settings: Config, pool: pg.Pool): SearchEngine {
  const { searchEngine: kind, embeddings } = settings.tools;
  const fts = createFtsSearchEngine(pool);
  if (kind === 'fts') return fts;
  if (!embeddings)
    throw new LonghaulError(
      errorTypes.invalidInput,
      `LONGHAUL_SEARCH_ENGINE=${kind} needs LONGHAUL_EMBEDDINGS_URL (an OpenAI-compatible /v1/embeddings endpoint). Set it, or unset LONGHAUL_SEARCH_ENGINE (see docs/CONFIG.md).`,
    );
  const dense = createDenseSearchEngine(pool, createHttpEmbeddingClient(embeddings), { maxAgeMs: 300_000 });
  return kind === 'dense' ? dense : createHybridSearchEngine([fts, dense]);
}

export function buildToolRegistry(settings: Config, pool: pg.Pool): BuiltTools {
  const { tools } = settings;
  const engine = searchEngine(settings, pool);
  const fetcher = tools.webFetch.enabled ? createHttpPageFetcher(tools.webFetch) : undefined;
  // Full-text search is a query of the stack's own Postgres: search and document reads may run as local
  // activities in the agent worker. Dense and hybrid engines call an embeddings server: the tools queue.
  const localEngine = tools.searchEngine === 'fts';
  const plugins: AnyToolPlugin[] = [
    createSearchTool(engine, { localEngine }),
    createAccessTool(engine, { pageChars: tools.accessPageChars, localEngine, ...(fetcher ? { fetcher } : {}) }),
    createAnswerTool(),
  ];
  if (tools.webSearch)
    plugins.push(
      createWebSearchTool(
        createHttpWebSearchClient({ ...tools.webSearch, timeoutMs: tools.webFetch.timeoutMs, maxBytes: tools.webFetch.maxBytes }),
      ),
    );
  if (fetcher) plugins.push(createWebFetchTool(fetcher, tools.accessPageChars));
  const sqlPool = tools.sqlUrl ? createPool(tools.sqlUrl, 2) : null;
  if (sqlPool) plugins.push(createSqlTool(createPgReadOnlySql(sqlPool)));
  const known = ['search', 'access', 'answer', 'web_search', 'web_fetch', 'sql'];
  for (const name of Object.keys(tools.limits.perTool)) {
    if (!known.includes(name))
      throw new LonghaulError(
        errorTypes.invalidInput,
        `LONGHAUL_TOOL_LIMITS names tool "${name}", which does not exist (tools: ${known.join(', ')}). Fix the name (see docs/CONFIG.md).`,
      );
  }
  const limited = plugins.map((plugin) =>
    limitTool(plugin, { ...defaultToolLimits, ...tools.limits.defaults, ...tools.limits.perTool[plugin.name] }),
  );
  return {
    registry: new ToolRegistry(limited),
    close: async () => {
      await sqlPool?.end();
    },
  };
}
