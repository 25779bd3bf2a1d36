import { randomUUID } from 'node:crypto';
import { createToolActivities } from '../../activities/tools/run-tools.activities.js';
import { config } from '../../infra/config.js';
import { parseJson } from '../../corpus/records.js';
import { openSearchDatabase } from '../../infra/search/open.js';
import { createPgToolCallStore } from '../../infra/search/tool-call-store.pg.js';
import { buildToolRegistry } from '../../composition/tool-registry.js';
import { parseFlags } from '../arguments.js';
import { UsageError, type Command } from '../command.js';

export const toolsCommand: Command = {
  name: 'tools',
  summary: 'list the tools, run one, or show per-tool success rate and p50/p95 latency',
  usage: `longhaul tools list [--json]
longhaul tools run <tool> '<json input>' [--json]
longhaul tools stats [--since-minutes N] [--json]

  list    each configured tool: name, how success is judged, input schema (--json: descriptors)
  run     one call through the same runner the tools worker uses (recorded and cached like any call)
  stats   per tool: calls, success rate, invalid rate, cache-hit rate, p50/p95 latency in ms`,
  async run(args) {
    const { values, positionals } = parseFlags(args, { json: { type: 'boolean' }, 'since-minutes': { type: 'string' } }, true);
    const [action, ...rest] = positionals;
    if (action !== 'list' && action !== 'run' && action !== 'stats')
      throw new UsageError(`expected list, run or stats, got "${action ?? ''}"`);
    const since = sinceFlag(values['since-minutes']);
    const settings = config();
    const pool = await openSearchDatabase(settings, 4);
    const tools = buildToolRegistry(settings, pool);
    const store = createPgToolCallStore(pool);
    try {
      if (action === 'list') return list(tools.registry, Boolean(values.json));
      if (action === 'stats') return await stats(store, since, Boolean(values.json));
      const [tool, inputText] = rest;
      if (!tool || inputText === undefined) throw new UsageError("run expects <tool> and '<json input>'");
      const input = parseJson(inputText);
      if ('error' in input) throw new UsageError(`<json input>: ${input.error}`);
      const activities = createToolActivities({ registry: tools.registry, store, cacheTtlMs: settings.tools.cacheTtlSeconds * 1000 });
      const [result] = await activities.runTools({ key: `cli/${randomUUID()}`, calls: [{ tool, input: input.value }] });
      if (values.json) console.log(JSON.stringify(result));
      else
        console.log(
          `${result!.ok ? 'ok' : result!.invalid ? 'invalid' : 'failed'} · ${result!.latencyMs.toFixed(1)} ms${result!.cacheHit ? ' · cache hit' : ''}\n${result!.observation}`,
        );
      return result!.ok ? 0 : 1;
    } finally {
      await tools.close();
      await pool.end();
    }
  },
};

function list(registry: ReturnType<typeof buildToolRegistry>['registry'], json: boolean): number {
  const descriptors = registry.describe();
  if (json) console.log(JSON.stringify(descriptors));
  else
    for (const descriptor of descriptors) {
      const plugin = registry.get(descriptor.name)!;
      const limits = plugin.limits
        ? `\n  limits: ${plugin.limits.timeoutMs} ms an attempt, ${plugin.limits.retries} retries, ${plugin.limits.concurrency} at once, ${plugin.limits.qps || 'no'} qps limit, ${plugin.limits.deadlineMs} ms a call`
        : '';
      console.log(
        `${descriptor.name}: ${descriptor.description}\n  success: ${plugin.successCriterion}\n  input: ${JSON.stringify(descriptor.inputSchema.properties ?? {})}${limits}`,
      );
    }
  return 0;
}

/** `--since-minutes N`, read before anything is opened. */
function sinceFlag(sinceMinutes: string | undefined): Date | undefined {
  if (sinceMinutes === undefined) return undefined;
  const minutes = Number(sinceMinutes);
  if (!Number.isFinite(minutes) || minutes <= 0) throw new UsageError(`--since-minutes expects a positive number, got "${sinceMinutes}"`);
  return new Date(Date.now() - minutes * 60_000);
}

async function stats(store: ReturnType<typeof createPgToolCallStore>, since: Date | undefined, json: boolean): Promise<number> {
  const rows = await store.stats(since);
  if (json) {
    console.log(JSON.stringify({ tools: rows }));
    return 0;
  }
  if (rows.length === 0) {
    console.log('no tool calls recorded');
    return 0;
  }
  const percent = (value: number) => `${(value * 100).toFixed(1)}%`;
  console.log(
    `${'tool'.padEnd(12)} ${'calls'.padStart(7)} ${'success'.padStart(8)} ${'invalid'.padStart(8)} ${'cached'.padStart(7)} ${'p50 ms'.padStart(8)} ${'p95 ms'.padStart(8)}`,
  );
  for (const row of rows) {
    console.log(
      `${row.tool.padEnd(12)} ${String(row.calls).padStart(7)} ${percent(row.successRate).padStart(8)} ${percent(row.invalidRate).padStart(8)} ${percent(row.cacheHitRate).padStart(7)} ${row.p50Ms.toFixed(1).padStart(8)} ${row.p95Ms.toFixed(1).padStart(8)}`,
    );
  }
  return 0;
}
