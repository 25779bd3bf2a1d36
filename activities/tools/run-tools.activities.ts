/**
 * `createToolActivities`: the tools-queue activities of the trajectory workflow. `runTools` runs one
 * turn's calls in parallel; a bad call becomes an invalid ToolResult (never an exception), every call
 * is recorded (latency, success, cache hit), results are cached by (tool, normalised input) with a
 * TTL, and a retried turn (same key) gets the results it had the first time.
 */
import { z } from 'zod';
import type { CachedToolResult, ToolCallRow, ToolCallStore } from '../ports/tool-call-store.port.js';
import type { RunToolsInput, ToolActivities, ToolCall, ToolResult } from '../../workflows/contracts/tools.contract.js';
import { readableText } from '../../workflows/contracts/readable-text.js';
import { defaultCacheKey, ToolFailure, type ToolRegistry } from './registry.js';
import { parseActivityInput } from '../activity-input.js';

export interface ToolActivityDependencies {
  readonly registry: ToolRegistry;
  readonly store: ToolCallStore;
  /** How long a cached result stays valid. @default 3_600_000 (one hour) */
  readonly cacheTtlMs?: number;
  /** How long a turn's results are kept for retries of the same key. @default 86_400_000 (one day) */
  readonly turnMemoryMs?: number;
  readonly log?: (message: string) => void;
}

const TURN_CACHE = '#turn';
const runToolsSchema = z.object({
  key: z.string().min(1).max(500),
  calls: z.array(z.object({ tool: z.string(), input: z.unknown() })).max(64),
  maxObservationChars: z.number().int().min(100).max(1_000_000).optional(),
});
const memoSchema = z.object({ ok: z.boolean(), observation: z.string(), documentIds: z.array(z.string()) });
const turnResultSchema = z.object({
  tool: z.string(),
  ok: z.boolean(),
  invalid: z.boolean(),
  observation: z.string(),
  truncated: z.boolean(),
  latencyMs: z.number(),
  cacheHit: z.boolean(),
  documentIds: z.array(z.string()),
});

/** Cuts text to `limit` characters with a marker saying how much was left out. */
export function truncateObservation(text: string, limit: number): { text: string; truncated: boolean } {
  if (text.length <= limit) return { text, truncated: false };
  let kept = limit;
  let marker = '';
  for (let pass = 0; pass < 3; pass += 1) {
    marker = `\n[… truncated: ${text.length - kept} more characters]`;
    kept = Math.max(0, limit - marker.length);
  }
  return { text: text.slice(0, kept) + `\n[… truncated: ${text.length - kept} more characters]`, truncated: true };
}

