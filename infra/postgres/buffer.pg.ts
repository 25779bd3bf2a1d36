/**
 * The training buffer in Postgres (migration 0040). A claim runs in one transaction: it first
 * inserts the (run_id, step) row of buffer_batches, so a concurrent claim of the same step waits on
 * the key and then sees the finished claim; candidates are locked FOR UPDATE SKIP LOCKED; the
 * primary key of buffer_uses makes using a trajectory twice impossible (a lost race rolls back
 * and the claim is retried).
 */
import type pg from 'pg';
import { z } from 'zod';
import type { BufferCounts, ClaimBatchRequest, ClaimedBatch, TrajectoryBuffer } from '../../activities/ports/buffer.port.js';
import { withTransaction } from './database.js';

const oldestVersion = '(SELECT min(v) FROM unnest(t.versions) v)';
const unused = 'NOT EXISTS (SELECT 1 FROM buffer_uses u WHERE u.trajectory_id = t.trajectory_id)';

const candidateSchema = z.object({
  trajectory_id: z.string(),
  question_id: z.string(),
  reward: z.number(),
  generated_tokens: z.number().int(),
  oldest: z.number().int(),
  created_at: z.date(),
  group_mean: z.number().nullable(),
});
type Candidate = z.infer<typeof candidateSchema>;

interface Group {
  members: Candidate[];
  /** The newest of the members' oldest-token versions (freshness). */
  oldest: number;
  /** The oldest token version of the whole group (its staleness). */
  stalest: number;
  newest: number;
  priority: number;
}

function groupsOf(candidates: Candidate[]): Group[] {
  const byKey = new Map<string, Candidate[]>();
  for (const candidate of candidates) {
    const key = candidate.question_id || `trajectory:${candidate.trajectory_id}`;
    byKey.set(key, [...(byKey.get(key) ?? []), candidate]);
  }
  return [...byKey.values()].map((members) => ({
    members: [...members].sort((a, b) => a.created_at.getTime() - b.created_at.getTime() || a.trajectory_id.localeCompare(b.trajectory_id)),
    oldest: Math.max(...members.map((member) => member.oldest)),
    stalest: Math.min(...members.map((member) => member.oldest)),
    newest: Math.max(...members.map((member) => member.created_at.getTime())),
    priority:
      members.reduce(
        (sum, member) => sum + Math.abs(member.reward - (member.group_mean ?? member.reward)) * Math.log(Math.E + member.generated_tokens),
        0,
      ) / members.length,
  }));
}

/** Whole groups in selection order while they fit; a group larger than the whole batch is cut only when the batch is empty. */
function selectTrajectories(candidates: Candidate[], request: ClaimBatchRequest): string[] {
  const fresher = (a: Group, b: Group) => b.oldest - a.oldest || b.newest - a.newest;
  const lastChance = (group: Group) => (group.stalest <= request.currentVersion - request.eta ? 1 : 0);
  const order =
    request.selection === 'priority'
      ? (a: Group, b: Group) => b.priority - a.priority || fresher(a, b)
      : request.selection === 'expiring'
        ? (a: Group, b: Group) => lastChance(b) - lastChance(a) || fresher(a, b)
        : fresher;
  const chosen: string[] = [];
  for (const group of groupsOf(candidates)
    .filter((g) => g.members.length >= (request.minGroupSize ?? 1))
    .sort(order)) {
    const room = request.batchSize - chosen.length;
    if (group.members.length <= room) chosen.push(...group.members.map((member) => member.trajectory_id));
    else if (chosen.length === 0) chosen.push(...group.members.slice(0, room).map((member) => member.trajectory_id));
    if (chosen.length === request.batchSize) break;
  }
  return chosen;
}

/**
 * Choose from the unlocked candidates, then lock exactly the chosen rows (SKIP LOCKED); rows a
 * concurrent claim holds are excluded and the choice is made again, so claims of different steps
 * split the buffer instead of waiting on each other.
 */
async function chooseAndLock(client: pg.ClientBase, request: ClaimBatchRequest): Promise<string[]> {
  const excluded: string[] = [];
  for (let round = 0; round < 20; round += 1) {
    const found = await client.query(
      `SELECT t.trajectory_id, t.question_id, t.reward, t.generated_tokens, ${oldestVersion} AS oldest, t.created_at,
              (SELECT avg(g.reward) FROM trajectories g WHERE g.run_id = t.run_id AND g.question_id = t.question_id AND t.question_id <> '') AS group_mean
         FROM trajectories t
        WHERE t.run_id = $1 AND ${unused} AND ${oldestVersion} >= $2 AND t.reward <> 'NaN'::float8 AND NOT (t.trajectory_id = ANY($3::text[]))`,
      [request.runId, request.currentVersion - request.eta, excluded],
    );
    const chosen = selectTrajectories(
      found.rows.map((row) => candidateSchema.parse(row)),
      request,
    );
    if (chosen.length === 0) return [];
    const locked = await client.query<{ trajectory_id: string }>(
      `SELECT t.trajectory_id FROM trajectories t WHERE t.trajectory_id = ANY($1::text[]) AND ${unused} FOR UPDATE SKIP LOCKED`,
      [chosen],
    );
    const held = new Set(locked.rows.map((row) => row.trajectory_id));
    if (held.size === chosen.length) return chosen;
    excluded.push(...chosen.filter((id) => !held.has(id)));
  }
  return [];
}

