import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  advantageByOutcome,
  advantageSummary,
  outcomeOf,
  questionOrigins,
  rlSignal,
  signalGroupId,
  signalSummary,
  type QuestionOrigin,
} from './rl-signal.js';
import { groupAdvantages } from '../../activities/reward/advantage.js';
import { curriculumBaseQuestionId, curriculumGroupQuestionId } from '../../workflows/learner-curriculum.js';

const sample = (trajectoryId: string, questionId: string, reward: number, em: number) => ({ trajectoryId, questionId, reward, em });

test('groups are counted per question set and hop count: right answers, groups mixing right and wrong, equal rewards', () => {
  const origins = new Map<string, QuestionOrigin>([
    ['w1', { source: 'warm-start', hops: null, goldTurns: 5 }],
    ['w2', { source: 'warm-start', hops: null, goldTurns: 7 }],
    ['c1', { source: 'candidate', hops: null, goldTurns: 5 }],
  ]);
  const rows = rlSignal(
    [
      // w2, two-hop: one right of three → mixed, rewards differ.
      sample('run-q0-s0', 'w2', 1, 1),
      sample('run-q0-s1', 'w2', 0.1, 0),
      sample('run-q0-s2', 'w2', 0.05, 0),
      // c1: all wrong with the same partial reward → equal, not mixed.
      sample('run-q1-s0', 'c1', 0.1, 0),
      sample('run-q1-s1', 'c1', 0.1, 0),
      // w1 twice (two groups): all right (equal), then all wrong with different partial credit (neither).
      sample('run-q2-s0', 'w1', 1, 1),
      sample('run-q2-s1', 'w1', 1, 1),
      sample('run-q5-s0', 'w1', 0.3, 0),
      sample('run-q5-s1', 'w1', 0.1, 0),
      // A question no set names.
      sample('run-q6-s0', 'x', 0, 0),
    ],
    origins,
  );
  assert.deepEqual(rows, [
    { source: 'warm-start', hops: null, goldTurns: 5, groups: 2, samples: 4, right: 2, mixed: 0, equalReward: 1 },
    { source: 'warm-start', hops: null, goldTurns: 7, groups: 1, samples: 3, right: 1, mixed: 1, equalReward: 0 },
    { source: 'candidate', hops: null, goldTurns: 5, groups: 1, samples: 2, right: 0, mixed: 0, equalReward: 1 },
    { source: 'unknown', hops: null, goldTurns: null, groups: 1, samples: 1, right: 0, mixed: 0, equalReward: 1 },
  ]);
  assert.equal(
    signalSummary(rows),
    'RL signal: 1 of 5 groups mixed right and wrong answers (warm-start 1 of 3 · candidate 0 of 1 · unknown 0 of 1); 3 had equal rewards (zero advantage)',
  );
  assert.equal(signalSummary([]), null);
});

test("a curriculum group's question id (<id>/g<n>, clipped when long) finds its question; the group is the id without -s<j>", () => {
  const long = `q-${'x'.repeat(220)}`;
  const origins = new Map<string, QuestionOrigin>([
    ['short', { source: 'candidate', hops: 1, goldTurns: null }],
    [long, { source: 'warm-start', hops: 2, goldTurns: 7 }],
  ]);
  assert.equal(curriculumBaseQuestionId(curriculumGroupQuestionId('short', 3)), 'short');
  assert.equal(curriculumBaseQuestionId('plain'), 'plain');
  assert.equal(signalGroupId('run-q4-g2-s11'), 'run-q4-g2');
  const rows = rlSignal(
    [
      sample('run-q0-g1-s0', curriculumGroupQuestionId('short', 1), 1, 1),
      sample('run-q0-g1-s1', curriculumGroupQuestionId('short', 1), 0, 0),
      sample('run-q1-g12-s0', curriculumGroupQuestionId(long, 12), 0, 0),
    ],
    origins,
  );
  assert.deepEqual(
    rows.map((row) => [row.source, row.hops, row.groups, row.mixed]),
    [
      ['warm-start', 2, 1, 0],
      ['candidate', 1, 1, 1],
    ],
  );
});

