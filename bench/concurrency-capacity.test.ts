import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { inflightCapacity, measuredConcurrency } from './agent-benchmarks.js';

const MiB = 1024 * 1024;

describe('bench concurrency: how many trajectories this machine can hold in flight', () => {
  it('gives the agent worker half of the free memory: its base, then its measured share per trajectory', () => {
    const { workerBaseMb, workerMbPerTrajectory } = measuredConcurrency;
    const free = 2 * (workerBaseMb + 1000 * workerMbPerTrajectory) * MiB;
    assert.equal(inflightCapacity(free), 1000);
    assert.equal(inflightCapacity(free - 2 * workerMbPerTrajectory * MiB), 999);
  });

  it('holds nothing when even the base does not fit, never a negative count', () => {
    assert.equal(inflightCapacity(0), 0);
    assert.equal(inflightCapacity(2 * measuredConcurrency.workerBaseMb * MiB - 1), 0);
  });
});
