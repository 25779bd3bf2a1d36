import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { z } from 'zod';
import { createAnswerTool } from '../activities/tools/answer.tool.js';
import { ToolFailure, ToolRegistry, type ToolPlugin } from '../activities/tools/registry.js';
import { createToolActivities, truncateObservation } from '../activities/tools/run-tools.activities.js';
import { createSqlTool } from '../activities/tools/sql.tool.js';
import { createPgReadOnlySql } from '../infra/search/read-only-sql.pg.js';
import { openSearchDatabase } from '../infra/search/open.js';
import { createPgToolCallStore } from '../infra/search/tool-call-store.pg.js';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { repoRoot } from '../infra/paths.js';
import { spawnWorker, testConfig, uniquePrefix } from './helpers/stack.js';

const pool = await openSearchDatabase(testConfig(), 4);
const store = createPgToolCallStore(pool);
const tag = randomUUID().slice(0, 8).replace(/-/g, '');
after(() => pool.end());

/** A plug-in of the real shape whose work is a sleep, counting its executions. */
function sleepyTool(name: string, delayMs: number): ToolPlugin<{ text: string }> & { executions: number } {
  const plugin = {
    name, executions: 0,
    description: 'Echo text after a pause.',
    inputSchema: z.strictObject({ text: z.string().min(1).describe('Text to echo.') }),
    successCriterion: 'the text is not "fail"',
    cacheable: true,
    async execute(input: { text: string }) {
      plugin.executions += 1;
      await sleep(delayMs);
      if (input.text === 'missing') throw new ToolFailure('Nothing called missing.');
      return { observation: `echo: ${input.text}`, documentIds: [input.text] };
    },
    judge: (output: { observation: string }) => output.observation !== 'echo: fail',
  };
  return plugin;
}

test('several calls of one turn run in parallel and come back in order', async () => {
  const slow = sleepyTool(`slow_${tag}`, 300);
  const activities = createToolActivities({ registry: new ToolRegistry([slow]), store });
  const startedAt = Date.now();
  const results = await activities.runTools({ key: `t/${randomUUID()}`, calls: [{ tool: slow.name, input: { text: 'a' } }, { tool: slow.name, input: { text: 'b' } }, { tool: slow.name, input: { text: 'c' } }] });
  assert.ok(Date.now() - startedAt < 800, `took ${Date.now() - startedAt} ms`);
  assert.deepEqual(results.map((result) => result.observation), ['echo: a', 'echo: b', 'echo: c']);
  assert.deepEqual(results.map((result) => result.ok), [true, true, true]);
});

test('a call whose input fails its schema, or names an unknown tool, is an invalid result the agent can read', async () => {
  const echo = sleepyTool(`echo_${tag}`, 0);
  const activities = createToolActivities({ registry: new ToolRegistry([echo, createAnswerTool()]), store });
  const [bad, unknown, answer] = await activities.runTools({ key: `t/${randomUUID()}`, calls: [
    { tool: echo.name, input: { text: 5 } }, { tool: 'teleport', input: {} }, { tool: 'answer', input: { answer: ' Paris ' } },
  ] });
  assert.deepEqual([bad!.ok, bad!.invalid, bad!.observation], [false, true, `Error: invalid input for ${echo.name}: text: Invalid input: expected string, received number`]);
  assert.deepEqual([unknown!.ok, unknown!.invalid, unknown!.observation], [false, true, `Error: unknown tool "teleport" (tools: ${echo.name}, answer).`]);
  assert.deepEqual([answer!.ok, answer!.invalid, answer!.observation], [true, false, 'Answer recorded: Paris']);
  assert.equal(echo.executions, 0);
});

test('a tool failure and a failed success check are ok=false observations, not exceptions', async () => {
  const echo = sleepyTool(`fails_${tag}`, 0);
  const activities = createToolActivities({ registry: new ToolRegistry([echo]), store });
  const [missing, judged] = await activities.runTools({ key: `t/${randomUUID()}`, calls: [{ tool: echo.name, input: { text: 'missing' } }, { tool: echo.name, input: { text: 'fail' } }] });
  assert.deepEqual([missing!.ok, missing!.invalid, missing!.observation], [false, false, 'Nothing called missing.']);
  assert.deepEqual([judged!.ok, judged!.invalid, judged!.observation], [false, false, 'echo: fail']);
});

test('the same normalised input is served from the cache until its TTL passes', async () => {
  const echo = sleepyTool(`cached_${tag}`, 0);
  const activities = createToolActivities({ registry: new ToolRegistry([echo]), store, cacheTtlMs: 400 });
  const run = (text: string) => activities.runTools({ key: `t/${randomUUID()}`, calls: [{ tool: echo.name, input: { text } }] });
  assert.equal((await run('hello  world'))[0]!.cacheHit, false);
  const hit = (await run(' hello world '))[0]!;
  assert.deepEqual([hit.cacheHit, hit.observation, hit.documentIds], [true, 'echo: hello  world', ['hello  world']]);
  assert.equal(echo.executions, 1);
  await sleep(500);
  assert.equal((await run('hello world'))[0]!.cacheHit, false);
  assert.equal(echo.executions, 2);
});

