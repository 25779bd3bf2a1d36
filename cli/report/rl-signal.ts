/**
 * Where an RL run's learning signal came from. A group (the G samples the learner drew for one question, trajectory
 * ids `<group>-s<j>`) whose rewards are all equal has zero advantage and teaches nothing; a group that mixes right and
 * wrong answers (EM) is the contrast RL learns from. This counts both per question set the group's question came from
 * (a demo's warm-start questions or its training candidates, `--train-warm-start`) and per hop count. Pure.
 */
import { groupAdvantages } from '../../activities/reward/advantage.js';
import type { GroupScale } from '../../workflows/contracts/trajectory.contract.js';
import { curriculumBaseQuestionId } from '../../workflows/learner-curriculum.js';

/** One training sample as the report reads it. */
export interface SignalSample {
  readonly trajectoryId: string;
  readonly questionId: string;
  readonly reward: number;
  /** Exact match of the answer, 0 or 1. */
  readonly em: number;
  /** Token F1 of the answer (0 when it has none). */
  readonly f1?: number;
  /** Whether the trajectory gave an answer. */
  readonly answered?: boolean;
  /** Why it stopped: answered, repeated, max_turns, invalid, … */
  readonly stopReason?: string;
}

/** The set a training question came from and its size. */
export interface QuestionOrigin {
  /** "warm-start", "candidate" or "training set" (a run that is no demo). */
  readonly source: string;
  /** The question's hop count when its row carries one. */
  readonly hops: number | null;
  /** Turns of its gold path (search, access, answer), when it has one: 5 for one hop, 7 for two in synthesized sets. */
  readonly goldTurns: number | null;
}

export interface SignalRow extends QuestionOrigin {
  readonly groups: number;
  readonly samples: number;
  /** Samples with EM 1. */
  readonly right: number;
  /** Groups with at least one right and one wrong sample. */
  readonly mixed: number;
  /** Groups whose rewards are all equal: zero advantage (the learner's zeroAdvantageGroupShare counts the same). */
  readonly equalReward: number;
}

/** The group a learner's sample belongs to: its trajectory id without the sample suffix `-s<j>`. */
export const signalGroupId = (trajectoryId: string) => trajectoryId.replace(/-s\d+$/, '');

/** The samples by learner group (`signalGroupId`), in the order the groups are first met. */
function signalGroups(samples: readonly SignalSample[]): Map<string, SignalSample[]> {
  const groups = new Map<string, SignalSample[]>();
  for (const sample of samples) {
    const id = signalGroupId(sample.trajectoryId);
    groups.set(id, [...(groups.get(id) ?? []), sample]);
  }
  return groups;
}

const unknownOrigin: QuestionOrigin = { source: 'unknown', hops: null, goldTurns: null };

/**
 * The signal per question origin, ordered by source (as first met in `sources`, unknown last), then hops and gold
 * turns. `origins` maps question ids; a curriculum group's id (`<id>/g<n>`) is looked up by its question's id.
 */
export function rlSignal(
  samples: readonly SignalSample[],
  origins: ReadonlyMap<string, QuestionOrigin>,
  sources: readonly string[] = ['warm-start', 'candidate', 'training set'],
): SignalRow[] {
  const groups = signalGroups(samples);
  const rows = new Map<string, { origin: QuestionOrigin; groups: number; samples: number; right: number; mixed: number; equal: number }>();
  for (const group of groups.values()) {
    const origin = originOf(group[0]!.questionId, origins);
    const key = `${origin.source}\u0000${origin.hops}\u0000${origin.goldTurns}`;
    const row = rows.get(key) ?? { origin, groups: 0, samples: 0, right: 0, mixed: 0, equal: 0 };
    const right = group.filter((sample) => sample.em >= 1).length;
    rows.set(key, {
      origin,
      groups: row.groups + 1,
      samples: row.samples + group.length,
      right: row.right + right,
      mixed: row.mixed + (right > 0 && right < group.length ? 1 : 0),
      equal: row.equal + (new Set(group.map((sample) => sample.reward)).size === 1 ? 1 : 0),
    });
  }
  const rank = (source: string) => (sources.includes(source) ? sources.indexOf(source) : sources.length);
  const order = (value: number | null) => value ?? Number.MAX_SAFE_INTEGER;
  return [...rows.values()]
    .map(({ origin, groups: count, samples: sampleCount, right, mixed, equal }) => ({
      ...origin,
      groups: count,
      samples: sampleCount,
      right,
      mixed,
      equalReward: equal,
    }))
    .sort(
      (a, b) =>
        rank(a.source) - rank(b.source) ||
        a.source.localeCompare(b.source) ||
        order(a.hops) - order(b.hops) ||
        order(a.goldTurns) - order(b.goldTurns),
    );
}

function originOf(questionId: string, origins: ReadonlyMap<string, QuestionOrigin>): QuestionOrigin {
  const direct = origins.get(questionId);
  if (direct) return direct;
  const base = curriculumBaseQuestionId(questionId);
  if (base === questionId) return unknownOrigin;
  const found = origins.get(base);
  if (found) return found;
  // A long id was clipped to take the group suffix: the question whose id begins with what is left.
  for (const [id, origin] of origins) if (id.startsWith(base)) return origin;
  return unknownOrigin;
}

