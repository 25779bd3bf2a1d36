/**
 * Turns model output into a ParsedAction. Malformed output is data, never an exception: it
 * becomes { kind: 'invalid', reason } and the reward can penalise it (DESIGN §3.7).
 */
import type { ParsedAction, Protocol } from '../../workflows/contracts/trajectory.contract.js';
import type { ToolCall } from '../../workflows/contracts/tools.contract.js';
import { readableText } from '../../workflows/contracts/readable-text.js';

/** Tags that carry no action. */
const NEUTRAL_TAGS = new Set(['think', 'information', 'summary', 'tool_call', 'tool_response']);
/** How each tool's tag body maps to its input. */
const TAG_INPUT: Record<string, (body: string) => unknown> = {
  search: (body) => ({ query: body }),
  access: (body) => ({ target: body }),
  web_search: (body) => ({ query: body }),
  web_fetch: (body) => ({ url: body }),
  sql: (body) => ({ query: body }),
};
const MAX_REASON = 200;

export interface ParseOptions {
  readonly protocol: Protocol;
  /** Tool names the agent may call (answer included when answering is allowed). */
  readonly tools: readonly string[];
  readonly maxCallsPerTurn: number;
}

export function parseAction(text: string, options: ParseOptions): ParsedAction {
  const actions = options.protocol === 'json' ? parseJsonCalls(text) : parseTags(text, options.tools);
  if ('reason' in actions) return invalid(actions.reason);
  const answers = actions.calls.filter((call) => call.tool === 'answer');
  const calls = actions.calls.filter((call) => call.tool !== 'answer');
  if (actions.calls.length === 0) return invalid('no action: expected one of ' + options.tools.map((tool) => `<${tool}>`).join(', '));
  for (const call of actions.calls) {
    if (!options.tools.includes(call.tool)) return invalid(`unknown tool "${call.tool}" (available: ${options.tools.join(', ')})`);
  }
  if (answers.length > 0 && (answers.length > 1 || calls.length > 0)) return invalid('two actions in one turn: an answer must stand alone');
  if (answers.length === 1) {
    // NUL removed and unpaired surrogates replaced: the answer is scored, stored in Postgres and shown; the raw text stays in the generation blob.
    const answer = readableText(String((answers[0]!.input as { answer?: unknown }).answer ?? '')).trim();
    return answer ? { kind: 'answer', answer } : invalid('empty answer');
  }
  if (calls.length > options.maxCallsPerTurn)
    return invalid(`two actions in one turn: ${calls.length} tool calls, at most ${options.maxCallsPerTurn} allowed`);
  return { kind: 'tools', calls };
}

function invalid(reason: string): ParsedAction {
  return { kind: 'invalid', reason: reason.length > MAX_REASON ? `${reason.slice(0, MAX_REASON)}…` : reason };
}

/** `<search>q</search>` style. Anything inside <think> is ignored. */
function parseTags(text: string, tools: readonly string[]): { calls: ToolCall[] } | { reason: string } {
  const visible = text.replace(/<think>[\s\S]*?<\/think>/g, ' ');
  if (/<think>/.test(visible) && !/<\/think>/.test(visible)) {
    // An unclosed think swallows the rest: nothing after it is an action.
    return { reason: 'unclosed <think>' };
  }
  const calls: ToolCall[] = [];
  const tag = /<([a-z_][a-z0-9_]{0,40})>/g;
  let match: RegExpExecArray | null;
  while ((match = tag.exec(visible)) !== null) {
    const name = match[1]!;
    if (NEUTRAL_TAGS.has(name)) continue;
    const close = visible.indexOf(`</${name}>`, match.index + match[0].length);
    if (close < 0) return { reason: `unclosed <${name}>` };
    const body = visible.slice(match.index + match[0].length, close).trim();
    tag.lastIndex = close + name.length + 3;
    if (name === 'answer') calls.push({ tool: 'answer', input: { answer: body } });
    else if (TAG_INPUT[name] || tools.includes(name))
      calls.push({ tool: name, input: (TAG_INPUT[name] ?? ((value: string) => ({ input: value })))(body) });
    else calls.push({ tool: name, input: { input: body } });
  }
  return { calls };
}

/** `<tool_call>{"name": "...", "arguments": {...}}</tool_call>` style, for chat models. */
function parseJsonCalls(text: string): { calls: ToolCall[] } | { reason: string } {
  const calls: ToolCall[] = [];
  const block = /<tool_call>([\s\S]*?)(<\/tool_call>|$)/g;
  let match: RegExpExecArray | null;
  while ((match = block.exec(text)) !== null) {
    if (!match[2]) return { reason: 'unclosed <tool_call>' };
    let value: unknown;
    try {
      value = JSON.parse(match[1]!.trim());
    } catch {
      return { reason: 'tool call is not valid JSON' };
    }
    const { name, arguments: args } = (value ?? {}) as { name?: unknown; arguments?: unknown };
    if (typeof name !== 'string' || !name) return { reason: 'tool call needs a string "name"' };
    calls.push({ tool: name, input: args ?? {} });
  }
  return { calls };
}

/** A short stable key of an action, for repeat detection. */
export function actionKey(action: ParsedAction): string {
  const text =
    action.kind === 'tools'
      ? JSON.stringify(action.calls)
      : action.kind === 'answer'
        ? `answer:${action.answer}`
        : `invalid:${action.reason}`;
  let hash = 2166136261;
  for (let index = 0; index < text.length; index += 1) hash = Math.imul(hash ^ text.charCodeAt(index), 16777619) >>> 0;
  return `${action.kind}:${hash.toString(16)}`;
}
