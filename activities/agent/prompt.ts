/**
 * Prompt assembly for the search agent (ASearcher's protocol, DESIGN §3.7). The context is a list
 * of segments: what the model generated, and what tools answered (inside <information>). Two
 * modes: `full` keeps one growing prompt (small models); `recent` rebuilds it every turn from the
 * question plus the most recent history (ASearcher's large-model agent).
 */
import type { ContextMode, Protocol } from '../../workflows/contracts/trajectory.contract.js';

export interface ContextSegment {
  readonly kind: 'generated' | 'observation';
  readonly text: string;
}

export interface PromptOptions {
  readonly protocol: Protocol;
  readonly contextMode: ContextMode;
  readonly recentChars: number;
  readonly tools: readonly string[];
  /** chatml wraps system/user/assistant in <|im_start|> markers (SmolLM2, Qwen); plain does not. */
  readonly template: 'chatml' | 'plain';
}

const TAG_HELP: Record<string, string> = {
  search: '<search>query</search> searches the knowledge corpus and returns the top documents with their ids',
  access: '<access>document id or URL</access> reads a document; add "#page=N" to read further pages',
  answer: '<answer>short answer</answer> gives your final answer and ends the episode',
  web_search: '<web_search>query</web_search> searches the web',
  web_fetch: '<web_fetch>URL</web_fetch> fetches a web page as text',
  sql: '<sql>SELECT …</sql> runs a read-only SQL query',
};

export function systemPrompt(options: Pick<PromptOptions, 'protocol' | 'tools'>): string {
  if (options.protocol === 'json') {
    return [
      'You answer questions by searching. Call one tool per turn as',
      '<tool_call>{"name": "<tool>", "arguments": {…}}</tool_call>',
      `Tools: ${options.tools.join(', ')}. Finish with the answer tool: {"name": "answer", "arguments": {"answer": "…"}}.`,
    ].join('\n');
  }
  return [
    'You answer questions by searching. Think inside <think></think>, then take exactly one action:',
    ...options.tools.map((tool) => `- ${TAG_HELP[tool] ?? `<${tool}>input</${tool}>`}`),
    'Tool results come back inside <information></information>. Answer as briefly as possible.',
  ].join('\n');
}

function header(question: string, options: PromptOptions): string {
  const system = systemPrompt(options);
  if (options.template === 'plain') return `${system}\n\nQuestion: ${question}\n\n`;
  return `<|im_start|>system\n${system}<|im_end|>\n<|im_start|>user\n${question}<|im_end|>\n<|im_start|>assistant\n`;
}

export function renderSegment(segment: ContextSegment): string {
  return segment.kind === 'generated' ? segment.text : `\n<information>\n${segment.text}\n</information>\n`;
}

/** The full prompt for the next generation. */
export function buildPrompt(question: string, segments: readonly ContextSegment[], options: PromptOptions): string {
  const rendered = segments.map(renderSegment);
  if (options.contextMode === 'full') return header(question, options) + rendered.join('');
  const kept: string[] = [];
  let size = 0;
  for (let index = rendered.length - 1; index >= 0; index -= 1) {
    const piece = rendered[index]!;
    if (size + piece.length > options.recentChars && kept.length > 0) break;
    kept.unshift(piece.length > options.recentChars ? piece.slice(-options.recentChars) : piece);
    size += piece.length;
  }
  const dropped = rendered.length - kept.length;
  return header(question, options) + (dropped > 0 ? `[${dropped} earlier steps omitted]\n` : '') + kept.join('');
}

/** Where generation should stop: right after a closed action tag, or at the end-of-turn marker. */
export function stopStrings(options: Pick<PromptOptions, 'protocol' | 'tools'>): string[] {
  if (options.protocol === 'json') return ['</tool_call>', '<|im_end|>'];
  return [...options.tools.map((tool) => `</${tool}>`), '<|im_end|>'];
}
