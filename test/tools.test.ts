import { test, after } from 'node:test';
import pg from 'pg';
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
import { fileURLToPath } from 'node:url';
import { Worker } from '@temporalio/worker';
import { connectWorker, dataConverter } from '../infra/temporal/connection.js';
import type { ToolsOnceResult } from './fixtures/tools-once.workflow.js';
import { openContext, spawnWorker, testConfig, uniquePrefix } from './helpers/stack.js';

const toolsOnceFixture = path.join(path.dirname(fileURLToPath(import.meta.url)), 'fixtures', 'tools-once.workflow.js');

const pool = await openSearchDatabase(testConfig(), 4);
const store = createPgToolCallStore(pool);
const tag = randomUUID().slice(0, 8).replace(/-/g, '');
after(() => pool.end());

/** A plug-in of the real shape whose work is a sleep, counting its executions. */
function sleepyTool(name: string, delayMs: number): ToolPlugin<{ text: string }> & { executions: number } {
  const plugin = {
    name,
    executions: 0,
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
  // Each call waits until all three have started: calls run one after another would never get there.
  const arrivals: string[] = [];
  let allStarted: () => void = () => undefined;
  const started = new Promise<void>((resolve) => {
    allStarted = resolve;
  });
  const gate: ToolPlugin<{ text: string }> = {
    name: `gate_${tag}`,
    description: 'Echo text once every call of the turn has started.',
    cacheable: false,
    inputSchema: z.strictObject({ text: z.string().min(1).describe('Text to echo.') }),
    successCriterion: 'always',
    async execute(input) {
      arrivals.push(input.text);
      if (arrivals.length === 3) allStarted();
      const timeout = setTimeout(() => allStarted(), 30_000);
      await started;
      clearTimeout(timeout);
      return { observation: `echo: ${input.text} after ${arrivals.length} started`, documentIds: [] };
    },
    judge: () => true,
  };
  const activities = createToolActivities({ registry: new ToolRegistry([gate]), store });
  const startedAt = Date.now();
  const results = await activities.runTools({
    key: `t/${randomUUID()}`,
    calls: [
      { tool: gate.name, input: { text: 'c' } },
      { tool: gate.name, input: { text: 'a' } },
      { tool: gate.name, input: { text: 'b' } },
    ],
  });
  console.log(`three parallel calls took ${Date.now() - startedAt} ms`);
  assert.deepEqual(
    results.map((result) => result.observation),
    ['echo: c after 3 started', 'echo: a after 3 started', 'echo: b after 3 started'],
  );
  assert.deepEqual(
    results.map((result) => result.ok),
    [true, true, true],
  );
});

test('a call whose input fails its schema, or names an unknown tool, is an invalid result the agent can read', async () => {
  const echo = sleepyTool(`echo_${tag}`, 0);
  const activities = createToolActivities({ registry: new ToolRegistry([echo, createAnswerTool()]), store });
  const [bad, unknown, answer] = await activities.runTools({
    key: `t/${randomUUID()}`,
    calls: [
      { tool: echo.name, input: { text: 5 } },
      { tool: 'teleport', input: {} },
      { tool: 'answer', input: { answer: ' Paris ' } },
    ],
  });
  assert.deepEqual(
    [bad!.ok, bad!.invalid, bad!.observation],
    [false, true, `Error: invalid input for ${echo.name}: text: Invalid input: expected string, received number`],
  );
  assert.deepEqual(
    [unknown!.ok, unknown!.invalid, unknown!.observation],
    [false, true, `Error: unknown tool "teleport" (tools: ${echo.name}, answer).`],
  );
  assert.deepEqual([answer!.ok, answer!.invalid, answer!.observation], [true, false, 'Answer recorded: Paris']);
  assert.equal(echo.executions, 0);
});

