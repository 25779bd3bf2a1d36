/** Shared setup of the synthesis tests: a default corpus (countries, cities ≥ 1M, elements) in a schema of its own. */
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { buildDefaultCorpus } from '../../corpus/default-corpus.js';
import { dropSchema, openSchemaPool } from '../../infra/search/open.js';
import type { Config } from '../../infra/config.js';
import type { ContaminationLookup } from '../../activities/synthesis/synthesis.activities.js';
import { ContaminationIndex } from '../../activities/question-sets/contamination.js';

export interface SynthesisCorpus {
  readonly pool: pg.Pool;
  /** DATABASE_URL of the schema, for worker processes. */
  readonly databaseUrl: string;
  close(): Promise<void>;
}

export async function synthesisCorpus(settings: Config, label: string): Promise<SynthesisCorpus> {
  const schema = `test_${label}_${randomUUID().slice(0, 8)}`;
  const pool = await openSchemaPool(settings.postgres.url, schema, 6);
  await buildDefaultCorpus(pool, { toolsDir: settings.toolsDir, minCityPopulation: 1_000_000, wikipedia: false });
  const url = new URL(settings.postgres.url);
  url.searchParams.set('options', `-c search_path=${schema}`);
  return {
    pool,
    databaseUrl: url.toString(),
    async close() {
      await pool.end();
      await dropSchema(settings.postgres.url, schema);
    },
  };
}

/** A contamination index (the real one) over one small evaluation set of these questions. */
export function evaluationSetIndex(questions: readonly string[]): () => Promise<ContaminationLookup> {
  return async () =>
    new ContaminationIndex().add(
      'test-set',
      questions.map((question, index) => ({ id: `q${index}`, question })),
    );
}
