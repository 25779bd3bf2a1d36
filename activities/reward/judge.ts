/**
 * LLM-as-judge through any PolicyBackend (the `openai` backend in practice). The judge answers
 * with a verdict line; anything unparsable scores 0 with the reason recorded. Never throws.
 */
import type { PolicyBackend } from '../ports/policy.port.js';

export function judgePrompt(question: string, golds: readonly string[], prediction: string): string {
  return [
    'You grade answers to questions. Decide whether the predicted answer means the same as any gold answer.',
    'Reply with exactly one line: "VERDICT: CORRECT" or "VERDICT: INCORRECT".',
    '',
    `Question: ${question}`,
    `Gold answers: ${golds.map((gold) => JSON.stringify(gold)).join(' | ')}`,
    `Predicted answer: ${JSON.stringify(prediction)}`,
    '',
    'VERDICT:',
  ].join('\n');
}

/** 1, 0, or null when the reply carries no verdict. */
export function parseVerdict(reply: string): 1 | 0 | null {
  const match = /VERDICT:\s*(CORRECT|INCORRECT)\b/i.exec(`VERDICT:${reply}`) ?? /\b(CORRECT|INCORRECT)\b/i.exec(reply);
  if (!match) return null;
  return match[1]!.toUpperCase() === 'CORRECT' ? 1 : 0;
}

export interface JudgeOutcome {
  readonly score: number;
  readonly error?: string;
  readonly reply?: string;
}

export async function judgeAnswer(backend: PolicyBackend, question: string, golds: readonly string[], prediction: string | null): Promise<JudgeOutcome> {
  if (prediction === null) return { score: 0, error: 'no answer to judge' };
  try {
    const result = await backend.generate({ prompt: judgePrompt(question, golds, prediction), maxNewTokens: 8, temperature: 0 });
    const verdict = parseVerdict(result.text);
    return verdict === null ? { score: 0, error: 'judge reply has no verdict', reply: result.text.slice(0, 200) } : { score: verdict, reply: result.text.slice(0, 200) };
  } catch (error) {
    return { score: 0, error: `judge failed: ${error instanceof Error ? error.message : String(error)}` };
  }
}
