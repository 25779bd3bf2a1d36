import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { CurriculumState, LearnerCurriculum } from './contracts/learner.contract.js';
import { parseLearnerInput } from './contracts/learner.input.js';
import { LonghaulError } from './contracts/errors.js';
import {
  curriculumCounts,
  curriculumGroupQuestionId,
  drawQuestion,
  emptyCurriculum,
  enterQuestion,
  passRate,
  pickQuestion,
  recordGroup,
} from './learner-curriculum.js';

const settings: LearnerCurriculum = { activeSize: 3, lower: 0.2, upper: 0.8, masteredAfter: 2, tooHardAfter: 3, passReward: 0.5 };

function filled(count: number): CurriculumState {
  let state = emptyCurriculum();
  for (let index = 0; index < count; index += 1) state = enterQuestion(state, index, `q${index}`);
  return state;
}

describe('the learner curriculum', () => {
  it('a group passes by the share of samples at or above passReward', () => {
    assert.equal(passRate([1, 0, 0.5, 0.49], 0.5), 0.5);
    assert.equal(passRate([0.1, 0.1], 0.1), 1);
    assert.equal(passRate([], 0.5), 0);
  });

  it('draws the question with the fewest groups in flight, then the one drawn least recently', () => {
    let state = filled(3);
    const none = () => 0;
    const order: number[] = [];
    for (let draw = 0; draw < 6; draw += 1) {
      const picked = pickQuestion(state, none)!;
      order.push(picked.index);
      state = drawQuestion(state, picked.index);
    }
    assert.deepEqual(order, [0, 1, 2, 0, 1, 2], 'round robin when nothing is in flight');
    assert.deepEqual(
      state.active.map((question) => question.groups),
      [2, 2, 2],
    );
    // Question 0 (drawn least recently) has two groups in flight, question 1 none: 1 goes first.
    assert.equal(pickQuestion(state, (index) => (index === 0 ? 2 : index === 2 ? 1 : 0))!.index, 1);
    assert.equal(pickQuestion(emptyCurriculum(), none), undefined);
  });

  it('a question leaves as mastered after masteredAfter groups in a row at or above upper, and a miss resets the streak', () => {
    let state = filled(2);
    state = recordGroup(state, 0, [1, 1], settings).state;
    state = recordGroup(state, 0, [1, 0], settings).state; // 0.5: inside the band, streak reset
    assert.deepEqual(
      state.active.map((question) => [question.highStreak, question.lowStreak]),
      [
        [0, 0],
        [0, 0],
      ],
    );
    state = recordGroup(state, 0, [1, 1], settings).state;
    const left = recordGroup(state, 0, [1, 0.9], settings);
    assert.equal(left.departure, 'mastered');
    assert.deepEqual(curriculumCounts(left.state), { active: 1, entered: 2, mastered: 1, tooHard: 0 });
    // A late group of a question that has left changes nothing.
    assert.deepEqual(recordGroup(left.state, 0, [0, 0], settings), { state: left.state });
  });

  it('a question leaves as too hard after tooHardAfter groups in a row at or below lower', () => {
    let state = filled(1);
    for (let group = 0; group < 2; group += 1) {
      const outcome = recordGroup(state, 0, [0, 0.4], settings);
      assert.equal(outcome.departure, undefined);
      state = outcome.state;
    }
    const left = recordGroup(state, 0, [0.1, 0], settings);
    assert.equal(left.departure, 'tooHard');
    assert.deepEqual(curriculumCounts(left.state), { active: 0, entered: 1, mastered: 0, tooHard: 1 });
  });

  it("a group's question id is <id>/g<n>, clipped to the 200 characters a trajectory takes", () => {
    assert.equal(curriculumGroupQuestionId('q7', 3), 'q7/g3');
    const long = curriculumGroupQuestionId('x'.repeat(300), 12);
    assert.equal(long.length, 200);
    assert.ok(long.endsWith('x/g12'));
  });

  it('the learner input takes a curriculum with defaults, and refuses a band outside [0, 1] or lower ≥ upper naming the field', () => {
    const base = { runId: 'r', datasetKey: 'k', settings: { groupSize: 2, batchSize: 2 } };
    assert.deepEqual(parseLearnerInput({ ...base, curriculum: {} }).curriculum, {
      activeSize: 8,
      lower: 0,
      upper: 1,
      masteredAfter: 2,
      tooHardAfter: 2,
      passReward: 0.5,
    });
    assert.equal(parseLearnerInput(base).curriculum, undefined, 'no curriculum unless asked for');
    const refusals: [Record<string, unknown>, string, RegExp][] = [
      [{ lower: -0.1 }, 'curriculum.lower', /between 0 and 1/],
      [{ upper: 1.5 }, 'curriculum.upper', /between 0 and 1/],
      [{ lower: 0.6, upper: 0.4 }, 'curriculum.upper', /lower < upper/],
      [{ lower: 0.5, upper: 0.5 }, 'curriculum.upper', /lower < upper/],
      [{ lower: 1 }, 'curriculum.lower', /lower < upper/],
      [{ activeSize: 0 }, 'curriculum.activeSize', /integer between 1/],
      [{ masteredAfter: 0 }, 'curriculum.masteredAfter', /integer between 1/],
      [{ tooHardAfter: 1.5 }, 'curriculum.tooHardAfter', /integer between 1/],
      [{ passReward: 2 }, 'curriculum.passReward', /between 0 and 1/],
      [{ poolKey: 'x' }, 'curriculum.poolKey', /unknown field/],
    ];
    for (const [curriculum, field, message] of refusals)
      assert.throws(
        () => parseLearnerInput({ ...base, curriculum }),
        (error: unknown) =>
          LonghaulError.is(error) && error.code === 'LonghaulInvalidInput' && error.field === field && message.test(error.message),
        JSON.stringify(curriculum),
      );
    assert.throws(
      () => parseLearnerInput({ ...base, stepsPerExecution: 0 }),
      (error: unknown) => LonghaulError.is(error) && error.field === 'stepsPerExecution',
    );
  });
});
