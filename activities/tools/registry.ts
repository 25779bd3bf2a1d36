/**
 * The tool plug-in shape and the registry that collects plug-ins. A tool is one file exporting a
 * factory that returns a ToolPlugin: a zod input schema (every field described), a description for
 * the prompt, `execute`, and `judge` — how its success is decided from its output.
 */
import { z } from 'zod';
import type { ToolCall, ToolDescriptor } from '../../workflows/contracts/tools.contract.js';
import { errorTypes, LonghaulError } from '../../workflows/contracts/errors.js';
import type { ToolLimits } from './limits.js';

/** What a tool's `execute` returns before the runner adds latency, cache and truncation. */
export interface ToolOutput {
  readonly observation: string;
  /** Document ids (or URLs) the observation came from. */
  readonly documentIds?: readonly string[];
}

/** What the runner passes to `execute`: a signal that fires when the attempt's time limit passes. */
export interface ToolContext {
  readonly signal?: AbortSignal;
}

/** A failure the agent should read as an observation (document not found, HTTP 404…): ok=false, not invalid. */
export class ToolFailure extends LonghaulError {
  constructor(message: string) {
    super(errorTypes.invalidInput, message);
    this.name = 'ToolFailure';
  }
}

export interface ToolPlugin<Input = unknown> {
  readonly name: string;
  /** Shown to the model: what the tool does and when to use it. */
  readonly description: string;
  readonly inputSchema: z.ZodType<Input>;
  /** One sentence: how success is judged (shown by `longhaul tools list`). */
  readonly successCriterion: string;
  /** Whether results may be cached by (tool, normalised input). answer-like tools are not. */
  readonly cacheable: boolean;
  execute(input: Input, context?: ToolContext): Promise<ToolOutput>;
  /** Whether an output counts as a success (for stats and the ToolResult's `ok`). */
  judge(output: ToolOutput): boolean;
  /** The cache key of an input; default: its JSON with keys sorted and strings whitespace-normalised. */
  cacheKey?(input: Input): string;
  /**
   * Whether a call with this input is cheap and stays on this machine (a query of the stack's own
   * Postgres, no remote service), so the agent worker may run it as a local activity instead of
   * sending it to the tools queue (docs/BENCHMARKS.md). Absent: never (the tools queue).
   */
  runsLocally?(input: Input): boolean;
  /** The limits a tools worker applies to it (limits.ts); absent on a bare plug-in. */
  readonly limits?: ToolLimits;
}

/** Any plug-in, whatever its input type (the registry validates input with the plug-in's own schema). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyToolPlugin = ToolPlugin<any>;

export class ToolRegistry {
  private readonly plugins = new Map<string, AnyToolPlugin>();

  constructor(plugins: readonly AnyToolPlugin[]) {
    for (const plugin of plugins) {
      if (!/^[a-z][a-z0-9_]*$/.test(plugin.name))
        throw new Error(`tool name "${plugin.name}" must be lowercase letters, digits and underscores`);
      if (this.plugins.has(plugin.name)) throw new Error(`tool "${plugin.name}" is registered twice`);
      this.plugins.set(plugin.name, plugin);
    }
  }

  get(name: string): AnyToolPlugin | undefined {
    return this.plugins.get(name);
  }

  names(): string[] {
    return [...this.plugins.keys()];
  }

  /**
   * Whether a call may run as a local activity in the agent worker: its tool says so for its input,
   * or the call is malformed (unknown tool, input failing the schema: answered in memory, invalid).
   */
  runsLocally(call: ToolCall): boolean {
    const plugin = this.plugins.get(call.tool);
    if (!plugin) return true;
    const parsed = plugin.inputSchema.safeParse(call.input);
    return !parsed.success || (plugin.runsLocally?.(parsed.data) ?? false);
  }

  /** Descriptors for prompts and JSON function calling; unknown names are ignored. */
  describe(names?: readonly string[]): ToolDescriptor[] {
    const wanted = names ?? this.names();
    return wanted.flatMap((name) => {
      const plugin = this.plugins.get(name);
      if (!plugin) return [];
      const inputSchema = z.toJSONSchema(plugin.inputSchema) as Record<string, unknown>;
      return [{ name: plugin.name, description: plugin.description, inputSchema }];
    });
  }
}

/** The default cache key: stable JSON of the input with strings trimmed and inner whitespace collapsed. */
export function defaultCacheKey(input: unknown): string {
  return JSON.stringify(normaliseValue(input));
}

function normaliseValue(value: unknown): unknown {
  if (typeof value === 'string') return value.trim().replace(/\s+/g, ' ');
  if (Array.isArray(value)) return value.map(normaliseValue);
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .map((key) => [key, normaliseValue((value as Record<string, unknown>)[key])]),
    );
  }
  return value;
}
