/**
 * Behaviour analysis: the expert search behaviours (ASearcher's seed, "expert behaviours") measured on
 * finished trajectories, per trajectory and per policy version. Pure: it reads TrajectoryViews.
 *
 * Definitions (each measured only on what the trajectory itself shows):
 * - tool calls: every call the agent made (any tool); searches: calls of a tool whose name contains
 *   "search" (`search`, `web_search`).
 * - verified by a further search: the trajectory answered, the answer (SQuAD-normalised, non-empty)
 *   first appears in turn t — in an observation the agent saw, or in the agent's own text before its
 *   answer turn — and the agent made at least one more search in a later turn before answering.
 *   An answer that never appeared before the answer turn is "unsupported", not verified.
 * - distinct documents drawn on: distinct document ids over all tool results of the trajectory.
 * - uncertainty: the agent's own text (never observations) says it is unsure (see
 *   `uncertaintyPatterns`); conflicting evidence: its text says sources disagree (`conflictPatterns`).
 * - where a right answer is lost, against the gold answers (normalised, on word boundaries): gold seen,
 *   a gold answer is in an observation the agent saw (the search reached the evidence); gold stated,
 *   it is in the agent's own reasoning (its text without the answer action); stated but missed, it
 *   was stated and the given answer is still not an exact match (the answer disagrees with the agent's
 *   own reasoning, e.g. "its capital is Riga" then <answer>Latvian</answer>).
 */
import { exactMatch, normalizeAnswer } from '../reward/metrics.js';
import { trajectoryVersion, type TrajectoryView } from './trajectory-view.js';

export const uncertaintyPatterns: readonly RegExp[] = [
  /\bnot (?:entirely |completely |fully )?(?:sure|certain)\b/i,
  /\b(?:unsure|uncertain|unclear)\b/i,
  /\bi (?:think|believe|guess|assume)\b/i,
  /\b(?:probably|possibly|perhaps|maybe)\b/i,
  /\b(?:might|may|could) be\b/i,
  /\b(?:cannot|can't|can not|could not|couldn't) (?:confirm|verify|find|determine)\b/i,
];

export const conflictPatterns: readonly RegExp[] = [
  /\bconflict(?:s|ing)?\b/i,
  /\bcontradict(?:s|ory|ion|ing)?\b/i,
  /\b(?:inconsistent|inconsistency|discrepanc(?:y|ies))\b/i,
  /\b(?:sources|documents|results|pages) (?:disagree|differ)\b/i,
  /\bdisagree(?:s|ment)?\b/i,
  /\b(?:another|other|a different|the second) (?:source|document|result|page) (?:says|states|gives|claims|lists)\b/i,
];

export interface TrajectoryBehaviour {
  readonly trajectoryId: string;
  readonly questionId: string;
  readonly version: number;
  readonly reward: number;
  readonly answered: boolean;
  readonly toolCalls: number;
  readonly searches: number;
  /** null when the trajectory did not answer. */
  readonly verifiedBySearch: boolean | null;
  /** The turn where the answer first appeared before the answer turn; null when it never did. */
  readonly answerFirstSeenTurn: number | null;
  readonly distinctDocuments: number;
  /** Phrases of uncertainty / conflicting evidence in the agent's own text, as matched. */
  readonly uncertainty: readonly string[];
  readonly conflict: readonly string[];
  /** A gold answer appears in an observation the agent saw / in its own reasoning (not its answer action). */
  readonly goldSeen: boolean;
  readonly goldStated: boolean;
  /** The given answer is an exact match of a gold answer. */
  readonly correct: boolean;
}

export interface VersionBehaviour {
  readonly version: number;
  readonly trajectories: number;
  readonly answered: number;
  /** Share of answered trajectories whose answer was verified by a further search (null: none answered). */
  readonly verifiedShare: number | null;
  readonly meanDistinctDocuments: number;
  /** Share of trajectories whose text expresses uncertainty / conflicting evidence. */
  readonly uncertaintyShare: number;
  readonly conflictShare: number;
  /** Mean tool calls per trajectory (each trajectory answers one question). */
  readonly meanToolCalls: number;
  readonly meanSearches: number;
  /** Mean over questions of the mean tool calls of their samples (a question with many samples counts once). */
  readonly meanToolCallsPerQuestion: number;
  readonly meanReward: number;
  /**
   * Shares of trajectories: a gold answer seen in an observation; stated in the agent's reasoning; stated,
   * yet the answer is not an exact match. Absent from behaviour stored before they were measured.
   */
  readonly goldSeenShare?: number;
  readonly goldStatedShare?: number;
  readonly statedButMissedShare?: number;
}

/** A version's gold measures (seen, stated, stated but missed), or null for behaviour stored before they were measured. */
export function goldMeasures(row: VersionBehaviour): { seen: number; stated: number; statedButMissed: number } | null {
  if (row.goldSeenShare === undefined) return null;
  return { seen: row.goldSeenShare, stated: row.goldStatedShare ?? 0, statedButMissed: row.statedButMissedShare ?? 0 };
}

const isSearch = (tool: string) => tool.includes('search');

