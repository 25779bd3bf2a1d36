/**
 * The Postgres training buffer: one step's claim is stable across retries, no trajectory is ever in
 * two steps (also under concurrent claims), staleness and priority selection, drops and counts.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { ApplicationFailure } from '@temporalio/common';
import { createBufferActivities } from '../activities/buffer.activities.js';
import { createPgTrajectoryBuffer } from '../infra/postgres/buffer.pg.js';
import { createPgTrajectoryStore } from '../infra/postgres/trajectory-store.pg.js';
import { openContext, uniquePrefix, type TestContext } from './helpers/stack.js';
import { writeTrajectory } from './helpers/trajectories.js';

describe('the training buffer', () => {
  let context: TestContext;
  let activities: ReturnType<typeof createBufferActivities>;

  before(async () => {
    context = await openContext(uniquePrefix('buffer'));
    activities = createBufferActivities({ buffer: createPgTrajectoryBuffer(context.pool) });
  });
  after(() => context.close());

  async function seedRun(groups: { question: string; rewards: number[]; version: number }[]): Promise<string> {
    const runId = `run-${randomUUID().slice(0, 8)}`;
    const stores = { blobs: context.blobs, trajectories: createPgTrajectoryStore(context.pool) };
    for (const group of groups) {
      for (const [index, reward] of group.rewards.entries()) {
        await writeTrajectory(stores, runId, {
          id: `${runId}-${group.question}-${index}`,
          questionId: group.question,
          reward,
          version: group.version,
        });
      }
    }
    return runId;
  }

  it('gives a retried step the same trajectories and never gives them to another step; stale ones are released and counted', async () => {
    const runId = await seedRun([
      { question: 'q1', rewards: [1, 0], version: 5 },
      { question: 'q2', rewards: [0, 1], version: 5 },
      { question: 'q3', rewards: [1, 0], version: 0 },
    ]);
    const claim = { runId, step: 0, batchSize: 4, currentVersion: 5, eta: 2, selection: 'freshest', minGroupSize: 2 };
    const first = await activities.claimBatch(claim);
    assert.deepEqual([...first.trajectoryIds].sort(), [`${runId}-q1-0`, `${runId}-q1-1`, `${runId}-q2-0`, `${runId}-q2-1`]);
    assert.equal(first.claimedNow, true);
    assert.deepEqual(await activities.claimBatch(claim), { trajectoryIds: first.trajectoryIds, claimedNow: false });
    assert.deepEqual(await activities.claimBatch({ ...claim, step: 1 }), { trajectoryIds: [], claimedNow: false });
    assert.deepEqual(await activities.bufferCounts({ runId, currentVersion: 5, eta: 2 }), {
      unconsumed: 2,
      eligible: 0,
      consumed: 4,
      dropped: 0,
      droppedStale: 0,
    });
    assert.deepEqual(await activities.releaseStaleTrajectories({ runId, currentVersion: 5, eta: 2 }), { dropped: 2 });
    assert.deepEqual(await activities.bufferCounts({ runId, currentVersion: 5, eta: 2 }), {
      unconsumed: 0,
      eligible: 0,
      consumed: 4,
      dropped: 2,
      droppedStale: 2,
    });
    assert.deepEqual(await activities.dropTrajectories({ runId, trajectoryIds: first.trajectoryIds, reason: 'equal rewards' }), {
      dropped: 0,
    });
  });

  it('lets concurrent claims of different steps split the run without sharing a trajectory, and concurrent claims of one step agree', async () => {
    const runId = await seedRun(Array.from({ length: 8 }, (_, index) => ({ question: `q${index}`, rewards: [1, 0], version: 2 })));
    const claim = (step: number) =>
      activities.claimBatch({ runId, step, batchSize: 4, currentVersion: 2, eta: 4, selection: 'freshest', minGroupSize: 2 });
    const batches = await Promise.all([0, 1, 2, 3].map(claim));
    const ids = batches.flatMap((batch) => batch.trajectoryIds);
    assert.deepEqual(
      batches.map((batch) => batch.trajectoryIds.length),
      [4, 4, 4, 4],
    );
    assert.equal(new Set(ids).size, 16);
    const rows = await context.pool.query<{ n: string }>('SELECT count(*) AS n FROM buffer_uses WHERE run_id = $1 AND state = $2', [
      runId,
      'consumed',
    ]);
    assert.equal(rows.rows[0]!.n, '16');

    const other = await seedRun([{ question: 'q', rewards: [1, 0, 1, 0], version: 0 }]);
    const same = await Promise.all(
      [1, 2, 3].map(() => activities.claimBatch({ runId: other, step: 7, batchSize: 4, currentVersion: 0, eta: 0, selection: 'freshest' })),
    );
    assert.equal(same.filter((batch) => batch.claimedNow).length, 1);
    assert.deepEqual(
      same.map((batch) => [...batch.trajectoryIds].sort()),
      [0, 1, 2].map(() => [0, 1, 2, 3].map((index) => `${other}-q-${index}`)),
    );
  });

  it('takes the groups whose rewards differ most first with priority selection', async () => {
    const runId = await seedRun([
      { question: 'spread', rewards: [1, 0], version: 1 },
      { question: 'equal', rewards: [1, 1], version: 1 },
    ]);
    const batch = await activities.claimBatch({
      runId,
      step: 0,
      batchSize: 2,
      currentVersion: 1,
      eta: 1,
      selection: 'priority',
      minGroupSize: 2,
    });
    assert.deepEqual(batch.trajectoryIds, [`${runId}-spread-0`, `${runId}-spread-1`]);
  });

  it('takes the groups this step is the last able to train first with expiring selection, the freshest otherwise', async () => {
    const runId = await seedRun([
      { question: 'edge', rewards: [1, 0], version: 3 },
      { question: 'mid', rewards: [0, 1], version: 4 },
      { question: 'new', rewards: [1, 0], version: 5 },
    ]);
    const claim = { runId, batchSize: 4, currentVersion: 5, eta: 2, minGroupSize: 2 };
    const freshest = await activities.claimBatch({ ...claim, step: 0, selection: 'freshest' });
    assert.deepEqual(freshest.trajectoryIds, [`${runId}-new-0`, `${runId}-new-1`, `${runId}-mid-0`, `${runId}-mid-1`]);
    const other = await seedRun([
      { question: 'edge', rewards: [1, 0], version: 3 },
      { question: 'mid', rewards: [0, 1], version: 4 },
      { question: 'new', rewards: [1, 0], version: 5 },
    ]);
    const expiring = await activities.claimBatch({ ...claim, runId: other, step: 0, selection: 'expiring' });
    assert.deepEqual(expiring.trajectoryIds, [`${other}-edge-0`, `${other}-edge-1`, `${other}-new-0`, `${other}-new-1`]);
  });

  it('refuses a bad claim without retrying, naming the field', async () => {
    await assert.rejects(
      activities.claimBatch({ runId: 'r', step: 0, batchSize: 4, currentVersion: 3, eta: -1, selection: 'freshest' }),
      (error: unknown) =>
        error instanceof ApplicationFailure &&
        error.nonRetryable &&
        error.type === 'LonghaulInvalidInput' &&
        error.message === 'claimBatch: eta: Too small: expected number to be >=0',
    );
  });
});
