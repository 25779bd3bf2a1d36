/**
 * The chaos suite's learner workload: the real learner workflow (async, groups of 2, batches of 4)
 * over scripted questions, its trajectory children calling the ledger tool every turn, and a
 * simulated trainStep. Its invariants: every started trajectory completed with exactly one record
 * (row and blob) or is still running; each record consumed by at most one step; versions 0…n
 * consecutive, each the child of the one before; buffer counts exact; no blob outside the run's
 * trajectories and dataset.
 */
import { WorkflowNotFoundError } from '@temporalio/client';
import { setTimeout as sleep } from 'node:timers/promises';
import { learnerStateQuery, learnerWorkflowType, setConfigUpdate, type LearnerResult } from '../../workflows/contracts/learner.contract.js';
import { taskQueueName } from '../../workflows/contracts/queues.js';
import { persist, type ChaosContext, type ChaosWorkload } from './chaos-suite.js';

const runId = 'chaos-run';
const learnerId = 'chaos-learner';
const datasetKey = 'chaos/questions.jsonl';
const groupSize = 2;
const batchSize = 4;

export function learnerWorkload(questions = 4000): ChaosWorkload {
  let result: LearnerResult | undefined;
  return {
    name: 'learner',
    async start(context) {
      const lines = Array.from({ length: questions }, (_, index) =>
        JSON.stringify({
          id: `q${index}`,
          question: `script:{"turns":${2 + Math.floor(context.random() * 4)},"answer":"a","delayMs":${50 + Math.floor(context.random() * 100)}}`,
          answers: ['a'],
        }),
      );
      await context.services.blobs.put(datasetKey, lines.join('\n'));
      await context.services.versions.register({
        version: 0,
        name: 'chaos-v0',
        blobPrefix: 'chaos/versions/0/',
        files: [],
        manifest: { simulated: true },
        parentVersion: null,
      });
      await context.client.workflow.start(learnerWorkflowType, {
        taskQueue: taskQueueName('agent', context.config.taskQueuePrefix),
        workflowId: learnerId,
        args: [
          {
            runId,
            datasetKey,
            settings: {
              groupSize,
              batchSize,
              maxSteps: 100_000,
              eta: 1000,
              maxInflight: 16,
              dropEqualRewardGroups: false,
              interruptOnPublish: true,
            },
          },
        ],
      });
    },
    async progress(context) {
      const state = await context.client.workflow.getHandle(learnerId).query(learnerStateQuery);
      return `learner step ${state.step}, ${state.finished} finished, ${state.inflight} in flight, ${state.consumed} consumed`;
    },
    async running(context) {
      const description = await context.client.workflow.getHandle(learnerId).describe();
      return description.status.name === 'RUNNING';
    },
    async finish(context) {
      const handle = context.client.workflow.getHandle(learnerId);
      const state = await persist('querying the learner', () => handle.query(learnerStateQuery));
      if ((await handle.describe()).status.name === 'RUNNING')
        await persist('ending the learner', () => handle.executeUpdate(setConfigUpdate, { args: [{ maxSteps: state.step + 1 }] }));
      result = (await persist('waiting for the learner', () => handle.result(), 600_000)) as LearnerResult;
      context.log(
        `learner finished: ${result.steps} steps, version ${result.finalVersion}, ${result.consumed} consumed, ${result.dropped} dropped`,
      );
      // Children still in flight finish on their own (ParentClosePolicy ABANDON): wait for them a while.
      const deadline = Date.now() + 180_000;
      while (Date.now() < deadline) {
        const running = await persist('listing trajectories', () => countRunning(context));
        if (running === 0) break;
        await sleep(1000);
      }
    },
    async check(context) {
      const violations: string[] = [];
      const { pool, client } = context;
      const finalResult = result!;
      // Children: ids are <run>-q<n>-s<k>, n consecutive from 0.
      const statuses = new Map<string, string>();
      for (let question = 0; ; question += 1) {
        const ids = Array.from({ length: groupSize }, (_, sample) => `${runId}-q${question}-s${sample}`);
        const found = await Promise.all(
          ids.map(async (id) => {
            try {
              return [id, (await client.workflow.getHandle(id).describe()).status.name] as const;
            } catch (error) {
              if (error instanceof WorkflowNotFoundError) return undefined;
              throw error;
            }
          }),
        );
        const present = found.filter((entry) => entry !== undefined);
        if (present.length === 0) break;
        if (present.length < groupSize) violations.push(`group q${question} has ${present.length} of ${groupSize} children`);
        for (const [id, status] of present) statuses.set(id, status);
      }
      const records = await pool.query<{ trajectory_id: string; n: string }>(
        'SELECT trajectory_id, count(*) AS n FROM trajectories WHERE run_id = $1 GROUP BY trajectory_id',
        [runId],
      );
      const recordCount = new Map(records.rows.map((row) => [row.trajectory_id, Number(row.n)]));
      let completed = 0;
      let resumable = 0;
      for (const [id, status] of statuses) {
        if (status === 'COMPLETED') {
          completed += 1;
          if (recordCount.get(id) !== 1) violations.push(`${id} completed with ${recordCount.get(id) ?? 0} record rows`);
          if (!(await context.services.blobs.exists(`trajectories/${id}/record.json`)))
            violations.push(`${id} completed without its record blob`);
        } else if (status === 'RUNNING') {
          resumable += 1;
        } else {
          violations.push(`${id} ended ${status}: a trajectory was lost`);
        }
      }
      for (const id of recordCount.keys())
        if (!statuses.has(id)) violations.push(`record ${id} belongs to no trajectory the learner started`);

      // Each record consumed by at most one step; buffer counts exact.
      const twice = await pool.query<{ id: string; n: string }>(
        `SELECT id, count(*) AS n FROM (SELECT unnest(trajectory_ids) AS id FROM buffer_batches WHERE run_id = $1) claimed GROUP BY id HAVING count(*) > 1`,
        [runId],
      );
      for (const row of twice.rows) violations.push(`${row.id} claimed by ${row.n} training steps`);
      const batches = await pool.query<{ step: number; size: number }>(
        'SELECT step, cardinality(trajectory_ids) AS size FROM buffer_batches WHERE run_id = $1 ORDER BY step',
        [runId],
      );
      const claimed = batches.rows.reduce((sum, row) => sum + row.size, 0);
      const uses = await pool.query<{ state: string; n: string }>(
        'SELECT state, count(*) AS n FROM buffer_uses WHERE run_id = $1 GROUP BY state',
        [runId],
      );
      const used = Object.fromEntries(uses.rows.map((row) => [row.state, Number(row.n)]));
      if ((used.consumed ?? 0) !== claimed)
        violations.push(`buffer: ${used.consumed ?? 0} rows consumed, but the steps claimed ${claimed}`);
      if ((used.consumed ?? 0) !== finalResult.consumed)
        violations.push(`buffer: ${used.consumed ?? 0} rows consumed, the learner counted ${finalResult.consumed}`);
      // The learner's `dropped` counts its failed children too (they left the window untrained); they have no buffer row.
      const droppedRows = finalResult.dropped - finalResult.failed;
      if ((used.dropped ?? 0) !== droppedRows)
        violations.push(`buffer: ${used.dropped ?? 0} rows dropped, the learner dropped ${droppedRows} finished trajectories`);
      const mismatched = await pool.query<{ trajectory_id: string }>(
        `SELECT u.trajectory_id FROM buffer_uses u JOIN buffer_batches b ON b.run_id = u.run_id AND b.step = u.step
         WHERE u.run_id = $1 AND u.state = 'consumed' AND NOT (u.trajectory_id = ANY (b.trajectory_ids))`,
        [runId],
      );
      for (const row of mismatched.rows) violations.push(`${row.trajectory_id} marked consumed by a step that did not claim it`);

      // Versions: steps 0…n-1 claimed once each; versions 0…n registered, each the child of the one before.
      const steps = batches.rows.map((row) => row.step);
      if (steps.some((step, index) => step !== index) || steps.length !== finalResult.steps)
        violations.push(`claimed steps ${JSON.stringify(steps)} are not 0…${finalResult.steps - 1}`);
      const versions = await pool.query<{ version: number; parent_version: number | null }>(
        'SELECT version, parent_version FROM policy_versions ORDER BY version',
      );
      versions.rows.forEach((row, index) => {
        if (row.version !== index || row.parent_version !== (index === 0 ? null : index - 1))
          violations.push(`policy version ${row.version} (parent ${row.parent_version}) breaks the sequence at position ${index}`);
      });
      if (versions.rows.length !== finalResult.finalVersion + 1)
        violations.push(`${versions.rows.length} versions registered, the learner ended at version ${finalResult.finalVersion}`);
      const historyVersions = finalResult.history.map((stats) => stats.version);
      if (historyVersions.some((version, index) => version !== index + 1))
        violations.push(`learner history versions ${JSON.stringify(historyVersions)} are not consecutive`);

      // Blobs: every object belongs to a started trajectory, the dataset, or the payload codec.
      const objects = await context.services.blobs.list('');
      for (const key of objects) {
        const match = /^trajectories\/([^/]+)\//.exec(key);
        if (match && statuses.has(match[1]!)) continue;
        if (key === datasetKey || key.startsWith('payloads/')) continue;
        violations.push(`blob ${key} is referenced by nothing`);
      }
      return { violations, trajectories: statuses.size, completed, resumable, steps: finalResult.steps };
    },
  };
}

async function countRunning(context: ChaosContext): Promise<number> {
  let running = 0;
  for await (const _ of context.client.workflow.list({ query: `ExecutionStatus = "Running" AND WorkflowId STARTS_WITH "${runId}-"` }))
    running += 1;
  return running;
}
