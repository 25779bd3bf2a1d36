/**
 * Read-only queries behind `longhaul report`: a run's trajectories, the staleness of what its steps
 * consumed, evaluation results, and recent runs. Nothing here writes.
 */
import type pg from 'pg';

export interface ReportTrajectoryRow {
  readonly trajectoryId: string;
  readonly runId: string;
  readonly dataset: string;
  readonly questionId: string;
  readonly question: string;
  readonly answer: string | null;
  readonly reward: number;
  readonly rewardParts: Record<string, number>;
  readonly stopReason: string;
  readonly turns: number;
  readonly versions: number[];
  readonly createdAt: Date;
}

export interface ConsumedRow {
  readonly trajectoryId: string;
  readonly step: number;
  /** The version the step trained from. */
  readonly currentVersion: number;
  readonly versions: number[];
}

export interface RecentRun {
  readonly runId: string;
  readonly trajectories: number;
  readonly lastAt: Date;
}

/** `LIKE` pattern for ids starting with `prefix` (its `%`, `_` and `\` taken literally). */
export function likePrefix(prefix: string): string {
  return `${prefix.replace(/[\\%_]/g, (character) => `\\${character}`)}%`;
}

export function createPgReportSource(pool: pg.Pool) {
  return {
    /** The run's own trajectories (run_id) and those whose id starts with one of `idPrefixes` (the demo's evaluations), oldest first. */
    async trajectories(runId: string, idPrefixes: readonly string[], limit: number): Promise<ReportTrajectoryRow[]> {
      const result = await pool.query(
        `SELECT trajectory_id, run_id, dataset, question_id, question, answer, reward, reward_parts, stop_reason, turns, versions, created_at
           FROM trajectories WHERE run_id = $1 OR trajectory_id LIKE ANY($2::text[])
          ORDER BY created_at, trajectory_id LIMIT $3`,
        [runId, idPrefixes.map(likePrefix), limit],
      );
      return result.rows.map((row) => ({
        trajectoryId: row.trajectory_id,
        runId: row.run_id,
        dataset: row.dataset,
        questionId: row.question_id,
        question: row.question,
        answer: row.answer,
        reward: Number(row.reward),
        rewardParts: row.reward_parts,
        stopReason: row.stop_reason,
        turns: row.turns,
        versions: row.versions,
        createdAt: row.created_at,
      }));
    },
    async countTrajectories(runId: string, idPrefixes: readonly string[]): Promise<number> {
      const result = await pool.query(
        `SELECT count(*)::int AS n FROM trajectories WHERE run_id = $1 OR trajectory_id LIKE ANY($2::text[])`,
        [runId, idPrefixes.map(likePrefix)],
      );
      return result.rows[0].n;
    },
    /** Trajectories the run's steps trained on, with the version each step trained from. */
    async consumed(runId: string): Promise<ConsumedRow[]> {
      const result = await pool.query(
        `SELECT u.trajectory_id, u.step, b.current_version, t.versions
           FROM buffer_uses u
           JOIN buffer_batches b ON b.run_id = u.run_id AND b.step = u.step
           JOIN trajectories t ON t.trajectory_id = u.trajectory_id
          WHERE u.run_id = $1 AND u.state = 'consumed'`,
        [runId],
      );
      return result.rows.map((row) => ({
        trajectoryId: row.trajectory_id,
        step: row.step,
        currentVersion: row.current_version,
        versions: row.versions,
      }));
    },
    /** Evaluation summaries (jsonb, unparsed) of the run or of the given policy versions, oldest first. */
    async evaluationSummaries(runId: string, versions: readonly number[], limit: number): Promise<unknown[]> {
      const result = await pool.query(
        `SELECT summary FROM evaluation_results WHERE run_id = $1 OR policy_version = ANY($2::int[]) ORDER BY created_at, result_id LIMIT $3`,
        [runId, versions, limit],
      );
      return result.rows.map((row) => row.summary);
    },
    /** Runs with trajectories, newest first. */
    async recentRuns(limit: number): Promise<RecentRun[]> {
      const result = await pool.query(
        `SELECT run_id, count(*)::int AS n, max(created_at) AS last_at FROM trajectories WHERE run_id <> ''
          GROUP BY run_id ORDER BY max(created_at) DESC LIMIT $1`,
        [limit],
      );
      return result.rows.map((row) => ({ runId: row.run_id, trajectories: row.n, lastAt: row.last_at }));
    },
  };
}

export type ReportSource = ReturnType<typeof createPgReportSource>;
