import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { LonghaulError } from '../../workflows/contracts/errors.js';
import { ensureFreeSpace, freeBytes, markUsed, pruneVersionCache, versionFolderName } from './version-cache.js';

function folder(root: string, name: string, bytes: number, usedSecondsAgo: number): string {
  const dir = path.join(root, name);
  fs.mkdirSync(path.join(dir, 'sub'), { recursive: true });
  fs.writeFileSync(path.join(dir, 'sub', 'weights.bin'), Buffer.alloc(bytes));
  const when = new Date(Date.now() - usedSecondsAgo * 1000);
  fs.utimesSync(dir, when, when);
  return dir;
}

test('the version cache keeps its most recently used folders, protected ones, and live downloads', () => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'longhaul-cache-'));
  try {
    const dead = spawnSync('true').pid!;
    const oldest = folder(root, versionFolderName(1), 100, 500);
    folder(root, versionFolderName(2), 200, 400);
    const reused = folder(root, versionFolderName(3), 300, 300);
    folder(root, versionFolderName(4), 400, 200);
    folder(root, versionFolderName(5), 500, 100);
    folder(root, `${versionFolderName(6)}.partial-${dead}`, 60, 0);
    folder(root, `.${versionFolderName(7)}.tmp-${dead}`, 70, 0);
    folder(root, `${versionFolderName(8)}.partial-${process.pid}`, 80, 0);
    folder(root, 'notes', 10, 1000);
    markUsed(reused);
    const result = pruneVersionCache(root, { keep: 2, protect: [oldest] });
    assert.deepEqual(fs.readdirSync(root).sort(), [
      'notes',
      versionFolderName(1),
      versionFolderName(3),
      versionFolderName(5),
      `${versionFolderName(8)}.partial-${process.pid}`,
    ]);
    assert.equal(result.freedBytes, 200 + 400 + 60 + 70);
    assert.equal(result.removed.length, 4);
    assert.deepEqual(pruneVersionCache(path.join(root, 'absent'), { keep: 1 }), { removed: [], freedBytes: 0 });
    assert.throws(() => pruneVersionCache(root, { keep: 0 }), /keep: expects a whole number ≥ 1, got 0/);
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
});

test('a step that would not fit on the disk is refused, retryably, naming what is free and needed', () => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'longhaul-disk-'));
  try {
    assert.ok(freeBytes(root) > 0);
    ensureFreeSpace(root, 1, 'a small step');
    const needed = freeBytes(root) + 2 ** 50;
    assert.throws(
      () => ensureFreeSpace(root, needed, 'rl step 3 of run r (policy version 9)'),
      (error: unknown) => {
        assert.ok(LonghaulError.is(error));
        assert.equal(error.code, 'LonghaulUnavailable');
        assert.equal(error.retryable, true);
        assert.match(
          error.message,
          /^disk: .+ has \d+\.\d GiB free and rl step 3 of run r \(policy version 9\) needs about \d+\.\d GiB; free disk space there \(`longhaul model prune`/,
        );
        return true;
      },
    );
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
});