/** The origin of each question of a JSONL set, as `source`: its hop count and gold path length where it has them. */
export function questionOrigins(text: string, source: string): Map<string, QuestionOrigin> {
  const origins = new Map<string, QuestionOrigin>();
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    const row = JSON.parse(line) as { id?: unknown; hops?: unknown; goldTurns?: unknown };
    if (typeof row.id !== 'string') continue;
    origins.set(row.id, {
      source,
      hops: typeof row.hops === 'number' ? row.hops : null,
      goldTurns: Array.isArray(row.goldTurns) ? row.goldTurns.length : null,
    });
  }
  return origins;
}

/** One line: groups that mixed right and wrong answers, by source, and groups with equal rewards. */
export function signalSummary(rows: readonly SignalRow[]): string | null {
  if (!rows.length) return null;
  const sum = (pick: (row: SignalRow) => number, list: readonly SignalRow[] = rows) => list.reduce((total, row) => total + pick(row), 0);
  const groups = sum((row) => row.groups);
  const sources = [...new Set(rows.map((row) => row.source))];
  const bySource =
    sources.length > 1
      ? ` (${sources
          .map((source) => {
            const list = rows.filter((row) => row.source === source);
            return `${source} ${sum((row) => row.mixed, list)} of ${sum((row) => row.groups, list)}`;
          })
          .join(' · ')})`
      : '';
  return `RL signal: ${sum((row) => row.mixed)} of ${groups} groups mixed right and wrong answers${bySource}; ${sum(
    (row) => row.equalReward,
  )} had equal rewards (zero advantage)`;
}

/** What a training sample ended as, for the advantage table: its answer's score, or why it gave none. */
export const outcomes = [
  'right',
  'partly right',
  'wrong answer',
  'no answer: repeated a call',
  'no answer: out of turns',
  'no answer: other',
] as const;
export type Outcome = (typeof outcomes)[number];

export function outcomeOf(sample: SignalSample): Outcome {
  if (sample.em >= 1) return 'right';
  const answered = sample.answered ?? sample.stopReason === 'answered';
  if (answered) return (sample.f1 ?? 0) > 0 ? 'partly right' : 'wrong answer';
  if (sample.stopReason === 'repeated') return 'no answer: repeated a call';
  if (sample.stopReason === 'max_turns') return 'no answer: out of turns';
  return 'no answer: other';
}

/** A sum of advantages within this of 0 counts as none (an equal group's advantages are 0 up to rounding). */
export const advantageTolerance = 1e-3;

export interface AdvantageRow {
  readonly outcome: Outcome;
  readonly samples: number;
  readonly meanReward: number;
  /** The sum of the samples' group-normalised advantages (activities/reward/advantage.ts): where the update pushes. */
  readonly advantage: number;
}

/**
 * Where the advantage went: per outcome, the samples, their mean reward and the sum of their group-normalised
 * advantages (scaled as the run's train steps scaled them: `scale`, ppo.groupScale), over the groups of `samples`
 * (trajectory ids `<group>-s<j>`). A positive sum for wrong answers means the
 * reward pays something other than being right (session 39: the format term, docs/BENCHMARKS.md). Outcomes with no
 * sample are left out; the order is `outcomes`.
 */
export function advantageByOutcome(samples: readonly SignalSample[], scale: GroupScale = 'std'): AdvantageRow[] {
  const groups = signalGroups(samples);
  const totals = new Map<Outcome, { samples: number; reward: number; advantage: number }>();
  for (const group of groups.values()) {
    const advantages = groupAdvantages(
      group.map((sample) => sample.reward),
      scale,
    );
    group.forEach((sample, index) => {
      const outcome = outcomeOf(sample);
      const total = totals.get(outcome) ?? { samples: 0, reward: 0, advantage: 0 };
      totals.set(outcome, {
        samples: total.samples + 1,
        reward: total.reward + sample.reward,
        advantage: total.advantage + advantages[index]!,
      });
    });
  }
  return outcomes.flatMap((outcome) => {
    const total = totals.get(outcome);
    return total ? [{ outcome, samples: total.samples, meanReward: total.reward / total.samples, advantage: total.advantage }] : [];
  });
}

/** One line: the advantage per outcome, and a warning when wrong or missing answers gained. */
export function advantageSummary(rows: readonly AdvantageRow[]): string | null {
  if (!rows.length) return null;
  const signed = (value: number) => `${value >= 0 ? '+' : '−'}${Math.abs(value).toFixed(1)}`;
  const line = `advantage by outcome: ${rows.map((row) => `${row.outcome} ${signed(row.advantage)} (${row.samples})`).join(' · ')}`;
  const gained = rows.filter((row) => row.outcome !== 'right' && row.outcome !== 'partly right' && row.advantage > advantageTolerance);
  return gained.length
    ? `${line}; warning: ${gained.map((row) => row.outcome).join(', ')} gained advantage, so the reward pays something other than the answer`
    : line;
}
