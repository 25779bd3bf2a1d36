/** Postgres adapter of BenchmarkResultStore: the benchmark_results table (migration 0062). */
import type pg from 'pg';
import type { BenchmarkResultStore } from '../../activities/ports/benchmark-result-store.port.js';
import type { BenchmarkRecord } from '../../workflows/contracts/schedules.contract.js';

interface Row {
  id: string;
  benchmark: string;
  args: string[];
  policy_version: number | null;
  git_commit: string;
  seconds: number;
  result: Record<string, unknown>;
}

const columns = 'id, benchmark, args, policy_version, git_commit, seconds, result';

function fromRow(row: Row): BenchmarkRecord {
  return {
    id: row.id,
    benchmark: row.benchmark,
    args: row.args,
    policyVersion: row.policy_version,
    gitCommit: row.git_commit,
    seconds: row.seconds,
    result: row.result,
  };
}

export function createPgBenchmarkResultStore(pool: pg.Pool): BenchmarkResultStore {
  return {
    async insert(record) {
      const result = await pool.query(
        `INSERT INTO benchmark_results (${columns}) VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (id) DO NOTHING`,
        [
          record.id,
          record.benchmark,
          JSON.stringify(record.args),
          record.policyVersion,
          record.gitCommit,
          record.seconds,
          JSON.stringify(record.result),
        ],
      );
      return { inserted: result.rowCount === 1 };
    },
    async get(id) {
      const result = await pool.query<Row>(`SELECT ${columns} FROM benchmark_results WHERE id = $1`, [id]);
      return result.rows[0] ? fromRow(result.rows[0]) : undefined;
    },
    async recent(benchmark, limit) {
      const result = await pool.query<Row>(
        `SELECT ${columns} FROM benchmark_results WHERE benchmark = $1 ORDER BY created_at DESC LIMIT $2`,
        [benchmark, limit],
      );
      return result.rows.map(fromRow);
    },
  };
}