/** One claim attempt, inside a transaction that withTransaction commits only when `claimedNow`. */
async function claimOnce(client: pg.ClientBase, request: ClaimBatchRequest): Promise<ClaimedBatch> {
  const { runId, step } = request;
  const placed = await client.query(
    "INSERT INTO buffer_batches (run_id, step, trajectory_ids, current_version, eta, selection) VALUES ($1, $2, '{}', $3, $4, $5) ON CONFLICT (run_id, step) DO NOTHING",
    [runId, step, request.currentVersion, request.eta, request.selection],
  );
  if (placed.rowCount === 0) {
    const existing = await client.query('SELECT trajectory_ids FROM buffer_batches WHERE run_id = $1 AND step = $2', [runId, step]);
    return { trajectoryIds: z.array(z.string()).parse(existing.rows[0]?.trajectory_ids), claimedNow: false };
  }
  const chosen = await chooseAndLock(client, request);
  if (chosen.length === 0) return { trajectoryIds: [], claimedNow: false }; // nothing to train on yet: rolled back, the step stays unclaimed
  await client.query(
    "INSERT INTO buffer_uses (trajectory_id, run_id, step, state) SELECT id, $1, $2, 'consumed' FROM unnest($3::text[]) AS id",
    [runId, step, chosen],
  );
  await client.query('UPDATE buffer_batches SET trajectory_ids = $3 WHERE run_id = $1 AND step = $2', [runId, step, chosen]);
  return { trajectoryIds: chosen, claimedNow: true };
}

const countsSchema = z.object({
  unconsumed: z.coerce.number().int(),
  eligible: z.coerce.number().int(),
  consumed: z.coerce.number().int(),
  dropped: z.coerce.number().int(),
  dropped_stale: z.coerce.number().int(),
});

export function createPgTrajectoryBuffer(pool: pg.Pool): TrajectoryBuffer {
  return {
    async claimBatch(request) {
      for (let attempt = 1; ; attempt += 1) {
        try {
          return await withTransaction(pool, (client) => claimOnce(client, request), { commitIf: (claimed) => claimed.claimedNow });
        } catch (error) {
          // 23505: a concurrent claim used one of our candidates first; choose again.
          if ((error as { code?: string }).code !== '23505' || attempt >= 5) throw error;
        }
      }
    },
    async drop(runId, trajectoryIds, reason) {
      const result = await pool.query(
        `INSERT INTO buffer_uses (trajectory_id, run_id, state, reason)
         SELECT t.trajectory_id, t.run_id, 'dropped', $3 FROM trajectories t WHERE t.run_id = $1 AND t.trajectory_id = ANY($2::text[])
         ON CONFLICT (trajectory_id) DO NOTHING`,
        [runId, [...trajectoryIds], reason],
      );
      return result.rowCount ?? 0;
    },
    async releaseStale(runId, currentVersion, eta) {
      const result = await pool.query(
        `INSERT INTO buffer_uses (trajectory_id, run_id, state, reason)
         SELECT t.trajectory_id, t.run_id, 'dropped', 'stale' FROM trajectories t WHERE t.run_id = $1 AND ${unused} AND ${oldestVersion} < $2
         ON CONFLICT (trajectory_id) DO NOTHING`,
        [runId, currentVersion - eta],
      );
      return result.rowCount ?? 0;
    },
    async counts(runId, currentVersion, eta): Promise<BufferCounts> {
      const result = await pool.query(
        `SELECT count(*) FILTER (WHERE u.trajectory_id IS NULL) AS unconsumed,
                count(*) FILTER (WHERE u.trajectory_id IS NULL AND ${oldestVersion} >= $2) AS eligible,
                count(*) FILTER (WHERE u.state = 'consumed') AS consumed,
                count(*) FILTER (WHERE u.state = 'dropped') AS dropped,
                count(*) FILTER (WHERE u.state = 'dropped' AND u.reason = 'stale') AS dropped_stale
           FROM trajectories t LEFT JOIN buffer_uses u ON u.trajectory_id = t.trajectory_id
          WHERE t.run_id = $1`,
        [runId, currentVersion - eta],
      );
      const row = countsSchema.parse(result.rows[0]);
      return {
        unconsumed: row.unconsumed,
        eligible: row.eligible,
        consumed: row.consumed,
        dropped: row.dropped,
        droppedStale: row.dropped_stale,
      };
    },
  };
}
