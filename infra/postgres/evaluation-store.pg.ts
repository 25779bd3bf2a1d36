/** Postgres adapter of EvaluationResultStore: the evaluation_results table (migration 0060). */
import type pg from 'pg';
import { evaluationSummarySchema } from '../../activities/ports/evaluation-result.schema.js';
import type { EvaluationResultRow, EvaluationResultStore } from '../../activities/ports/evaluation-store.port.js';

interface Row {
  result_id: string;
  dataset: string;
  dataset_version: string;
  policy_version: number;
  k: number;
  questions: number;
  run_id: string;
  git_commit: string;
  summary: unknown;
  result_key: string;
}

const columns = 'result_id, dataset, dataset_version, policy_version, k, questions, run_id, git_commit, summary, result_key';

function fromRow(row: Row): EvaluationResultRow {
  return {
    resultId: row.result_id,
    dataset: row.dataset,
    datasetVersion: row.dataset_version,
    policyVersion: row.policy_version,
    k: row.k,
    questions: row.questions,
    runId: row.run_id,
    gitCommit: row.git_commit,
    summary: evaluationSummarySchema.parse(row.summary),
    resultKey: row.result_key,
  };
}

export function createPgEvaluationStore(pool: pg.Pool): EvaluationResultStore {
  return {
    async insert(row) {
      const result = await pool.query(
        `INSERT INTO evaluation_results (${columns}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT (result_id) DO NOTHING`,
        [
          row.resultId,
          row.dataset,
          row.datasetVersion,
          row.policyVersion,
          row.k,
          row.questions,
          row.runId,
          row.gitCommit,
          JSON.stringify(row.summary),
          row.resultKey,
        ],
      );
      return { inserted: (result.rowCount ?? 0) > 0 };
    },
    async get(resultId) {
      const result = await pool.query<Row>(`SELECT ${columns} FROM evaluation_results WHERE result_id = $1`, [resultId]);
      return result.rows[0] ? fromRow(result.rows[0]) : undefined;
    },
    async list(filter = {}) {
      const result = await pool.query<Row>(
        `SELECT ${columns} FROM evaluation_results
         WHERE ($1::text IS NULL OR dataset = $1) AND ($2::text IS NULL OR run_id = $2)
         ORDER BY created_at DESC LIMIT $3`,
        [filter.dataset ?? null, filter.runId ?? null, filter.limit ?? 100],
      );
      return result.rows.map(fromRow);
    },
    async evaluatedVersions() {
      const result = await pool.query<{ policy_version: number }>(
        'SELECT DISTINCT policy_version FROM evaluation_results ORDER BY policy_version',
      );
      return result.rows.map((row) => row.policy_version);
    },
  };
}

/**
 * The corpus version frozen with an evaluation: a digest of the search corpus (every document's id
 * and content hash), so a changed corpus gets a new version and observations recorded under the old
 * one are never mistaken for the new corpus's.
 */
export async function searchCorpusVersion(pool: pg.Pool): Promise<string> {
  const result = await pool.query<{ documents: number; digest: string | null }>(
    `SELECT count(*)::int AS documents, md5(coalesce(string_agg(id || ':' || content_hash, ',' ORDER BY id), '')) AS digest FROM search_documents`,
  );
  const row = result.rows[0]!;
  return `corpus-${row.documents}-${(row.digest ?? '').slice(0, 16)}`;
}
