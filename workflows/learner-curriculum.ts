/**
 * The learner's curriculum (LearnerCurriculum in contracts/learner.contract.ts), pure so that it can
 * be unit-tested apart from the workflow: which active question the next group samples, what a
 * settled group does to its question's streaks, and when the question leaves the active set.
 */
import type {
  CurriculumCounts,
  CurriculumQuestion,
  CurriculumReport,
  CurriculumState,
  LearnerCurriculum,
} from './contracts/learner.contract.js';

/** The state before the first fill. */
export function emptyCurriculum(): CurriculumState {
  return { active: [], draws: 0, entered: 0, mastered: 0, tooHard: 0, exhausted: false };
}

/** A question entering the active set (from dataset line `index`). */
export function enterQuestion(state: CurriculumState, index: number, id: string): CurriculumState {
  const question: CurriculumQuestion = { index, id, groups: 0, lastDrawn: -1, highStreak: 0, lowStreak: 0 };
  return { ...state, active: [...state.active, question], entered: state.entered + 1 };
}

/**
 * The active question the next group samples: the fewest groups in flight, then the one drawn least
 * recently (never drawn first), then the earliest to enter. Undefined when the active set is empty.
 */
export function pickQuestion(state: CurriculumState, inflightGroups: (index: number) => number): CurriculumQuestion | undefined {
  let best: CurriculumQuestion | undefined;
  for (const question of state.active) {
    if (
      best === undefined ||
      inflightGroups(question.index) < inflightGroups(best.index) ||
      (inflightGroups(question.index) === inflightGroups(best.index) && question.lastDrawn < best.lastDrawn)
    )
      best = question;
  }
  return best;
}

/** The question's next group is drawn: its group count and draw number move on. */
export function drawQuestion(state: CurriculumState, index: number): CurriculumState {
  return {
    ...state,
    draws: state.draws + 1,
    active: state.active.map((question) =>
      question.index === index ? { ...question, groups: question.groups + 1, lastDrawn: state.draws } : question,
    ),
  };
}

/** The share of a group's samples whose reward is at least `passReward` (0 for an empty group). */
export function passRate(rewards: readonly number[], passReward: number): number {
  return rewards.length === 0 ? 0 : rewards.filter((reward) => reward >= passReward).length / rewards.length;
}

export type Departure = 'mastered' | 'tooHard';

/**
 * A settled group of question `index` with these rewards: its streaks move, and the question leaves
 * when a streak reaches its count. A question no longer active (it left while the group ran) is
 * left alone.
 */
export function recordGroup(
  state: CurriculumState,
  index: number,
  rewards: readonly number[],
  settings: LearnerCurriculum,
): { state: CurriculumState; departure?: Departure } {
  const question = state.active.find((candidate) => candidate.index === index);
  if (!question) return { state };
  const rate = passRate(rewards, settings.passReward);
  const highStreak = rate >= settings.upper ? question.highStreak + 1 : 0;
  const lowStreak = rate <= settings.lower ? question.lowStreak + 1 : 0;
  const departure: Departure | undefined =
    highStreak >= settings.masteredAfter ? 'mastered' : lowStreak >= settings.tooHardAfter ? 'tooHard' : undefined;
  if (departure === undefined)
    return {
      state: {
        ...state,
        active: state.active.map((candidate) => (candidate === question ? { ...question, highStreak, lowStreak } : candidate)),
      },
    };
  return {
    state: {
      ...state,
      active: state.active.filter((candidate) => candidate !== question),
      mastered: state.mastered + (departure === 'mastered' ? 1 : 0),
      tooHard: state.tooHard + (departure === 'tooHard' ? 1 : 0),
    },
    departure,
  };
}

export function curriculumCounts(state: CurriculumState): CurriculumCounts {
  return { active: state.active.length, entered: state.entered, mastered: state.mastered, tooHard: state.tooHard };
}

export function curriculumReport(state: CurriculumState): CurriculumReport {
  return { ...curriculumCounts(state), activeQuestionIds: state.active.map((question) => question.id) };
}

/** The longest question id a trajectory takes (trajectory.input.ts). */
const maxQuestionIdLength = 200;

/**
 * The question id a curriculum group's trajectories carry, `<id>/g<n>`: the buffer and the trainer group
 * samples by question id. An id too long for the suffix is clipped so the trajectory still takes it.
 */
export function curriculumGroupQuestionId(id: string, group: number): string {
  const suffix = `/g${group}`;
  return `${id.slice(0, maxQuestionIdLength - suffix.length)}${suffix}`;
}

/** The question id a curriculum group's id was made from (clipped if the id was too long for the suffix); other ids unchanged. */
export function curriculumBaseQuestionId(groupQuestionId: string): string {
  return groupQuestionId.replace(/\/g\d+$/, '');
}
