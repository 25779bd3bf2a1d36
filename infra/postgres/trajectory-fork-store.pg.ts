import type pg from 'pg';
import { z } from 'zod';
import type { ForkRow, ForkTreeNode, TrajectoryForkStore } from '../../activities/ports/trajectory-fork-store.port.js';

const forkRowSchema = z.object({
  child_id: z.string(),
  parent_id: z.string(),
  fork_turn: z.number().int(),
  seed: z.number().int(),
  temperature: z.number(),
});
const outcomeSchema = z.object({
  trajectory_id: z.string(),
  reward: z.number(),
  turns: z.number().int(),
  stop_reason: z.string(),
  answer: z.string().nullable(),
});

const toRow = (row: z.infer<typeof forkRowSchema>): ForkRow => ({
  childId: row.child_id,
  parentId: row.parent_id,
  forkTurn: row.fork_turn,
  seed: row.seed,
  temperature: row.temperature,
});

/** Lineages deeper than this are cut (a cycle cannot be written through `longhaul fork`, but a hand-made row could make one). */
const MAX_DEPTH = 100;

export function createPgTrajectoryForkStore(pool: pg.Pool): TrajectoryForkStore {
  async function parentOf(trajectoryId: string): Promise<ForkRow | undefined> {
    const { rows } = await pool.query(
      'SELECT child_id, parent_id, fork_turn, seed, temperature FROM trajectory_forks WHERE child_id = $1',
      [trajectoryId],
    );
    return rows[0] === undefined ? undefined : toRow(forkRowSchema.parse(rows[0]));
  }
  return {
    async record(row) {
      await pool.query(
        `INSERT INTO trajectory_forks (child_id, parent_id, fork_turn, seed, temperature) VALUES ($1,$2,$3,$4,$5)
         ON CONFLICT (child_id) DO NOTHING`,
        [row.childId, row.parentId, row.forkTurn, row.seed, row.temperature],
      );
    },
    parentOf,
    async tree(trajectoryId) {
      let root = trajectoryId;
      for (let depth = 0; depth < MAX_DEPTH; depth += 1) {
        const parent = await parentOf(root);
        if (!parent) break;
        root = parent.parentId;
      }
      const { rows } = await pool.query(
        `WITH RECURSIVE lineage AS (
           SELECT child_id, parent_id, fork_turn, seed, temperature, created_at, 1 AS depth FROM trajectory_forks WHERE parent_id = $1
           UNION ALL
           SELECT f.child_id, f.parent_id, f.fork_turn, f.seed, f.temperature, f.created_at, l.depth + 1
             FROM trajectory_forks f JOIN lineage l ON f.parent_id = l.child_id WHERE l.depth < $2
         )
         SELECT child_id, parent_id, fork_turn, seed, temperature FROM lineage ORDER BY fork_turn, created_at, child_id`,
        [root, MAX_DEPTH],
      );
      const forks = rows.map((row) => toRow(forkRowSchema.parse(row)));
      const ids = [root, ...forks.map((fork) => fork.childId)];
      const outcomes = new Map(
        (
          await pool.query('SELECT trajectory_id, reward, turns, stop_reason, answer FROM trajectories WHERE trajectory_id = ANY($1)', [
            ids,
          ])
        ).rows.map((row) => {
          const parsed = outcomeSchema.parse(row);
          return [
            parsed.trajectory_id,
            { reward: parsed.reward, turns: parsed.turns, stopReason: parsed.stop_reason, answer: parsed.answer },
          ];
        }),
      );
      const build = (id: string, fork: ForkRow | undefined, seen: Set<string>): ForkTreeNode => {
        const outcome = outcomes.get(id);
        const next = new Set(seen).add(id);
        return {
          trajectoryId: id,
          ...(fork ? { fork: { forkTurn: fork.forkTurn, seed: fork.seed, temperature: fork.temperature } } : {}),
          ...(outcome ? { outcome } : {}),
          children: forks
            .filter((child) => child.parentId === id && !next.has(child.childId))
            .map((child) => build(child.childId, child, next)),
        };
      };
      return build(root, undefined, new Set());
    },
  };
}
