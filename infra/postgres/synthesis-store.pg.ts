/** Synthesis datasets, candidates and verdicts in Postgres (migration 0050). */
import type pg from 'pg';
import type { SynthesisCandidateRow, SynthesisDatasetRow, SynthesisStore } from '../../activities/ports/synthesis-store.port.js';
import { errorTypes, LonghaulError } from '../../workflows/contracts/errors.js';

interface DatasetRecord {
  dataset_id: string;
  synthesizer: string;
  seed: string;
  settings: Record<string, unknown>;
  status: 'running' | 'published';
  blob_key: string | null;
  content_hash: string | null;
  items: number | null;
  statistics: Record<string, unknown> | null;
}

const toDataset = (row: DatasetRecord): SynthesisDatasetRow => ({
  datasetId: row.dataset_id,
  synthesizer: row.synthesizer,
  seed: Number(row.seed),
  settings: row.settings,
  status: row.status,
  blobKey: row.blob_key,
  contentHash: row.content_hash,
  items: row.items,
  statistics: row.statistics,
});

export function createPgSynthesisStore(pool: pg.Pool): SynthesisStore {
  return {
    async beginDataset(row) {
      await pool.query(
        `INSERT INTO synthesis_datasets (dataset_id, synthesizer, seed, settings) VALUES ($1, $2, $3, $4) ON CONFLICT (dataset_id) DO NOTHING`,
        [row.datasetId, row.synthesizer, row.seed, JSON.stringify(row.settings)],
      );
    },
    async dataset(datasetId) {
      const { rows } = await pool.query<DatasetRecord>('SELECT * FROM synthesis_datasets WHERE dataset_id = $1', [datasetId]);
      return rows[0] ? toDataset(rows[0]) : null;
    },
    async list() {
      const { rows } = await pool.query<DatasetRecord>('SELECT * FROM synthesis_datasets ORDER BY created_at DESC');
      return rows.map(toDataset);
    },
    async recordVerdict(row) {
      await pool.query(
        `INSERT INTO synthesis_verdicts (workflow_id, check_name, passed, reason, details) VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (workflow_id, check_name) DO UPDATE SET passed = EXCLUDED.passed, reason = EXCLUDED.reason, details = EXCLUDED.details`,
        [row.workflowId, row.check, row.passed, row.reason, JSON.stringify(row.details)],
      );
    },
    async verdicts(workflowIds) {
      const { rows } = await pool.query<{
        workflow_id: string;
        check_name: string;
        passed: boolean;
        reason: string;
        details: Record<string, unknown>;
      }>(
        'SELECT workflow_id, check_name, passed, reason, details FROM synthesis_verdicts WHERE workflow_id = ANY($1::text[]) ORDER BY workflow_id, recorded_at',
        [workflowIds],
      );
      return rows.map((row) => ({
        workflowId: row.workflow_id,
        check: row.check_name,
        passed: row.passed,
        reason: row.reason,
        details: row.details,
      }));
    },
    async recordCandidate(row) {
      await pool.query(
        `INSERT INTO synthesis_candidates (dataset_id, task_index, workflow_id, accepted, reason, question, answer, candidate, seconds, tokens)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT (dataset_id, task_index) DO NOTHING`,
        [
          row.datasetId,
          row.taskIndex,
          row.workflowId,
          row.accepted,
          row.reason,
          row.question,
          row.answer,
          JSON.stringify(row.candidate),
          row.seconds,
          row.tokens,
        ],
      );
    },
    async candidates(datasetId) {
      const { rows } = await pool.query<{
        dataset_id: string;
        task_index: number;
        workflow_id: string;
        accepted: boolean;
        reason: string;
        question: string | null;
        answer: string | null;
        candidate: Record<string, unknown>;
        seconds: number;
        tokens: number;
      }>('SELECT * FROM synthesis_candidates WHERE dataset_id = $1 ORDER BY task_index', [datasetId]);
      return rows.map((row): SynthesisCandidateRow => ({
        datasetId: row.dataset_id,
        taskIndex: row.task_index,
        workflowId: row.workflow_id,
        accepted: row.accepted,
        reason: row.reason,
        question: row.question,
        answer: row.answer,
        candidate: row.candidate,
        seconds: row.seconds,
        tokens: row.tokens,
      }));
    },
    async publish(datasetId, fields) {
      const { rowCount } = await pool.query(
        `UPDATE synthesis_datasets SET status = 'published', blob_key = $2, content_hash = $3, items = $4, statistics = $5, published_at = now()
          WHERE dataset_id = $1 AND (status = 'running' OR content_hash = $3)`,
        [datasetId, fields.blobKey, fields.contentHash, fields.items, JSON.stringify(fields.statistics)],
      );
      if (rowCount === 0)
        throw new LonghaulError(
          errorTypes.corrupt,
          `dataset ${datasetId} is already published with other content; published datasets never change`,
          {
            field: 'datasetId',
          },
        );
    },
  };
}
