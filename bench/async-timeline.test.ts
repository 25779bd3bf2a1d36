import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { timelineOf, type RawEvent } from './async-timeline.js';

/** A learner history in miniature: events at whole seconds, ids in order. */
function history(entries: readonly (readonly [number, Omit<RawEvent, 'eventId' | 'eventTime'>])[]): RawEvent[] {
  let eventId = 0;
  return entries.map(([second, event]) => {
    eventId = event.workflowExecutionStartedEventAttributes ? 1 : eventId + 1; // each execution counts from 1
    return { ...event, eventId, eventTime: { seconds: 1_000 + second, nanos: 0 } };
  });
}
const start = { workflowExecutionStartedEventAttributes: {} };
const child = (workflowId: string) => ({ startChildWorkflowExecutionInitiatedEventAttributes: { workflowId } });
const done = (workflowId: string) => ({ childWorkflowExecutionCompletedEventAttributes: { workflowExecution: { workflowId } } });
const train = { activityTaskScheduledEventAttributes: { activityType: { name: 'trainStep' } } };
const trained = (scheduledEventId: number) => ({ activityTaskCompletedEventAttributes: { scheduledEventId } });
const options = { batchSize: 4, groupSize: 2, eta: 1 };

describe('the learner timeline of bench async', () => {
  it('splits each trainer wait into time with and without a settled batch', () => {
    const events = history([
      [0, start],
      [0, child('run-q0-s0')],
      [0, child('run-q0-s1')],
      [0, child('run-q1-s0')],
      [0, child('run-q1-s1')],
      [1, child('run-q2-s0')],
      [1, child('run-q2-s1')],
      [1, child('run-q3-s0')],
      [1, child('run-q3-s1')],
      [4, done('run-q0-s0')],
      [5, done('run-q0-s1')],
      [6, done('run-q1-s0')],
      [6, done('run-q1-s1')], // two groups settled at 6 s: a batch of 4
      [9, train], // event 14: the first step waited 9 s, 3 of them with the batch there
      [19, trained(14)],
      [20, done('run-q2-s0')],
      [20, done('run-q2-s1')],
      [25, done('run-q3-s0')],
      [27, done('run-q3-s1')], // the second batch settled at 27 s
      [28, train], // event 20: 9 s after the first step, 1 of them with a batch
      [38, trained(20)],
    ]);
    const timeline = timelineOf(events, options);
    assert.equal(timeline.firstStepSeconds, 9);
    assert.equal(timeline.firstGroupSettledSeconds, 5);
    assert.equal(timeline.trainSeconds, 20);
    assert.equal(timeline.betweenStepsSeconds, 9);
    assert.equal(timeline.betweenStepsBatchReadySeconds, 1);
    assert.equal(timeline.childrenStarted, 8);
    assert.equal(timeline.childrenFinished, 8);
    assert.deepEqual(timeline.longestWaits[0], { step: 0, fromSeconds: 0, seconds: 9, batchReadySeconds: 3 });
    assert.equal(timeline.inflightMax, 4, 'four children still ran when the first step began');
  });

  it('does not count a group that outlived η versions as ready, nor mix up event ids across continue-as-new', () => {
    const events = history([
      [0, start],
      [0, child('run-q0-s0')],
      [0, child('run-q0-s1')],
      [0, child('run-q1-s0')],
      [0, child('run-q1-s1')],
      [1, done('run-q0-s0')],
      [1, done('run-q0-s1')],
      [1, done('run-q1-s0')],
      [1, done('run-q1-s1')],
      [2, train], // event 10
      [12, trained(10)], // version 1
      [12, child('run-q2-s0')],
      [12, child('run-q2-s1')],
      [12, child('run-q3-s0')],
      [12, child('run-q3-s1')],
      [13, train], // event 16: no batch, but the step ran (a short claim)
      [23, trained(16)], // version 2: groups started at version 1 are still within η = 1
      // continue-as-new: ids start again; event 10 of this execution is not the old trainStep
      [23, start],
      [30, done('run-q2-s0')],
      [30, done('run-q2-s1')],
      [31, done('run-q3-s0')],
      [31, done('run-q3-s1')],
      [32, { activityTaskScheduledEventAttributes: { activityType: { name: 'claimBatch' } } }],
      [33, train], // event 7 of this execution
      [43, trained(7)],
      [43, trained(16)], // not a trainStep of this execution (its event 16 is none): ignored
    ]);
    const timeline = timelineOf(events, options);
    assert.equal(timeline.trainSeconds, 30);
    assert.deepEqual(
      timeline.longestWaits.find((wait) => wait.step === 2),
      { step: 2, fromSeconds: 23, seconds: 10, batchReadySeconds: 2 },
    );
  });
});