export function createToolActivities(deps: ToolActivityDependencies): ToolActivities {
  const cacheTtlMs = deps.cacheTtlMs ?? 3_600_000;
  const log = deps.log ?? ((message: string) => console.warn(message));

  async function runOne(call: ToolCall, limit: number): Promise<ToolResult> {
    const startedAt = performance.now();
    const finish = (fields: Omit<ToolResult, 'latencyMs' | 'truncated' | 'tool'>): ToolResult => {
      const { text, truncated } = truncateObservation(readableText(fields.observation), limit);
      return {
        tool: call.tool,
        ...fields,
        observation: text,
        truncated,
        latencyMs: Math.round((performance.now() - startedAt) * 1000) / 1000,
      };
    };
    const plugin = deps.registry.get(call.tool);
    if (!plugin) {
      return finish({
        ok: false,
        invalid: true,
        cacheHit: false,
        documentIds: [],
        observation: `Error: unknown tool "${call.tool}" (tools: ${deps.registry.names().join(', ')}).`,
      });
    }
    const unreadable = unreadableText(call.input);
    if (unreadable) {
      return finish({
        ok: false,
        invalid: true,
        cacheHit: false,
        documentIds: [],
        observation: `Error: invalid input for ${call.tool}: ${unreadable.path || 'input'}: ${unreadable.problem}; send plain text.`,
      });
    }
    const parsed = plugin.inputSchema.safeParse(call.input);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      return finish({
        ok: false,
        invalid: true,
        cacheHit: false,
        documentIds: [],
        observation: `Error: invalid input for ${call.tool}: ${issue.path.join('.') || 'input'}: ${issue.message}`,
      });
    }
    const cacheKey = plugin.cacheable ? (plugin.cacheKey?.(parsed.data) ?? defaultCacheKey(parsed.data)) : null;
    const cached = cacheKey === null ? null : await deps.store.cacheGet(plugin.name, cacheKey).catch(() => null);
    if (cached)
      return finish({ ok: cached.ok, invalid: false, cacheHit: true, documentIds: cached.documentIds, observation: cached.observation });
    let result: CachedToolResult;
    try {
      const output = await plugin.execute(parsed.data);
      result = { ok: plugin.judge(output), observation: output.observation, documentIds: [...(output.documentIds ?? [])] };
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      result = {
        ok: false,
        observation: error instanceof ToolFailure ? message : `Error: ${call.tool} failed: ${message}`,
        documentIds: [],
      };
    }
    if (cacheKey !== null && result.ok && cacheTtlMs > 0)
      await deps.store
        .cachePut(plugin.name, cacheKey, result, cacheTtlMs)
        .catch((error: Error) => log(`[tools] cache write failed: ${error.message}`));
    return finish({ ...result, invalid: false, cacheHit: false });
  }

  return {
    async runTools(rawInput: RunToolsInput): Promise<ToolResult[]> {
      const input = parseActivityInput('runTools', runToolsSchema, rawInput);
      const memo = await deps.store.cacheGet(TURN_CACHE, input.key).catch(() => null);
      const remembered = memo ? readTurnMemo(memo.observation) : null;
      if (remembered) return remembered;
      const limit = input.maxObservationChars ?? 5000;
      const results = await Promise.all(input.calls.map((call) => runOne(call, limit)));
      const rows: ToolCallRow[] = results.map((result, index) => ({
        tool: result.tool,
        turnKey: input.key,
        callIndex: index,
        ok: result.ok,
        invalid: result.invalid,
        cacheHit: result.cacheHit,
        latencyMs: result.latencyMs,
      }));
      await deps.store.record(rows).catch((error: Error) => log(`[tools] stats write failed: ${error.message}`));
      const memoValue = memoSchema.parse({ ok: true, observation: JSON.stringify(results), documentIds: [] });
      await deps.store.cachePut(TURN_CACHE, input.key, memoValue, deps.turnMemoryMs ?? 86_400_000).catch(() => undefined);
      return results;
    },
    async describeTools(input) {
      return deps.registry.describe(input?.names);
    },
  };
}

/**
 * The first string (or object key) of an input that no tool can take: one holding a NUL character
 * (Postgres text refuses it, HTTP and SQL break on it) or a UTF-16 surrogate without its pair (not
 * Unicode; it would reach a tool as U+FFFD). Checked for every tool before its schema, so a plug-in
 * never sees such text. Returns the path to it ("query", "filters.0") and what is wrong, or null.
 */
export function unreadableText(value: unknown, path = ''): { path: string; problem: string } | null {
  if (typeof value === 'string') {
    if (value.includes('\u0000')) return { path, problem: 'contains a NUL character (U+0000)' };
    if (/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(value))
      return { path, problem: 'contains an unpaired UTF-16 surrogate (not valid Unicode)' };
    return null;
  }
  if (Array.isArray(value)) {
    for (const [index, inner] of value.entries()) {
      const found = unreadableText(inner, path ? `${path}.${index}` : String(index));
      if (found) return found;
    }
    return null;
  }
  if (value !== null && typeof value === 'object') {
    for (const [key, inner] of Object.entries(value)) {
      const keyProblem = unreadableText(key);
      if (keyProblem) return { path: path || 'input', problem: `has a field name that ${keyProblem.problem}` };
      const found = unreadableText(inner, path ? `${path}.${key}` : key);
      if (found) return found;
    }
  }
  return null;
}

function readTurnMemo(text: string): ToolResult[] | null {
  try {
    const parsed = z.array(turnResultSchema).safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}
