/**
 * The report of a demo run made with --rl-from: its base and warm-start stages are another run's evaluations
 * (result ids `<source>-eval-<stage>`), and their trajectories belong in its report beside its own, while those
 * of any other run stay out. Its RL groups are counted by the question set they drew from (the split's blobs named in
 * its JSON report). Real Postgres and blob store of the test stack; rows written by the trajectory store.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { gatherReport } from '../cli/report/gather-report.js';
import { createPgReportSource } from '../infra/postgres/report-source.pg.js';
import { createPgTrajectoryStore, questionIdsOfRuns } from '../infra/postgres/trajectory-store.pg.js';
import { evaluationRunId } from '../workflows/contracts/evaluation.contract.js';
import { openContext, uniquePrefix } from './helpers/stack.js';

test(
  "an --rl-from demo's report holds its source's base and warm-start evaluation trajectories, and its RL signal by question set",
  { timeout: 60_000 },
  async () => {
    const prefix = uniquePrefix('report-rl-from');
    const source = `${prefix}src`;
    const runId = `${prefix}ablation`;
    const context = await openContext(prefix);
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'longhaul-report-rl-from-'));
    try {
      const store = createPgTrajectoryStore(context.pool);
      const row = (resultId: string, version: number) => ({
        trajectoryId: `${evaluationRunId(resultId)}-q0-s0`,
        runId: evaluationRunId(resultId),
        dataset: 'demo-heldout',
        questionId: 'q0',
        question: 'Capital of Peru?',
        answer: 'Lima',
        gold: ['Lima'],
        reward: 1,
        rewardParts: { em: 1 },
        stopReason: 'answered',
        turns: 2,
        invalidSteps: 0,
        generatedTokens: 10,
        versions: [version],
        recordKey: `trajectories/${evaluationRunId(resultId)}-q0-s0.json`,
      });
      // The source's base and warm evaluations, its own RL evaluation (not this run's stage), and the ablation's.
      for (const [resultId, version] of [
        [`${source}-eval-base`, 1],
        [`${source}-eval-warm`, 2],
        [`${source}-eval-rl`, 3],
        [`${runId}-eval-rl`, 5],
      ] as const)
        assert.ok(await store.insert(row(resultId, version)));
      // The run's RL groups: a warm-start question (one right, one wrong) and a candidate drawn by the curriculum (both wrong).
      const keys = { warmStart: `datasets/${source}/warm-start.jsonl`, candidates: `datasets/${source}/candidates.jsonl` };
      await context.blobs.put(
        keys.warmStart,
        `${JSON.stringify({ id: 'w0', question: 'q', answers: ['a'], hops: 2 })}\n`,
        'application/x-ndjson',
      );
      await context.blobs.put(
        keys.candidates,
        `${JSON.stringify({ id: 'c0', question: 'q', answers: ['b'], hops: 1 })}\n`,
        'application/x-ndjson',
      );
      const training = (group: string, questionId: string, sample: number, em: number) => ({
        ...row(`${source}-eval-base`, 4),
        trajectoryId: `${runId}-${group}-s${sample}`,
        runId,
        dataset: `datasets/${runId}/train.jsonl`,
        questionId,
        reward: em,
        rewardParts: { em },
        recordKey: `trajectories/${runId}-${group}-s${sample}.json`,
      });
      for (const sample of [
        training('q0', 'w0', 0, 1),
        training('q0', 'w0', 1, 0),
        training('q1-g2', 'c0/g2', 0, 0),
        training('q1-g2', 'c0/g2', 1, 0),
      ])
        assert.ok(await store.insert(sample));
      const stage = (name: string, version: number, resultId: string) => ({
        stage: name,
        version,
        heldOut: { resultId, dataset: 'demo-heldout', questions: 1, k: 1, em: 1, emCi95: [1, 1], meanToolCalls: 0 },
      });
      fs.mkdirSync(path.join(home, 'reports'));
      fs.writeFileSync(
        path.join(home, 'reports', `${runId}.json`),
        JSON.stringify({
          runId,
          seconds: 10,
          plan: { rlFrom: source },
          split: { keys },
          stages: [stage('base', 1, `${source}-eval-base`), stage('warm', 2, `${source}-eval-warm`), stage('rl', 5, `${runId}-eval-rl`)],
        }),
      );
      const { model } = await gatherReport(
        { source: createPgReportSource(context.pool), blobs: context.blobs, client: null, home },
        { runId },
      );
      assert.deepEqual(
        model.trajectories
          .filter((item) => item.group === 'held-out')
          .map((item) => item.trajectoryId)
          .sort(),
        [`${source}-eval-base`, `${source}-eval-warm`, `${runId}-eval-rl`].map((id) => `${evaluationRunId(id)}-q0-s0`).sort(),
        "the source's base and warm evaluations and the run's own; not the source's RL evaluation",
      );
      assert.equal(model.summary.heldOutTrajectories, 3);
      assert.equal(model.summary.trainingTrajectories, 4);
      // What an --rl-continue run of this one reads to draw new questions first: the ids as stored.
      assert.deepEqual(await questionIdsOfRuns(context.pool, [runId]), ['c0/g2', 'w0']);
      assert.deepEqual(await questionIdsOfRuns(context.pool, []), []);
      assert.deepEqual(model.rlSignal, [
        { source: 'warm-start', hops: 2, goldTurns: null, groups: 1, samples: 2, right: 1, mixed: 1, equalReward: 0 },
        { source: 'candidate', hops: 1, goldTurns: null, groups: 1, samples: 2, right: 0, mixed: 0, equalReward: 1 },
      ]);
      // Where the advantage went: the right answer of q0 up, its wrong one down, the equal group nothing.
      const advantage = model.rlAdvantage ?? [];
      assert.deepEqual(
        advantage.map((entry) => [entry.outcome, entry.samples, entry.meanReward]),
        [
          ['right', 1, 1],
          ['wrong answer', 3, 0],
        ],
      );
      assert.ok(Math.abs(advantage[0]!.advantage - 1) < 1e-5 && Math.abs(advantage[1]!.advantage + 1) < 1e-5, JSON.stringify(advantage));
    } finally {
      await context.close();
      fs.rmSync(home, { recursive: true, force: true });
    }
  },
);
