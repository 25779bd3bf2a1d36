import assert from 'node:assert/strict';
import { test } from 'node:test';
import { progressBar } from './progress.js';

function plainStream() {
  const lines: string[] = [];
  return { lines, stream: { isTTY: false, write: (text: string | Uint8Array) => lines.push(String(text).trimEnd()) > 0 } };
}

test('without a terminal, progress writes a line per tenth and, between them, one a minute while the note changes', () => {
  const { lines, stream } = plainStream();
  let clock = 0;
  const bar = progressBar('training steps', 6, stream, { now: () => clock });
  bar.update(0, '3 in flight');
  assert.deepEqual(lines, ['training steps: 0/6 (0%) 0s 3 in flight']);
  clock = 30_000;
  bar.update(0, '9 in flight'); // within the minute: quiet
  clock = 61_000;
  bar.update(0, '12 in flight');
  clock = 200_000;
  bar.update(0, '12 in flight'); // the same note: nothing new to say
  clock = 230_000;
  bar.update(1, '4 in flight'); // a new tenth: at once
  bar.finish('v13');
  assert.deepEqual(lines, [
    'training steps: 0/6 (0%) 0s 3 in flight',
    'training steps: 0/6 (0%) 61s 12 in flight',
    'training steps: 1/6 (10%) 230s 4 in flight',
    'training steps: 6/6 (100%) 230s v13',
  ]);
});

test('on a terminal, progress redraws one line in place', () => {
  const written: string[] = [];
  const bar = progressBar('x', 2, { isTTY: true, write: (text: string | Uint8Array) => written.push(String(text)) > 0 }, { now: () => 0 });
  bar.update(1, 'half');
  bar.finish();
  assert.ok(written.every((text) => text.startsWith('\r') || text === '\n'));
  assert.match(written[0]!, /x \[#{14}\.{14}\] 1\/2 0s/);
  assert.equal(written.at(-1), '\n');
});

test('a run cut short finishes at its own count, not the total asked at the start', () => {
  const { lines, stream } = plainStream();
  const bar = progressBar('training steps', 6, stream, { now: () => 0 });
  bar.update(3, 'training');
  bar.finish('v24', 4); // setConfig lowered maxSteps to 4 while it ran
  assert.deepEqual(lines, ['training steps: 3/6 (50%) 0s training', 'training steps: 4/6 (60%) 0s v24']);
});