test('a tool failure and a failed success check are ok=false observations, not exceptions', async () => {
  const echo = sleepyTool(`fails_${tag}`, 0);
  const activities = createToolActivities({ registry: new ToolRegistry([echo]), store });
  const [missing, judged] = await activities.runTools({
    key: `t/${randomUUID()}`,
    calls: [
      { tool: echo.name, input: { text: 'missing' } },
      { tool: echo.name, input: { text: 'fail' } },
    ],
  });
  assert.deepEqual([missing!.ok, missing!.invalid, missing!.observation], [false, false, 'Nothing called missing.']);
  assert.deepEqual([judged!.ok, judged!.invalid, judged!.observation], [false, false, 'echo: fail']);
});

test('the same normalised input is served from the cache until its TTL passes', async () => {
  // A one-hour TTL cannot pass by accident during the test; expiry is proven by moving the stored
  // expiry into the past, which is what the TTL's passing looks like to the store.
  const ttlMs = 3_600_000;
  const echo = sleepyTool(`cached_${tag}`, 0);
  const activities = createToolActivities({ registry: new ToolRegistry([echo]), store, cacheTtlMs: ttlMs });
  const run = (text: string) => activities.runTools({ key: `t/${randomUUID()}`, calls: [{ tool: echo.name, input: { text } }] });
  assert.equal((await run('hello  world'))[0]!.cacheHit, false);
  const hit = (await run(' hello world '))[0]!;
  assert.deepEqual([hit.cacheHit, hit.observation, hit.documentIds], [true, 'echo: hello  world', ['hello  world']]);
  assert.equal(echo.executions, 1);
  const { rows } = await pool.query<{ remaining_ms: number }>(
    'SELECT (extract(epoch FROM expires_at - now()) * 1000)::float8 AS remaining_ms FROM tool_cache WHERE tool = $1',
    [echo.name],
  );
  assert.equal(rows.length, 1, 'one cache row for the normalised input');
  assert.ok(
    rows[0]!.remaining_ms > ttlMs - 60_000 && rows[0]!.remaining_ms <= ttlMs,
    `expires in ${rows[0]!.remaining_ms} ms, TTL ${ttlMs} ms`,
  );
  await pool.query("UPDATE tool_cache SET expires_at = now() - interval '1 second' WHERE tool = $1", [echo.name]);
  const expired = (await run('hello world'))[0]!;
  assert.deepEqual([expired.cacheHit, expired.observation], [false, 'echo: hello world']);
  assert.equal(echo.executions, 2);
  assert.equal((await run('hello world'))[0]!.cacheHit, true, 'the fresh result is cached again');
});

test('an oversized observation is truncated to the limit with a marker', async () => {
  assert.deepEqual(truncateObservation('x'.repeat(50), 100), { text: 'x'.repeat(50), truncated: false });
  const echo = sleepyTool(`big_${tag}`, 0);
  const activities = createToolActivities({ registry: new ToolRegistry([echo]), store });
  const [result] = await activities.runTools({
    key: `t/${randomUUID()}`,
    maxObservationChars: 200,
    calls: [{ tool: echo.name, input: { text: 'y'.repeat(1000) } }],
  });
  assert.equal(result!.truncated, true);
  const omitted = Number(/\n\[… truncated: (\d+) more characters\]$/.exec(result!.observation)?.[1]);
  assert.equal(result!.observation.length, 200);
  assert.equal(result!.observation.indexOf('\n[…') + omitted, 'echo: '.length + 1000);
});

