/**
 * Where an RL run's learning signal came from. A group (the G samples the learner drew for one question, trajectory
 * ids `<group>-s<j>`) whose rewards are all equal has zero advantage and teaches nothing; a group that mixes right and
 * wrong answers (EM) is the contrast RL learns from. This counts both per question set the group's question came from
 * (a demo's warm-start questions or its training candidates, `--train-warm-start`) and per hop count. Pure.
 */
import { curriculumBaseQuestionId } from '../../workflows/learner-curriculum.js';

/** One training sample as the report reads it. */
export interface SignalSample {
  readonly trajectoryId: string;
  readonly questionId: string;
  readonly reward: number;
  /** Exact match of the answer, 0 or 1. */
  readonly em: number;
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
  const groups = new Map<string, SignalSample[]>();
  for (const sample of samples) {
    const id = signalGroupId(sample.trajectoryId);
    groups.set(id, [...(groups.get(id) ?? []), sample]);
  }
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
