import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { mayAdmitGroup, stalenessCapacity, type AdmissionSettings, type AdmissionState } from './learner-admission.js';

const settings: AdmissionSettings = { groupSize: 4, batchSize: 16, eta: 2, maxInflight: 64 };
const fresh: AdmissionState = {
  started: 0,
  dropped: 0,
  inflight: 0,
  ready: 0,
  version: 0,
  startVersion: 0,
  training: false,
  paused: false,
  questionsLeft: true,
};

describe('the learner admission rule (AReaL staleness bound)', () => {
  it('admits up to (v − v0 + η + 1) · B trajectories and no more', () => {
    assert.equal(stalenessCapacity(settings, 0, 0), 48);
    // 44 started and 4 in flight: one more group reaches the bound exactly.
    assert.equal(mayAdmitGroup({ ...fresh, started: 44, inflight: 4 }, settings), true);
    assert.equal(mayAdmitGroup({ ...fresh, started: 48, inflight: 4 }, settings), false);
  });

  it('each trained version opens B more slots, counted from the start version', () => {
    const atVersion = { ...fresh, started: 48, inflight: 4 };
    assert.equal(mayAdmitGroup({ ...atVersion, version: 1 }, settings), true);
    assert.equal(
      mayAdmitGroup({ ...atVersion, version: 7, startVersion: 7 }, settings),
      false,
      'a run forked at v7 starts its count there',
    );
    assert.equal(mayAdmitGroup({ ...atVersion, version: 8, startVersion: 7 }, settings), true);
  });

  it('dropped trajectories do not count against the bound', () => {
    assert.equal(mayAdmitGroup({ ...fresh, started: 52, dropped: 8, inflight: 4 }, settings), true);
    assert.equal(mayAdmitGroup({ ...fresh, started: 52, dropped: 3, inflight: 4 }, settings), false);
  });

  it('η = 0 is synchronous-equivalent: one batch per version', () => {
    const strict = { ...settings, eta: 0 };
    assert.equal(mayAdmitGroup({ ...fresh, started: 12, inflight: 12 }, strict), true);
    assert.equal(mayAdmitGroup({ ...fresh, started: 16, inflight: 12 }, strict), false);
  });

  it('never exceeds maxInflight, even when the bound would allow it', () => {
    assert.equal(mayAdmitGroup({ ...fresh, started: 4, inflight: 62 }, settings), false);
    assert.equal(mayAdmitGroup({ ...fresh, started: 4, inflight: 60 }, settings), true);
  });

  it('pauses and an exhausted dataset stop admission', () => {
    assert.equal(mayAdmitGroup({ ...fresh, paused: true }, settings), false);
    assert.equal(mayAdmitGroup({ ...fresh, questionsLeft: false }, settings), false);
  });

  it('waives the bound when it would stall the run: nothing in flight, nothing training, too little ready', () => {
    const stalled = { ...fresh, started: 96, inflight: 0, ready: 8 };
    assert.equal(mayAdmitGroup(stalled, settings), true);
    assert.equal(mayAdmitGroup({ ...stalled, training: true }, settings), false, 'a step in progress will open slots');
    assert.equal(mayAdmitGroup({ ...stalled, ready: 16 }, settings), false, 'enough is ready to train');
    assert.equal(mayAdmitGroup({ ...stalled, inflight: 4 }, settings), false, 'reports still to come');
  });
});
