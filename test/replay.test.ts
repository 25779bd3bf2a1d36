import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { Worker } from '@temporalio/worker';
import proto from '@temporalio/proto';
import { repoRoot, workflowBundlePath } from '../infra/paths.js';

// Histories recorded from real runs by test/fixtures/record-history.ts (binary protobuf: the SDK's JSON
// loader trips over two protobufjs copies in 1.24). Replaying them against today's
// workflow code fails if a change breaks determinism for workflows already in flight.
const folder = path.join(repoRoot, 'test', 'fixtures', 'histories');

function load(file: string) {
  return proto.temporal.api.history.v1.History.decode(fs.readFileSync(path.join(folder, file)));
}

for (const file of fs
  .readdirSync(folder)
  .filter((name) => name.endsWith('.pb'))
  .sort()) {
  test(`the recorded history ${file} replays without nondeterminism`, async () => {
    const history = load(file);
    await Worker.runReplayHistory({ workflowBundle: { codePath: workflowBundlePath }, replayName: file }, history);
    assert.ok(true);
  });
}

test('a history from changed workflow code is caught by replay', async () => {
  const history = load('trajectory-answered.pb');
  const scheduled = history.events!.find((event) => event.activityTaskScheduledEventAttributes)!;
  scheduled.activityTaskScheduledEventAttributes!.activityType!.name = 'someOtherActivity';
  await assert.rejects(
    Worker.runReplayHistory({ workflowBundle: { codePath: workflowBundlePath }, replayName: 'tampered' }, history),
    /[Nn]ondeterminism|DeterminismViolation/,
  );
});
