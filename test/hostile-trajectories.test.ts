/**
 * Hostile-input corpus, boundary "whole trajectories" (test/fixtures/hostile/trajectories.json): text
 * Postgres refuses (NUL) or that is not Unicode (unpaired UTF-16 surrogates) in the model's final
 * answer, the question, the gold answers and the ids, and a web-search API that hangs, dribbles or
 * sends 10 MB, each carried through a whole trajectory workflow on the real stack — the same path a
 * learner's rollout takes: static summary and details, search attributes, generateTurn, the tools
 * activity, finishTrajectory's record blob and row, the current details. Every case must complete
 * with exactly one record, nothing it wrote to Postgres or Temporal holding a NUL or an unpaired
 * surrogate, the reward scored on the sanitised answer and the raw generation kept in the record.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createToolActivities } from '../activities/tools/run-tools.activities.js';
import { buildToolRegistry } from '../composition/tool-registry.js';
import { createPgTrajectoryStore } from '../infra/postgres/trajectory-store.pg.js';
import { createPgToolCallStore } from '../infra/search/tool-call-store.pg.js';
import { hasUnreadableText, readableText } from '../workflows/contracts/readable-text.js';
import { searchAttributes } from '../workflows/contracts/search-attributes.js';
import { trajectoryWorkflowType, type TrajectoryResult } from '../workflows/contracts/trajectory.contract.js';
import { trajectoryMetadata } from '../workflows/trajectory-child.js';
import { createScriptedPolicy } from './doubles/scripted-policy.js';
import { agentWorkers } from './helpers/agent-workers.js';
import { loadCorpus, reportCount, type CorpusCase } from './helpers/hostile-corpus.js';
import { openContext, uniquePrefix, type TestContext } from './helpers/stack.js';

interface TrajectoryCase extends CorpusCase {
  readonly question: string;
  readonly answers: readonly string[];
  /** The answer as the policy writes it (when it differs from the sanitised one the row holds). */
  readonly rawAnswer?: string;
  readonly dataset?: string;
  readonly questionId?: string;
  readonly runId?: string;
  readonly tools?: readonly string[];
  readonly forcedTurns?: readonly string[];
  readonly limits?: Record<string, number>;
  readonly expect: {
    readonly stopReason: string;
    readonly reward: number;
    readonly answer?: string | null;
    readonly answerPattern?: string;
    readonly toolOk?: boolean;
  };
}

const cases = loadCorpus<TrajectoryCase>('trajectories');
const attemptTimeoutMs = 1500;
const deadlineMs = 6000;
/** How long one trajectory may take on a loaded machine before its case fails as stuck. */
const completionMs = 180_000;

let server: http.Server;
let base = '';
const big = Buffer.alloc(10 * 1024 * 1024, 'x');

