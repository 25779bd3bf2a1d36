import assert from 'node:assert/strict';
import { test } from 'node:test';
import { trainPhasesLine } from './train.command.js';

test("a step's phases read as one line, the engine's own inside its total", () => {
  assert.equal(
    trainPhasesLine({ stageSeconds: 1.23, engineSeconds: 98, proximalSeconds: 46.5, updateSeconds: 24.31, saveSeconds: 30.8 }, 12.5),
    'stage 1.2 s, engine 98.0 s (proximal 46.5, update 24.3, save 30.8), sync 12.5 s',
  );
  assert.equal(trainPhasesLine({ proximalSeconds: 2, updateSeconds: 1 }), 'proximal 2.0, update 1.0');
  assert.equal(trainPhasesLine({}, 3), 'sync 3.0 s');
  assert.equal(
    trainPhasesLine({}, 123, { loading: 0.001, waiting: 0.2, files: 20.5, open: 102 }),
    'sync 123.0 s (waiting 0.2, files 20.5, open 102.0)',
  );
});
