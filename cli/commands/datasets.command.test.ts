import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { repoRoot } from '../../infra/paths.js';
import { config } from '../../infra/config.js';

const run = promisify(execFile);
const cli = path.join(repoRoot, 'dist', 'cli', 'main.js');

async function longhaul(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [cli, 'datasets', ...args]);
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failure = error as { code: number; stdout: string; stderr: string };
    return { code: failure.code, stdout: failure.stdout, stderr: failure.stderr };
  }
}

test('datasets inspect prints the layout, count, skipped rows with line numbers and sha256; --strict refuses with exit 2', async () => {
  const bamboogle = await longhaul('inspect', path.join(config().dataRoot, 'r1searcher_eval_set', 'bamboogle.jsonl'), '--json');
  assert.equal(bamboogle.code, 0, bamboogle.stderr);
  assert.deepEqual(JSON.parse(bamboogle.stdout), {
    path: path.join(config().dataRoot, 'r1searcher_eval_set', 'bamboogle.jsonl'),
    name: 'bamboogle',
    layout: 'r1-searcher',
    questions: 125,
    skipped: [],
    sha256: '1c551e2f4c3387fd97a1cf711737258df5ffd4ea86996f1b2ba63a861cb7af29',
  });
  const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'longhaul-datasets-cli-'));
  try {
    const file = path.join(folder, 'rows.jsonl');
    fs.writeFileSync(file, '{"id":"1","question":"q?","answers":["a"]}\n{"id":"2","question":"r?","answers":"b"}\n');
    const text = await longhaul('inspect', file);
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, /layout {4}longhaul\n {2}questions 1\n {2}skipped {3}1\n/);
    assert.match(text.stdout, /line 2: answers: expected a list of strings\n/);
    const strict = await longhaul('inspect', file, '--strict');
    assert.equal(strict.code, 2);
    assert.match(strict.stderr, /rows\.jsonl:2: answers: .*without --strict/);
    const forced = await longhaul('inspect', file, '--layout', 'fanoutqa');
    assert.equal(forced.code, 2);
    assert.match(forced.stderr, /layout fanoutqa is a JSON array, but the file is JSON Lines/);
  } finally {
    fs.rmSync(folder, { recursive: true, force: true });
  }
});

test('datasets: bad flags, an unknown layout and a missing file exit 2 naming the problem; --help explains', async () => {
  const help = await longhaul('--help');
  assert.equal(help.code, 0);
  assert.match(help.stdout, /longhaul datasets inspect FILE \[--layout L\] \[--strict\] \[--json\]/);
  assert.match(help.stdout, /simpledeepsearcher/);
  for (const [args, message] of [
    [['inspect', 'x.jsonl', '--bogus'], /Unknown option '--bogus'/],
    [['inspect', 'x.jsonl', '--layout', 'squad'], /--layout: unknown layout "squad"; known layouts: longhaul, asearcher/],
    [['inspect'], /inspect expects one FILE, got 0/],
    [['frobnicate'], /expected inspect or list, got "frobnicate"/],
    [['inspect', '/nonexistent/q.jsonl'], /\/nonexistent\/q\.jsonl: no such file/],
  ] as const) {
    const result = await longhaul(...args);
    assert.equal(result.code, 2, `${args.join(' ')}: ${result.stderr}`);
    assert.match(result.stderr, message);
  }
  const list = await longhaul('list', '--json');
  assert.equal(list.code, 0, list.stderr);
  assert.equal(JSON.parse(list.stdout).sets.length, 13);
});
