import { test } from 'node:test';
import assert from 'node:assert/strict';
import { analyseTrajectory, behaviourByVersion } from './behaviour.js';
import type { ToolCallView, TrajectoryView, TurnView } from './trajectory-view.js';

const call = (tool: string, observation: string, documentIds: string[] = []): ToolCallView => ({
  tool,
  input: { query: 'q' },
  ok: true,
  invalid: false,
  observation,
  documentIds,
  latencyMs: 1,
  cacheHit: false,
});

const turn = (index: number, text: string, toolCalls: ToolCallView[] = [], answer?: string): TurnView => ({
  turn: index,
  policyVersion: 0,
  tokenVersions: [0],
  text,
  action: answer === undefined ? 'tools' : 'answer',
  ...(answer === undefined ? {} : { answer }),
  generatedTokens: 10,
  interruptions: 0,
  toolCalls,
});

function trajectory(
  id: string,
  turns: TurnView[],
  options: { answer?: string | null; version?: number; questionId?: string; reward?: number } = {},
): TrajectoryView {
  return {
    trajectoryId: id,
    runId: 'run',
    dataset: 'set',
    questionId: options.questionId ?? id,
    question: 'What is the capital of Peru?',
    goldAnswers: ['Lima'],
    answer: options.answer === undefined ? 'Lima' : options.answer,
    reward: options.reward ?? 1,
    rewardMetric: 'em',
    rewardParts: {},
    stopReason: 'answered',
    versionsUsed: [options.version ?? 0],
    generatedTokens: 30,
    turns,
  };
}

test('an answer found in an observation and then searched again is verified', () => {
  const behaviour = analyseTrajectory(
    trajectory('t1', [
      turn(0, '<search>capital of Peru</search>', [call('search', 'Lima is the capital of Peru.', ['doc-1', 'doc-2'])]),
      turn(1, '<search>Lima Peru capital confirm</search>', [call('search', 'The capital, Lima, lies on the coast.', ['doc-2', 'doc-3'])]),
      turn(2, '<answer>Lima</answer>', [], 'Lima'),
    ]),
  );
  assert.equal(behaviour.verifiedBySearch, true);
  assert.equal(behaviour.answerFirstSeenTurn, 0);
  assert.equal(behaviour.distinctDocuments, 3);
  assert.equal(behaviour.toolCalls, 2);
  assert.equal(behaviour.searches, 2);
});

test('an answer given right after the search that found it is not verified; one never seen is unsupported', () => {
  const found = analyseTrajectory(
    trajectory('t2', [
      turn(0, '<search>capital of Peru</search>', [call('search', 'Lima is the capital.', ['doc-1'])]),
      turn(1, '<access>doc-1</access>', [call('access', 'Lima, capital of Peru', ['doc-1'])]),
      turn(2, '<answer>Lima</answer>', [], 'Lima'),
    ]),
  );
  assert.equal(found.verifiedBySearch, false, 'a later access is not a further search');
  assert.equal(found.answerFirstSeenTurn, 0);
  assert.equal(found.distinctDocuments, 1);
  const unsupported = analyseTrajectory(
    trajectory('t3', [
      turn(0, '<search>x</search>', [call('search', 'nothing useful')]),
      turn(1, '<search>y</search>', [call('search', 'still nothing')]),
      turn(2, '<answer>Lima</answer>', [], 'Lima'),
    ]),
  );
  assert.equal(unsupported.verifiedBySearch, false);
  assert.equal(unsupported.answerFirstSeenTurn, null);
  const unanswered = analyseTrajectory(trajectory('t4', [turn(0, '<search>x</search>', [call('search', 'Lima')])], { answer: null }));
  assert.equal(unanswered.verifiedBySearch, null);
  assert.equal(unanswered.answered, false);
});

test('a word inside another word is no mention of the answer', () => {
  const behaviour = analyseTrajectory(
    trajectory('t5', [
      turn(0, '<search>a</search>', [call('search', 'Limassol is in Cyprus.')]),
      turn(1, '<search>b</search>', [call('search', 'no')]),
      turn(2, '<answer>Lima</answer>', [], 'Lima'),
    ]),
  );
  assert.equal(behaviour.answerFirstSeenTurn, null);
});

test('uncertainty and conflicting evidence are read from the agent text only, never from observations', () => {
  const behaviour = analyseTrajectory(
    trajectory('t6', [
      turn(0, '<think>I am not sure which city it is.</think><search>capital of Peru</search>', [
        call('search', 'Sources conflict: some say Cusco, maybe.'),
      ]),
      turn(1, '<think>The two documents contradict each other.</think><answer>Lima</answer>', [], 'Lima'),
    ]),
  );
  assert.deepEqual(behaviour.uncertainty, ['not sure']);
  assert.deepEqual(behaviour.conflict, ['contradict']);
  const calm = analyseTrajectory(
    trajectory('t7', [
      turn(0, '<search>capital</search>', [call('search', 'Some sources conflict, perhaps.')]),
      turn(1, '<answer>Lima</answer>', [], 'Lima'),
    ]),
  );
  assert.deepEqual(calm.uncertainty, []);
  assert.deepEqual(calm.conflict, []);
});

