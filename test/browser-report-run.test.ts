/**
 * `longhaul report` and `longhaul show` on a real run: a learner (scripted policy and tools, a
 * simulated train step) on the test stack, two held-out trajectories named as the demo names them,
 * evaluation results inserted as the evaluation workflow writes them (one malformed). The report is
 * written by the CLI, opened in headless Chromium (every chart drawn, no error), and links a page per
 * trajectory; `show` prints a trajectory as text and JSON; bad input exits 2 naming the argument.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { repoRoot } from '../infra/paths.js';
import { learnerWorkflowType, type LearnerResult } from '../workflows/contracts/learner.contract.js';
import { trajectoryWorkflowType } from '../workflows/contracts/trajectory.contract.js';
import type { EvaluationSummary } from '../activities/ports/evaluation-result.schema.js';
import { scriptedLearnerWorkers } from './helpers/agent-workers.js';
import { openContext, uniquePrefix, waitUntil } from './helpers/stack.js';
import { checkReportInBrowser } from './helpers/chromium.js';

const cli = (args: string[]) => {
  const result = spawnSync(process.execPath, [path.join(repoRoot, 'dist', 'cli', 'main.js'), ...args], {
    encoding: 'utf8',
    timeout: 180_000,
  });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
};

test(
  'longhaul report writes a self-contained report of a learner run whose charts render in Chromium; show prints its trajectories',
  { timeout: 420_000 },
  async () => {
    const prefix = uniquePrefix('report');
    const runId = `${prefix}run`;
    const context = await openContext(prefix);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'longhaul-report-run-'));
    try {
      // Even questions answer "result", which the first search shows and a second search confirms; odd ones answer "Lima", never seen.
      const questions = Array.from({ length: 6 }, (_, index) =>
        JSON.stringify({
          id: `q${index}`,
          question: `script:{"turns":3,"answer":"${index % 2 ? 'Lima' : 'result'}","delayMs":0}`,
          answers: ['result'],
          goldTurns: ['<search>query 0</search>', '<answer>result</answer>'],
          hops: 1,
        }),
      );
      await context.blobs.put(`datasets/${runId}/train.jsonl`, questions.join('\n'));
      const workers = await scriptedLearnerWorkers(context);
      const result = await workers.run(async () => {
        const learned = (await context.client.workflow.execute(learnerWorkflowType, {
          taskQueue: context.queue('agent'),
          workflowId: `learner-${runId}`,
          args: [
            {
              runId,
              datasetKey: `datasets/${runId}/train.jsonl`,
              settings: {
                mode: 'async',
                groupSize: 2,
                batchSize: 4,
                maxSteps: 2,
                eta: 2,
                maxInflight: 8,
                dropEqualRewardGroups: false,
                interruptOnPublish: false,
              },
            },
          ],
        })) as LearnerResult;
        // Held-out trajectories as the demo runs them: ids <run>-eval-<stage>-<i>, no runId (they stay out of the buffer).
        await Promise.all(
          [0, 1].map((index) =>
            context.client.workflow.execute(trajectoryWorkflowType, {
              taskQueue: context.queue('agent'),
              workflowId: `${runId}-eval-after-${index}`,
              args: [
                {
                  question: `script:{"turns":2,"answer":"result"} held-out ${index}`,
                  answers: ['result'],
                  questionId: `h${index}`,
                  dataset: 'demo-eval-after',
                },
              ],
            }),
          ),
        );
        return learned;
      });
      assert.equal(result.steps, 2);

      const summary: EvaluationSummary = {
        resultId: `${prefix}eval-1`,
        dataset: 'bamboogle-sample',
        datasetVersion: 'sha256:abc',
        questions: 20,
        k: 4,
        policyVersion: result.finalVersion,
        avgAtK: { em: 0.25, f1_asearcher: 0.31 },
        avgAtKCi95: { em: [0.1, 0.4] },
        passAtK: { em: 0.45 },
        meanTurns: 3.2,
        meanToolCalls: 2.1,
        stopReasons: { answered: 80 },
        runId,
        seconds: 12,
        createdAt: new Date().toISOString(),
      };
      const insert =
        'INSERT INTO evaluation_results (result_id, dataset, dataset_version, policy_version, k, questions, run_id, summary, result_key) VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9)';
      await context.pool.query(insert, [
        summary.resultId,
        summary.dataset,
        summary.datasetVersion,
        summary.policyVersion,
        4,
        20,
        runId,
        JSON.stringify(summary),
        `evaluations/${summary.resultId}/result.json`,
      ]);
      await context.pool.query(insert, [
        `${prefix}eval-bad`,
        'x',
        'x',
        result.finalVersion,
        1,
        1,
        runId,
        JSON.stringify({ resultId: 'bad' }),
        'x',
      ]);

      const out = path.join(dir, 'run.html');
      const report = cli(['report', '--run', runId, '--out', out]);
      assert.equal(report.code, 0, report.stderr);
      assert.match(report.stdout, new RegExp(`Longhaul report ${runId}`));
      const { rows: counted } = await context.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM trajectories WHERE run_id = $1', [
        runId,
      ]);
      const training = counted[0]!.n;
      assert.ok(training >= 8, 'the two steps consumed 8 trajectories');
      assert.match(report.stdout, new RegExp(`trajectories: ${training} training, 2 held-out · steps 2 · final version v2`));
      assert.match(report.stdout, /training reward per version \(mean \[95 % CI\]\): v0 /);
      assert.match(report.stdout, /held-out bamboogle-sample EM Avg@4: v2 0\.250 \[0\.100, 0\.400\]/);
      assert.match(report.stdout, /note: an evaluation_results row does not match evaluationSummarySchema/);
      assert.match(report.stdout, /behaviour v0 \(\d+\): verified \d+ %/);
      assert.ok(report.stdout.trim().endsWith(`report: ${out}`));

      const html = fs.readFileSync(out, 'utf8');
      assert.ok(!/<script[^>]+src=/i.test(html) && !/<link[^>]+href="http/i.test(html), 'nothing is fetched at view time');
      assert.match(html, /bamboogle-sample/);
      assert.match(html, /datasets\/[^<]*train\.jsonl<\/code><\/td><td>6<\/td>/, 'the training set has 6 questions');
      assert.match(html, /hops \(6\)/, 'extra fields of the set are counted');
      const pages = fs.readdirSync(path.join(dir, 'run.trajectories'));
      assert.equal(pages.length, training + 2, 'one page per trajectory');
      for (const page of pages) assert.ok(html.includes(`href="run.trajectories/${page}"`), `the report links ${page}`);
      const held = fs.readFileSync(path.join(dir, 'run.trajectories', `${runId}-eval-after-0.html`), 'utf8');
      assert.match(held, /held-out 0/);
      assert.match(held, /result 0 for query 0/, 'the page shows the observation');

      const page = await checkReportInBrowser(out);
      assert.ok(page.done, 'the page script finished');
      assert.deepEqual(page.errors, []);
      for (const id of [
        'chart-training-reward',
        'chart-held-out',
        'chart-staleness-steps',
        'chart-trainer-busy',
        'chart-turns',
        'chart-tool-calls',
        'chart-behaviour-shares',
        'chart-dataset-hops',
      ])
        assert.ok(
          page.charts.some((chart) => chart.id === id),
          `${id} is in the report`,
        );
      for (const chart of page.charts) {
        assert.ok(chart.rendered, `${chart.id} rendered`);
        assert.ok(chart.inkShare > 0.01, `${chart.id} has drawn pixels (${(chart.inkShare * 100).toFixed(2)} %; ${page.screenshot})`);
      }

      const { rows } = await context.pool.query<{ trajectory_id: string }>(
        "SELECT trajectory_id FROM trajectories WHERE run_id = $1 AND answer = 'result' LIMIT 1",
        [runId],
      );
      const id = rows[0]!.trajectory_id;
      const shown = cli(['show', id]);
      assert.equal(shown.code, 0, shown.stderr);
      assert.match(shown.stdout, new RegExp(`trajectory ${id}`));
      assert.match(shown.stdout, /── turn 0 · asked v\d+/);
      assert.match(shown.stdout, /search\(\{"query":"query 0"\}\)/);
      assert.match(shown.stdout, /‹ result 0 for query 0/);
      assert.match(shown.stdout, /answer verified by a further search: yes/);
      const json = cli(['show', id, '--json']);
      assert.equal(json.code, 0, json.stderr);
      const parsed = JSON.parse(json.stdout) as {
        trajectory: { trajectoryId: string; turns: unknown[] };
        behaviour: { toolCalls: number; verifiedBySearch: boolean };
      };
      assert.equal(parsed.trajectory.trajectoryId, id);
      assert.equal(parsed.trajectory.turns.length, 3);
      assert.equal(parsed.behaviour.toolCalls, 2);
      assert.equal(parsed.behaviour.verifiedBySearch, true);

      // The Web UI: each child says what it is and where to read it; search attributes filter by run, question, reward, version and status.
      const child = await context.client.workflow.getHandle(id).describe();
      assert.match((await child.staticSummary()) ?? '', /^q\d: script:/);
      const details = (await child.staticDetails()) ?? '';
      assert.match(details, new RegExp(`longhaul show ${id}`));
      assert.ok(details.includes('dataset `datasets/' + runId + '/train.jsonl`'), details);
      assert.match(details, new RegExp(`LonghaulRunId = '${runId}' AND LonghaulQuestionId = 'q\\d'`));
      const query = `LonghaulKind = 'trajectory' AND LonghaulRunId = '${runId}' AND LonghaulReward >= 1 AND LonghaulPolicyVersion >= 0 AND LonghaulStatus = 'completed'`;
      const rewarded = await context.pool.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM trajectories WHERE run_id = $1 AND reward >= 1',
        [runId],
      );
      assert.ok(rewarded.rows[0]!.n > 0);
      let listed = -1;
      // Visibility is updated asynchronously: poll until the list agrees with the table.
      await waitUntil(
        async () => {
          listed = 0;
          for await (const execution of context.client.workflow.list({ query })) if (execution.workflowId) listed += 1;
          return listed === rewarded.rows[0]!.n;
        },
        30_000,
        `the query ${query} to list the ${rewarded.rows[0]!.n} rewarded trajectories (lists ${listed})`,
      );

      const unknown = cli(['show', `${prefix}no-such-trajectory`]);
      assert.equal(unknown.code, 2);
      assert.match(unknown.stderr, /<trajectory-id>: trajectory .* has no record/);
      const noRun = cli(['report', '--run', `${prefix}no-such-run`]);
      assert.equal(noRun.code, 2);
      assert.match(noRun.stderr, /--run ".*no-such-run" has no trajectories, no demo report and no benchmark result \(recent runs: /);
      const badLimit = cli(['report', '--max-trajectories', '0']);
      assert.equal(badLimit.code, 2);
      assert.match(badLimit.stderr, /--max-trajectories expects an integer between 1 and/);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
      await context.close();
    }
  },
);