test('an oversized observation is truncated to the limit with a marker', async () => {
  assert.deepEqual(truncateObservation('x'.repeat(50), 100), { text: 'x'.repeat(50), truncated: false });
  const echo = sleepyTool(`big_${tag}`, 0);
  const activities = createToolActivities({ registry: new ToolRegistry([echo]), store });
  const [result] = await activities.runTools({ key: `t/${randomUUID()}`, maxObservationChars: 200, calls: [{ tool: echo.name, input: { text: 'y'.repeat(1000) } }] });
  assert.equal(result!.truncated, true);
  const omitted = Number(/\n\[… truncated: (\d+) more characters\]$/.exec(result!.observation)?.[1]);
  assert.equal(result!.observation.length, 200);
  assert.equal(result!.observation.indexOf('\n[…') + omitted, 'echo: '.length + 1000);
});

test('a retried turn gets its first results back and its calls are recorded once; stats give rates and percentiles', async () => {
  const echo = sleepyTool(`stats_${tag}`, 20);
  const activities = createToolActivities({ registry: new ToolRegistry([echo]), store });
  const key = `t/${randomUUID()}`;
  const calls = [{ tool: echo.name, input: { text: 'one' } }, { tool: echo.name, input: { text: 'fail' } }, { tool: echo.name, input: { wrong: true } }];
  const first = await activities.runTools({ key, calls });
  const retry = await activities.runTools({ key, calls });
  assert.deepEqual(retry, first);
  assert.equal(echo.executions, 2);
  const stats = (await store.stats()).find((row) => row.tool === echo.name);
  assert.equal(stats?.calls, 3);
  assert.equal(stats?.successRate, 1 / 3);
  assert.equal(stats?.invalidRate, 1 / 3);
  assert.ok(stats!.p50Ms >= 19 && stats!.p95Ms >= stats!.p50Ms, JSON.stringify(stats));
});

test('describeTools gives each tool a JSON schema whose fields are all described', async () => {
  const activities = createToolActivities({ registry: new ToolRegistry([createAnswerTool(), sleepyTool(`d_${tag}`, 0)]), store });
  const [answer] = await activities.describeTools({ names: ['answer', 'nonexistent'] });
  assert.equal(answer?.name, 'answer');
  assert.deepEqual(answer?.inputSchema.required, ['answer']);
  assert.equal((answer?.inputSchema.properties as Record<string, { description: string }>).answer!.description, 'The final answer, short.');
});

test('the sql tool answers a SELECT and refuses a write or a second statement', async () => {
  const sql = createSqlTool(createPgReadOnlySql(pool, { maxRows: 2 }));
  const activities = createToolActivities({ registry: new ToolRegistry([sql]), store, cacheTtlMs: 0 });
  const [rows, write, two] = await activities.runTools({ key: `t/${randomUUID()}`, calls: [
    { tool: 'sql', input: { query: 'SELECT n, n * n AS square FROM generate_series(1, 3) AS n' } },
    { tool: 'sql', input: { query: `CREATE TABLE sql_tool_${tag} (x int)` } },
    { tool: 'sql', input: { query: 'SELECT 1; SELECT 2' } },
  ] });
  assert.equal(rows!.observation, '2 rows\nn | square\n1 | 1\n2 | 4\n[… more rows not shown]');
  assert.deepEqual([write!.ok, write!.observation], [false, 'Error: sql failed: cannot execute CREATE TABLE in a read-only transaction']);
  assert.deepEqual([two!.invalid, two!.observation], [true, 'Error: invalid input for sql: query: expected a single statement']);
});

test('longhaul tools run records the call and longhaul tools stats reports it', async () => {
  const cli = (...args: string[]) => promisify(execFile)(process.execPath, [path.join(repoRoot, 'dist', 'cli', 'main.js'), 'tools', ...args]);
  const { stdout } = await cli('run', 'answer', `{"answer":"${tag}"}`, '--json');
  const result = JSON.parse(stdout) as { ok: boolean; observation: string; invalid: boolean };
  assert.deepEqual([result.ok, result.invalid, result.observation], [true, false, `Answer recorded: ${tag}`]);
  const bad = await cli('run', 'search', '{"query":""}').then(() => null, (error: { code: number; stdout: string }) => error);
  assert.equal(bad?.code, 1);
  assert.equal(bad?.stdout.split('\n')[1], 'Error: invalid input for search: query: Too small: expected string to have >=1 characters');
  const stats = JSON.parse((await cli('stats', '--since-minutes', '5', '--json')).stdout) as { tools: { tool: string; calls: number }[] };
  assert.ok((stats.tools.find((row) => row.tool === 'answer')?.calls ?? 0) >= 1);
  assert.ok((stats.tools.find((row) => row.tool === 'search')?.calls ?? 0) >= 1);
});

test('the tools worker starts with the tool activities on its queue', async () => {
  const worker = spawnWorker('tools', { LONGHAUL_TASK_QUEUE_PREFIX: uniquePrefix('tools-worker') });
  try {
    await worker.ready;
  } finally {
    worker.kill('SIGTERM');
  }
});