before(async () => {
  server = http.createServer((request, response) => {
    const mode = new URL(request.url ?? '/', 'http://x').searchParams.get('q');
    if (mode === 'hang') return; // never answers; the socket stays open
    if (mode === 'dribble') {
      response.writeHead(200, { 'content-type': 'application/json' });
      const timer = setInterval(() => response.write(' '), 100);
      response.on('close', () => clearInterval(timer));
      return;
    }
    if (mode === 'big') {
      response.writeHead(200, { 'content-type': 'application/json' });
      return void response.end(big);
    }
    response.writeHead(404, { 'content-type': 'text/plain' });
    response.end(`no mode ${mode}`);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
after(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

/** Every string inside a value (object keys included), for the "nothing unreadable" checks. */
function strings(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  if (Array.isArray(value)) return value.flatMap(strings);
  if (value !== null && typeof value === 'object') return Object.entries(value).flatMap(([key, inner]) => [key, ...strings(inner)]);
  return [];
}

async function runCase(context: TestContext, entry: TrajectoryCase, workflowId: string): Promise<string[]> {
  const failures: string[] = [];
  const fail = (what: string) => failures.push(`${entry.id}: ${what}`);
  const input = {
    question: entry.question,
    answers: [...entry.answers],
    ...(entry.dataset !== undefined ? { dataset: entry.dataset } : { dataset: 'hostile' }),
    ...(entry.questionId !== undefined ? { questionId: entry.questionId } : { questionId: entry.id }),
    ...(entry.runId !== undefined ? { runId: entry.runId } : {}),
    ...(entry.tools ? { options: { tools: [...entry.tools] } } : {}),
    ...(entry.forcedTurns ? { forcedTurns: [...entry.forcedTurns] } : {}),
    ...(entry.limits ? { limits: entry.limits } : {}),
  };
  const handle = await context.client.workflow.start(trajectoryWorkflowType, {
    taskQueue: context.queue('agent'),
    workflowId,
    args: [input],
    // As the learner and the evaluation start their children.
    ...trajectoryMetadata({
      workflowId,
      question: input.question,
      questionId: input.questionId,
      dataset: input.dataset,
      answers: input.answers,
    }),
  });
  // A trajectory that cannot finish (finishTrajectory retried for ever on a row Postgres refuses) fails its case, saying why.
  let timer: ReturnType<typeof setTimeout> | undefined;
  const stuck = new Promise<'stuck'>((resolve) => (timer = setTimeout(() => resolve('stuck'), completionMs)));
  const outcome = await Promise.race([handle.result() as Promise<TrajectoryResult>, stuck]).finally(() => clearTimeout(timer));
  if (outcome === 'stuck') {
    const pending = (await handle.describe()).raw.pendingActivities ?? [];
    await handle.terminate('hostile-trajectories: did not complete');
    const why = pending
      .map((activity) => `${activity.activityType?.name}: ${activity.lastFailure?.message ?? 'no failure yet'}`)
      .join('; ');
    return [`${entry.id}: did not complete within ${completionMs} ms (${why || 'no pending activity'})`];
  }
  const result = outcome;
  if (result.stopReason !== entry.expect.stopReason) fail(`stopReason ${result.stopReason}, expected ${entry.expect.stopReason}`);
  if (result.reward !== entry.expect.reward) fail(`reward ${result.reward}, expected ${entry.expect.reward}`);
  const row = await createPgTrajectoryStore(context.pool).get(workflowId);
  if (!row) return [...failures, `${entry.id}: no trajectories row`];
  if (entry.expect.answer !== undefined && row.answer !== entry.expect.answer)
    fail(`row answer ${JSON.stringify(row.answer)}, expected ${JSON.stringify(entry.expect.answer)}`);
  if (entry.expect.answerPattern !== undefined && !new RegExp(entry.expect.answerPattern).test(row.answer ?? ''))
    fail(`row answer ${JSON.stringify(row.answer)} does not match /${entry.expect.answerPattern}/`);
  if (result.answer !== row.answer) fail(`the workflow result's answer ${JSON.stringify(result.answer)} is not the row's`);
  if (row.question !== readableText(entry.question)) fail(`row question ${JSON.stringify(row.question)} is not the sanitised question`);
  if (JSON.stringify(row.gold) !== JSON.stringify(entry.answers.map(readableText))) fail(`row gold ${JSON.stringify(row.gold)}`);
  if (row.dataset !== readableText(input.dataset)) fail(`row dataset ${JSON.stringify(row.dataset)}`);
  if (row.questionId !== readableText(input.questionId)) fail(`row questionId ${JSON.stringify(row.questionId)}`);
  if (strings(row).some((text) => hasUnreadableText(text))) fail(`the row holds a NUL or an unpaired surrogate: ${JSON.stringify(row)}`);

  const record = JSON.parse((await context.blobs.get(row.recordKey)).toString('utf8')) as {
    answer: string | null;
    question: string;
    reward: number;
    turnRecords: { text: string; tools: { ok: boolean; invalid: boolean }[] }[];
  };
  if (record.answer !== row.answer) fail(`record answer ${JSON.stringify(record.answer)} is not the row's`);
  if (record.reward !== row.reward) fail(`record reward ${record.reward} is not the row's ${row.reward}`);
  if (record.question !== entry.question) fail('the record does not keep the question as given');
  if (entry.rawAnswer !== undefined && !record.turnRecords.at(-1)?.text.includes(`<answer>${entry.rawAnswer}</answer>`))
    fail(`the record's last turn does not keep the raw generation: ${JSON.stringify(record.turnRecords.at(-1)?.text)}`);
  if (entry.expect.toolOk !== undefined) {
    const call = record.turnRecords[0]?.tools[0];
    if (!call) fail('the first turn has no tool call');
    else if (call.invalid || call.ok !== entry.expect.toolOk) fail(`first tool call ok=${call.ok} invalid=${call.invalid}`);
  }

  const description = await handle.describe();
  if (description.status.name !== 'COMPLETED') fail(`status ${description.status.name}`);
  const attributes = description.typedSearchAttributes;
  for (const [key, given] of [
    [searchAttributes.dataset, input.dataset],
    [searchAttributes.questionId, input.questionId],
    [searchAttributes.runId, input.runId],
  ] as const) {
    const stored = attributes.get(key);
    if (given === undefined) continue;
    if (stored !== readableText(given))
      fail(`search attribute ${key.name} ${JSON.stringify(stored)}, expected ${JSON.stringify(readableText(given))}`);
  }
  if (attributes.get(searchAttributes.status) !== 'completed') fail(`LonghaulStatus ${attributes.get(searchAttributes.status)}`);
  const summary = (await description.staticSummary()) ?? '';
  const details = (await description.staticDetails()) ?? '';
  if (!summary || hasUnreadableText(summary)) fail(`static summary ${JSON.stringify(summary)}`);
  if (!details || hasUnreadableText(details)) fail(`static details ${JSON.stringify(details.slice(0, 200))}`);
  const metadata = await handle.query<{ currentDetails?: string }>('__temporal_workflow_metadata');
  const current = metadata.currentDetails ?? '';
  if (!current.startsWith(`${entry.expect.stopReason} after `) || hasUnreadableText(current))
    fail(`current details ${JSON.stringify(current)}`);
  return failures;
}

test(
  `the hostile trajectory corpus (${cases.length} cases): NUL and unpaired surrogates in answers, questions and ids, and a hanging, dribbling or 10 MB search API, each complete with one sanitised record`,
  {
    timeout: 600_000,
  },
  async () => {
    const limits = `timeout_ms=${attemptTimeoutMs},retries=1,concurrency=16,deadline_ms=${deadlineMs}`;
    const context = await openContext(uniquePrefix('hostile-traj'), {
      LONGHAUL_WEB_SEARCH_URL: `${base}/search`,
      LONGHAUL_WEB_FETCH_MAX_BYTES: String(64 * 1024),
      LONGHAUL_WEB_FETCH_TIMEOUT_MS: String(attemptTimeoutMs),
      LONGHAUL_TOOL_LIMITS: `web_search:${limits}`,
    });
    const built = buildToolRegistry(context.config, context.pool);
    try {
      const workers = await agentWorkers(
        context,
        createScriptedPolicy(),
        createToolActivities({ registry: built.registry, store: createPgToolCallStore(context.pool), cacheTtlMs: 0 }),
      );
      const failures = await workers.run(async () =>
        (await Promise.all(cases.map((entry, index) => runCase(context, entry, `${context.queue('agent')}-${index}`)))).flat(),
      );
      assert.deepEqual(failures, []);
      const kinds = new Map<string, number>();
      for (const entry of cases) kinds.set(entry.id.split('/')[0]!, (kinds.get(entry.id.split('/')[0]!) ?? 0) + 1);
      reportCount('whole trajectories', cases.length, [...kinds].map(([kind, count]) => `${kind} ${count}`).join(', '));
    } finally {
      await built.close();
      await context.close();
    }
  },
);