test('a retried turn gets its first results back and its calls are recorded once; stats give rates and percentiles', async () => {
  const echo = sleepyTool(`stats_${tag}`, 20);
  const activities = createToolActivities({ registry: new ToolRegistry([echo]), store });
  const key = `t/${randomUUID()}`;
  const calls = [
    { tool: echo.name, input: { text: 'one' } },
    { tool: echo.name, input: { text: 'fail' } },
    { tool: echo.name, input: { wrong: true } },
  ];
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
  // The sql tool connects as the read-only role of migration 0085 (it refuses a role that could write).
  const readerUrl = new URL(testConfig().postgres.url);
  readerUrl.username = 'longhaul_sql_reader';
  const reader = new pg.Pool({ connectionString: readerUrl.toString(), max: 1 });
  after(() => reader.end());
  const sql = createSqlTool(createPgReadOnlySql(reader, { maxRows: 2 }));
  const activities = createToolActivities({ registry: new ToolRegistry([sql]), store, cacheTtlMs: 0 });
  const [rows, write, two] = await activities.runTools({
    key: `t/${randomUUID()}`,
    calls: [
      { tool: 'sql', input: { query: 'SELECT n, n * n AS square FROM generate_series(1, 3) AS n' } },
      { tool: 'sql', input: { query: `CREATE TABLE sql_tool_${tag} (x int)` } },
      { tool: 'sql', input: { query: 'SELECT 1; SELECT 2' } },
    ],
  });
  assert.equal(rows!.observation, '2 rows\nn | square\n1 | 1\n2 | 4\n[… more rows not shown]');
  assert.deepEqual([write!.ok, write!.observation], [false, 'Error: sql failed: cannot execute CREATE TABLE in a read-only transaction']);
  assert.deepEqual([two!.invalid, two!.observation], [true, 'Error: invalid input for sql: query: expected a single statement']);
});

test('longhaul tools run records the call and longhaul tools stats reports it', async () => {
  const cli = (...args: string[]) =>
    promisify(execFile)(process.execPath, [path.join(repoRoot, 'dist', 'cli', 'main.js'), 'tools', ...args]);
  const { stdout } = await cli('run', 'answer', `{"answer":"${tag}"}`, '--json');
  const result = JSON.parse(stdout) as { ok: boolean; observation: string; invalid: boolean };
  assert.deepEqual([result.ok, result.invalid, result.observation], [true, false, `Answer recorded: ${tag}`]);
  const bad = await cli('run', 'search', '{"query":""}').then(
    () => null,
    (error: { code: number; stdout: string }) => error,
  );
  assert.equal(bad?.code, 1);
  assert.equal(bad?.stdout.split('\n')[1], 'Error: invalid input for search: query: Too small: expected string to have >=1 characters');
  const stats = JSON.parse((await cli('stats', '--since-minutes', '5', '--json')).stdout) as { tools: { tool: string; calls: number }[] };
  assert.ok((stats.tools.find((row) => row.tool === 'answer')?.calls ?? 0) >= 1);
  assert.ok((stats.tools.find((row) => row.tool === 'search')?.calls ?? 0) >= 1);
});

test('the tools worker starts with the tool activities on its queue', { timeout: 120_000 }, async () => {
  const prefix = uniquePrefix('tools-worker');
  const context = await openContext(prefix);
  const worker = spawnWorker('tools', { LONGHAUL_TASK_QUEUE_PREFIX: prefix });
  const workflows = await Worker.create({
    connection: await connectWorker(context.config),
    namespace: context.config.temporal.namespace,
    taskQueue: context.queue('agent'),
    workflowsPath: toolsOnceFixture,
    dataConverter: dataConverter(context.config, context.blobs),
  });
  const running = workflows.run();
  try {
    await worker.ready;
    const result = (await context.client.workflow.execute('toolsOnce', {
      taskQueue: context.queue('agent'),
      workflowId: `${prefix}tools-once`,
      args: [
        {
          queue: context.queue('tools'),
          run: {
            key: `t/${randomUUID()}`,
            calls: [
              { tool: 'answer', input: { answer: tag } },
              { tool: 'teleport', input: {} },
            ],
          },
        },
      ],
    })) as ToolsOnceResult;
    assert.deepEqual(result.ping, { ...result.ping, role: 'tools', pid: worker.pid });
    assert.deepEqual(
      result.described.map((tool) => tool.name).filter((name) => ['search', 'access', 'answer'].includes(name)),
      ['search', 'access', 'answer'],
    );
    assert.deepEqual(
      result.results.map((call) => [call.tool, call.ok, call.invalid, call.observation]),
      [
        ['answer', true, false, `Answer recorded: ${tag}`],
        ['teleport', false, true, `Error: unknown tool "teleport" (tools: ${result.described.map((tool) => tool.name).join(', ')}).`],
      ],
    );
  } finally {
    worker.kill('SIGTERM');
    workflows.shutdown();
    await running;
    await context.close();
  }
});
