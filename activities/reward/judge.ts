/**
 * LLM-as-judge (rewardMetric "judge"): a chat model grades the predicted answer against the gold
 * answers and replies with a verdict line. The outcomes, by design:
 * - no predicted answer: score 0, the judge is not asked;
 * - a reply with a verdict: 1 (CORRECT) or 0 (INCORRECT);
 * - a reply without one (the judge answered, but not in the asked form): score 0, verdict "none",
 *   the reply recorded. The judge runs at temperature 0, so asking again would give the same reply;
 * - the judge unreachable or failing (connection refused, 5xx, time-outs) or refusing the request
 *   (4xx: unknown model, bad key, a body that is not a completion): `judgeAnswer` throws, so the
 *   caller writes nothing and decides whether to retry (finishTrajectory: retry the first,
 *   fail the second non-retryably).
 */
import { askAndParse, jsonObjectOf } from '../llm/ask.js';
import type { Judge } from '../ports/judge.port.js';
import type { JudgeVerdict } from '../ports/trajectory-record.schema.js';

export type JudgeMessage = { readonly role: 'system' | 'user'; readonly content: string };

export function judgeMessages(question: string, golds: readonly string[], prediction: string): JudgeMessage[] {
  return [
    {
      role: 'system',
      content:
        'You grade answers to questions. Decide whether the predicted answer means the same as any gold answer. ' +
        'Reply with exactly one line: "VERDICT: CORRECT" or "VERDICT: INCORRECT".',
    },
    {
      role: 'user',
      content: [
        `Question: ${question}`,
        `Gold answers: ${golds.map((gold) => JSON.stringify(gold)).join(' | ')}`,
        `Predicted answer: ${JSON.stringify(prediction)}`,
      ].join('\n'),
    },
  ];
}

/** 1, 0, or null when the reply carries no verdict. */
export function parseVerdict(reply: string): 1 | 0 | null {
  const match = /VERDICT:\s*(CORRECT|INCORRECT)\b/i.exec(`VERDICT:${reply}`) ?? /\b(CORRECT|INCORRECT)\b/i.exec(reply);
  if (!match) return null;
  return match[1]!.toUpperCase() === 'CORRECT' ? 1 : 0;
}

/** What the trajectory record keeps of a judgement. */
export interface JudgeOutcome {
  readonly score: 0 | 1;
  readonly verdict: JudgeVerdict;
  /** Why the score is 0 without an INCORRECT verdict. */
  readonly error?: string;
  readonly model?: string;
  readonly baseUrl?: string;
  readonly messages?: readonly JudgeMessage[];
  /** The judge's reply, first 500 characters. */
  readonly reply?: string;
}

/** Reply length asked for: the verdict line and a little slack. */
const judgeMaxTokens = 16;

/** Grade `prediction`; throws when the judge cannot be reached or refuses the request (see the file comment). */
export async function judgeAnswer(
  judge: Judge,
  question: string,
  golds: readonly string[],
  prediction: string | null,
): Promise<JudgeOutcome> {
  if (prediction === null) return { score: 0, verdict: 'no answer', error: 'no answer to judge' };
  const messages = judgeMessages(question, golds, prediction);
  const { reply: text, parsed: verdict } = await askAndParse(
    judge.backend,
    messages,
    { maxNewTokens: judgeMaxTokens, temperature: 0 },
    parseVerdict,
  );
  const asked = { model: judge.model, baseUrl: judge.baseUrl, messages, reply: text.slice(0, 500) };
  if (verdict === null)
    return {
      score: 0,
      verdict: 'none',
      error: 'judge reply has no verdict (expected "VERDICT: CORRECT" or "VERDICT: INCORRECT")',
      ...asked,
    };
  return { score: verdict, verdict: verdict === 1 ? 'correct' : 'incorrect', ...asked };
}

/**
 * The evaluation judge's prompt, versioned: change the text, change the version. Its hash (over the
 * version and both messages' templates) is stored with each evaluation result, so results graded by
 * different prompts are never compared unawares. It asks for a JSON verdict with a rationale.
 */
export const evaluationJudgePromptVersion = 'longhaul.eval-judge/1';
const evaluationJudgeSystem =
  'You grade answers to questions. Decide whether the predicted answer means the same as any gold answer ' +
  '(aliases, spelling variants and added detail that does not contradict are fine; a different entity or number is not). ' +
  'Reply with one JSON object and nothing else: {"verdict": "correct" or "incorrect", "rationale": "one short sentence"}.';

export function evaluationJudgeMessages(question: string, golds: readonly string[], prediction: string): JudgeMessage[] {
  return [
    { role: 'system', content: evaluationJudgeSystem },
    {
      role: 'user',
      content: [
        `Question: ${question}`,
        `Gold answers: ${golds.map((gold) => JSON.stringify(gold)).join(' | ')}`,
        `Predicted answer: ${JSON.stringify(prediction)}`,
      ].join('\n'),
    },
  ];
}

/** The text the prompt hash covers: the version and the templates with placeholders. */
export const evaluationJudgePromptText = [
  evaluationJudgePromptVersion,
  ...evaluationJudgeMessages('{question}', ['{gold}'], '{prediction}').map((m) => `${m.role}: ${m.content}`),
].join('\n');

/** The verdict and rationale of a reply: its JSON object, else a verdict line; null when it has neither. */
export function parseJudgement(reply: string): { score: 1 | 0; rationale: string } | null {
  const parsed = jsonObjectOf(reply);
  if (parsed) {
    const verdict = typeof parsed.verdict === 'string' ? parsed.verdict.trim().toLowerCase() : '';
    if (verdict === 'correct' || verdict === 'incorrect')
      return { score: verdict === 'correct' ? 1 : 0, rationale: typeof parsed.rationale === 'string' ? parsed.rationale : '' };
  }
  // Not a JSON verdict: fall through to the verdict line.
  const score = parseVerdict(reply);
  return score === null ? null : { score, rationale: reply.trim().slice(0, 500) };
}

export interface EvaluationJudgement {
  readonly score: 0 | 1;
  readonly verdict: JudgeVerdict;
  readonly rationale: string;
  readonly reply?: string;
}

/** Reply length asked for by the evaluation judge: the JSON object with a one-sentence rationale. */
const evaluationJudgeMaxTokens = 160;

/** Grade `prediction` with a rationale; throws when the judge is unreachable or refuses (the caller retries or fails, never scores 0). */
export async function judgeWithRationale(
  judge: Judge,
  question: string,
  golds: readonly string[],
  prediction: string | null,
): Promise<EvaluationJudgement> {
  if (prediction === null) return { score: 0, verdict: 'no answer', rationale: 'no answer to judge' };
  const messages = evaluationJudgeMessages(question, golds, prediction);
  const asked = await askAndParse(judge.backend, messages, { maxNewTokens: evaluationJudgeMaxTokens, temperature: 0 }, parseJudgement);
  const reply = asked.reply.slice(0, 1000);
  const judgement = asked.parsed;
  if (judgement === null)
    return { score: 0, verdict: 'none', rationale: 'the judge reply has neither a JSON verdict nor a verdict line', reply };
  return { score: judgement.score, verdict: judgement.score === 1 ? 'correct' : 'incorrect', rationale: judgement.rationale, reply };
}
