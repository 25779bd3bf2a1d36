import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { changedSinceStart, runDir } from './processes.js';

test('changedSinceStart: a file written after the process was started (its pid file) counts, one before does not', () => {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'longhaul-processes-'));
  try {
    const stamp = path.join(home, 'build-stamp');
    assert.equal(changedSinceStart(home, 'worker-agent', stamp), false, 'neither exists');
    fs.mkdirSync(runDir(home), { recursive: true });
    const pid = path.join(runDir(home), 'worker-agent.pid');
    fs.writeFileSync(pid, '123 456\n');
    assert.equal(changedSinceStart(home, 'worker-agent', stamp), false, 'no build stamp');
    fs.writeFileSync(stamp, '');
    const started = new Date('2026-12-03T18:00:00Z');
    fs.utimesSync(pid, started, started);
    fs.utimesSync(stamp, new Date(started.getTime() - 60_000), new Date(started.getTime() - 60_000));
    assert.equal(changedSinceStart(home, 'worker-agent', stamp), false, 'built before the worker started');
    fs.utimesSync(stamp, new Date(started.getTime() + 60_000), new Date(started.getTime() + 60_000));
    assert.equal(changedSinceStart(home, 'worker-agent', stamp), true, 'built after the worker started');
    assert.equal(changedSinceStart(home, 'worker-tools', stamp), false, 'another worker without a pid file');
  } finally {
    fs.rmSync(home, { recursive: true, force: true });
  }
});