test('per version: shares over answered trajectories, means per trajectory and per question', () => {
  const verified = [
    turn(0, 's', [call('search', 'Lima', ['d1'])]),
    turn(1, 's', [call('search', 'Lima again', ['d2'])]),
    turn(2, 'Lima', [], 'Lima'),
  ];
  const direct = [turn(0, 'I think so', [call('search', 'Lima', ['d1'])]), turn(1, 'Lima', [], 'Lima')];
  const rows = [
    analyseTrajectory(trajectory('a', verified, { version: 1, questionId: 'q1' })),
    analyseTrajectory(trajectory('b', direct, { version: 1, questionId: 'q1', reward: 0 })),
    analyseTrajectory(trajectory('c', direct, { version: 1, questionId: 'q2', answer: null, reward: 0 })),
    analyseTrajectory(trajectory('d', direct, { version: 0, questionId: 'q1' })),
  ];
  const [v0, v1] = behaviourByVersion(rows);
  assert.equal(v0!.version, 0);
  assert.equal(v0!.trajectories, 1);
  assert.equal(v1!.version, 1);
  assert.equal(v1!.trajectories, 3);
  assert.equal(v1!.answered, 2);
  assert.equal(v1!.verifiedShare, 0.5);
  assert.equal(v1!.uncertaintyShare, 2 / 3);
  assert.equal(v1!.conflictShare, 0);
  assert.equal(v1!.meanToolCalls, (2 + 1 + 1) / 3);
  assert.equal(v1!.meanToolCallsPerQuestion, ((2 + 1) / 2 + 1) / 2);
  assert.equal(v1!.meanDistinctDocuments, (2 + 1 + 1) / 3);
  assert.equal(v1!.meanReward, 1 / 3);
});

test('where a right answer is lost: gold seen in an observation, stated in the reasoning, stated but not answered', () => {
  const saw = call('access', 'Peru. Its capital is Lima. Its people are called Peruvian.');
  const right = analyseTrajectory(
    trajectory('right', [
      turn(0, '<search>Peru</search>', [saw]),
      turn(1, '<think>Its capital is Lima.</think>\n<answer>Lima</answer>', [], 'Lima'),
    ]),
  );
  assert.deepEqual([right.goldSeen, right.goldStated, right.correct], [true, true, true]);
  // The reasoning names the gold answer, the answer action gives another: the answer disagrees with its own reasoning.
  const missed = analyseTrajectory(
    trajectory(
      'missed',
      [turn(0, '<search>Peru</search>', [saw]), turn(1, '<think>Its capital is Lima.</think>\n<answer>Peruvian</answer>', [], 'Peruvian')],
      { answer: 'Peruvian', reward: 0 },
    ),
  );
  assert.deepEqual([missed.goldSeen, missed.goldStated, missed.correct], [true, true, false]);
  // The answer action alone is not reasoning: giving "Lima" without saying it first is not "stated".
  const bare = analyseTrajectory(
    trajectory('bare', [turn(0, '<search>Peru</search>', [saw]), turn(1, '<answer>Lima</answer>', [], 'Lima')]),
  );
  assert.deepEqual([bare.goldSeen, bare.goldStated, bare.correct], [true, false, true]);
  const json = analyseTrajectory(
    trajectory('json', [turn(0, '<tool_call>{"name": "answer", "arguments": {"answer": "Lima"}}</tool_call>', [], 'Lima')]),
  );
  assert.equal(json.goldStated, false, "the JSON protocol's answer call is the answer action too");
  // Never found: nothing seen, nothing stated; "Limassol" is not "Lima" (word boundaries).
  const lost = analyseTrajectory(
    trajectory(
      'lost',
      [
        turn(0, '<search>Peru</search>', [call('search', 'Limassol is in Cyprus.')]),
        turn(1, '<think>Limassol.</think>\n<answer>Limassol</answer>', [], 'Limassol'),
      ],
      {
        answer: 'Limassol',
        reward: 0,
      },
    ),
  );
  assert.deepEqual([lost.goldSeen, lost.goldStated, lost.correct], [false, false, false]);
  const [row] = behaviourByVersion([right, missed, bare, lost]);
  assert.equal(row!.goldSeenShare, 3 / 4);
  assert.equal(row!.goldStatedShare, 2 / 4);
  assert.equal(row!.statedButMissedShare, 1 / 4);
});