function matches(patterns: readonly RegExp[], texts: readonly string[]): string[] {
  const found: string[] = [];
  for (const text of texts)
    for (const pattern of patterns) {
      const match = pattern.exec(text);
      if (match) found.push(match[0].toLowerCase());
    }
  return found;
}

/** Does the normalised answer occur in the text, on word boundaries? */
function mentions(text: string, normalizedAnswer: string): boolean {
  return ` ${normalizeAnswer(text)} `.includes(` ${normalizedAnswer} `);
}

export function analyseTrajectory(view: TrajectoryView): TrajectoryBehaviour {
  const calls = view.turns.flatMap((turn) => turn.toolCalls);
  const answerTurn = view.turns.find((turn) => turn.action === 'answer')?.turn ?? Number.POSITIVE_INFINITY;
  const normalized = view.answer === null ? '' : normalizeAnswer(view.answer);
  let firstSeen: number | null = null;
  if (normalized) {
    for (const turn of view.turns) {
      if (turn.turn >= answerTurn) break;
      const observed = turn.toolCalls.some((call) => call.observation !== null && mentions(call.observation, normalized));
      if (observed || mentions(turn.text, normalized)) {
        firstSeen = turn.turn;
        break;
      }
    }
  }
  const answered = view.answer !== null;
  const verified = !answered
    ? null
    : firstSeen !== null &&
      view.turns.some((turn) => turn.turn > firstSeen && turn.turn < answerTurn && turn.toolCalls.some((call) => isSearch(call.tool)));
  // Only the agent's own words count, never the documents it read.
  const ownText = view.turns.map((turn) => turn.text);
  const golds = view.goldAnswers.map(normalizeAnswer).filter((gold) => gold.length > 0);
  const observations = calls.flatMap((call) => (call.observation === null ? [] : [call.observation]));
  const reasoning = view.turns.map((turn) => withoutAnswerAction(turn.text));
  const mentionsGold = (texts: readonly string[]) => golds.some((gold) => texts.some((text) => mentions(text, gold)));
  return {
    trajectoryId: view.trajectoryId,
    questionId: view.questionId,
    version: trajectoryVersion(view),
    reward: view.reward,
    answered,
    toolCalls: calls.length,
    searches: calls.filter((call) => isSearch(call.tool)).length,
    verifiedBySearch: verified,
    answerFirstSeenTurn: firstSeen,
    distinctDocuments: new Set(calls.flatMap((call) => call.documentIds)).size,
    uncertainty: matches(uncertaintyPatterns, ownText),
    conflict: matches(conflictPatterns, ownText),
    goldSeen: mentionsGold(observations),
    goldStated: mentionsGold(reasoning),
    correct: view.answer !== null && exactMatch(view.answer, view.goldAnswers) === 1,
  };
}

/** A turn's text without its answer action (<answer>…</answer>, or a JSON answer tool call): what it reasoned, not what it answered. */
function withoutAnswerAction(text: string): string {
  return text
    .replace(/<answer>[\s\S]*?(<\/answer>|$)/g, ' ')
    .replace(/<tool_call>(?=[\s\S]*?"name"\s*:\s*"answer")[\s\S]*?(<\/tool_call>|$)/g, ' ');
}

const mean = (values: readonly number[]) => (values.length ? values.reduce((sum, value) => sum + value, 0) / values.length : 0);
const share = <T>(items: readonly T[], test: (item: T) => boolean) => (items.length ? items.filter(test).length / items.length : 0);

/** Per-version aggregates, ascending by version. */
export function behaviourByVersion(behaviours: readonly TrajectoryBehaviour[]): VersionBehaviour[] {
  const byVersion = new Map<number, TrajectoryBehaviour[]>();
  for (const behaviour of behaviours) byVersion.set(behaviour.version, [...(byVersion.get(behaviour.version) ?? []), behaviour]);
  return [...byVersion.entries()]
    .sort(([a], [b]) => a - b)
    .map(([version, group]) => {
      const answered = group.filter((behaviour) => behaviour.answered);
      const byQuestion = new Map<string, number[]>();
      for (const behaviour of group)
        byQuestion.set(behaviour.questionId, [...(byQuestion.get(behaviour.questionId) ?? []), behaviour.toolCalls]);
      return {
        version,
        trajectories: group.length,
        answered: answered.length,
        verifiedShare: answered.length ? answered.filter((behaviour) => behaviour.verifiedBySearch).length / answered.length : null,
        meanDistinctDocuments: mean(group.map((behaviour) => behaviour.distinctDocuments)),
        uncertaintyShare: group.filter((behaviour) => behaviour.uncertainty.length > 0).length / group.length,
        conflictShare: group.filter((behaviour) => behaviour.conflict.length > 0).length / group.length,
        meanToolCalls: mean(group.map((behaviour) => behaviour.toolCalls)),
        meanSearches: mean(group.map((behaviour) => behaviour.searches)),
        meanToolCallsPerQuestion: mean([...byQuestion.values()].map(mean)),
        meanReward: mean(group.map((behaviour) => behaviour.reward)),
        goldSeenShare: share(group, (behaviour) => behaviour.goldSeen),
        goldStatedShare: share(group, (behaviour) => behaviour.goldStated),
        statedButMissedShare: share(group, (behaviour) => behaviour.goldStated && !behaviour.correct),
      };
    });
}