test('question origins read a JSONL set: hop count and gold path length where a row has them', () => {
  const text = [
    JSON.stringify({ id: 'a', question: 'q', answers: ['x'], hops: 2, goldTurns: [{}, {}, {}] }),
    '',
    JSON.stringify({ id: 'b', question: 'q', answers: ['y'] }),
  ].join('\n');
  assert.deepEqual(
    [...questionOrigins(text, 'candidate')],
    [
      ['a', { source: 'candidate', hops: 2, goldTurns: 3 }],
      ['b', { source: 'candidate', hops: null, goldTurns: null }],
    ],
  );
});

test('where the advantage went: each sample classed by its outcome, its group-normalised advantage summed per class', () => {
  const outcome = (em: number, f1: number, answered: boolean, stopReason: string, reward: number, trajectoryId = 'r-q0-s0') => ({
    trajectoryId,
    questionId: 'q',
    reward,
    em,
    f1,
    answered,
    stopReason,
  });
  assert.equal(outcomeOf(outcome(1, 1, true, 'answered', 1)), 'right');
  assert.equal(outcomeOf(outcome(0, 0.5, true, 'answered', 0.5)), 'partly right');
  assert.equal(outcomeOf(outcome(0, 0, true, 'answered', 0)), 'wrong answer');
  assert.equal(outcomeOf(outcome(0, 0, false, 'repeated', 0)), 'no answer: repeated a call');
  assert.equal(outcomeOf(outcome(0, 0, false, 'max_turns', 0)), 'no answer: out of turns');
  assert.equal(outcomeOf(outcome(0, 0, false, 'invalid', 0)), 'no answer: other');
  // Session 39's shape under the old format credit: a wrong answer (0.1) beside repeats (0.05) gains advantage.
  const oldRule = [
    outcome(0, 0, true, 'answered', 0.1, 'r-q0-s0'),
    outcome(0, 0, true, 'answered', 0.1, 'r-q0-s1'),
    outcome(0, 0, false, 'repeated', 0.05, 'r-q0-s2'),
    outcome(0, 0, false, 'max_turns', 0.05, 'r-q0-s3'),
    // A second group, all equal: no advantage anywhere.
    outcome(0, 0, true, 'answered', 0.1, 'r-q1-s0'),
    outcome(0, 0, true, 'answered', 0.1, 'r-q1-s1'),
  ];
  const rows = advantageByOutcome(oldRule);
  const expected = groupAdvantages([0.1, 0.1, 0.05, 0.05]);
  assert.deepEqual(
    rows.map((row) => row.outcome),
    ['wrong answer', 'no answer: repeated a call', 'no answer: out of turns'],
  );
  assert.equal(rows[0]!.samples, 4);
  assert.ok(Math.abs(rows[0]!.advantage - (expected[0]! + expected[1]!)) < 1e-6 && rows[0]!.advantage > 1.9, `${rows[0]!.advantage}`);
  assert.ok(Math.abs(rows[1]!.advantage - expected[2]!) < 1e-6 && rows[1]!.advantage < -0.9);
  assert.ok(Math.abs(rows[0]!.meanReward - 0.1) < 1e-12);
  assert.match(
    advantageSummary(rows) ?? '',
    /^advantage by outcome: wrong answer \+2\.0 \(4\) · .*; warning: wrong answer gained advantage/,
  );
  // The same outcomes under "when-scored": every reward 0, so nothing gains and there is no warning.
  const gated = advantageByOutcome(oldRule.map((sample) => ({ ...sample, reward: 0 })));
  assert.ok(gated.every((row) => Math.abs(row.advantage) < 1e-9));
  assert.doesNotMatch(advantageSummary(gated) ?? '', /warning/);
  assert.equal(advantageSummary([]), null);
  assert.deepEqual(groupAdvantages([]), []);
  assert.deepEqual(groupAdvantages([0.3, 0.3]), [0, 0]);
});
