/**
 * The pure parts of the validation checks: quality rules, the Wilson bound that decides difficulty,
 * how a closed-book sample is judged, and the closed-book prompt.
 */
import { containsWord } from './evidence.js';

/** Wilson score interval's lower bound at 95 % for `successes` of `n`. */
export function wilsonLowerBound(successes: number, n: number, z = 1.96): number {
  if (n === 0) return 0;
  const p = successes / n;
  const z2 = z * z;
  return (p + z2 / (2 * n) - z * Math.sqrt((p * (1 - p)) / n + z2 / (4 * n * n))) / (1 + z2 / n);
}

/** SQuAD normalisation: lower-case, punctuation out, articles out, spaces collapsed. */
export function normaliseAnswer(text: string): string {
  return text
    .toLowerCase()
    .replace(/[\p{P}\p{S}]/gu, ' ')
    .replace(/\b(a|an|the)\b/g, ' ')
    .replace(/\s+/g, ' ')
    .trim();
}

/** The answer of a closed-book reply: inside <answer>…</answer> when present, else the whole reply. */
export function extractAnswer(reply: string): string {
  const match = /<answer>([\s\S]*?)(<\/answer>|$)/.exec(reply);
  return (match ? match[1]! : reply).trim();
}

/** Correct when the normalised gold answer equals, or is contained as words in, the extracted answer. */
export function closedBookCorrect(reply: string, gold: string): boolean {
  const predicted = normaliseAnswer(extractAnswer(reply));
  const expected = normaliseAnswer(gold);
  if (expected === '' || predicted === '') return false;
  return predicted === expected || containsWord(predicted, expected);
}

/** Quality: well formed, the answer not in the question, one question (not two glued together). Null when it passes. */
export function qualityProblem(question: string, answer: string): string | null {
  const trimmed = question.trim();
  if (trimmed.length < 15) return `too short (${trimmed.length} characters)`;
  if (trimmed.length > 1500) return `too long (${trimmed.length} characters)`;
  if (!trimmed.endsWith('?')) return 'does not end with a question mark';
  if (!/^[A-Z]/.test(trimmed)) return 'does not start with a capital letter';
  if ((trimmed.match(/\?/g) ?? []).length > 1) return 'two questions glued together (more than one question mark)';
  if (/\?\s+\S/.test(trimmed) || /[.!]\s+(what|which|who|where|when|how|in which)\b/i.test(trimmed))
    return 'two questions glued together (a sentence after a question)';
  if (answer.trim() === '') return 'empty answer';
  if (containsWord(trimmed.toLowerCase(), answer.trim().toLowerCase())) return `the answer "${answer}" appears in the question`;
  let depth = 0;
  for (const character of trimmed) {
    if (character === '(') depth += 1;
    if (character === ')') depth -= 1;
    if (depth < 0) return 'unbalanced parentheses';
  }
  if (depth !== 0) return 'unbalanced parentheses';
  return null;
}
