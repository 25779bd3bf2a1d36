/**
 * `longhaul eval` refuses bad input before anything starts: exit 2 naming the flag, and no
 * LONGHAUL_HOME left behind. The stack's ports point at nothing, so a command that tried to start a
 * service would not exit 2 at once.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { repoRoot } from '../infra/paths.js';

const run = promisify(execFile);
const cli = path.join(repoRoot, 'dist', 'cli', 'main.js');
const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'longhaul-eval-cli-'));
const home = path.join(scratch, 'home-that-does-not-exist');
const dataRoot = path.join(scratch, 'data');
fs.mkdirSync(path.join(dataRoot, 'sets'), { recursive: true });
const questions = path.join(dataRoot, 'sets', 'capitals.jsonl');
fs.writeFileSync(questions, `${JSON.stringify({ id: 'q1', question: 'What is the capital of Peru?', answers: ['Lima'] })}\n`);
after(() => fs.rmSync(scratch, { recursive: true, force: true }));

async function longhaul(args: string[]): Promise<{ code: number; stderr: string }> {
  const env = {
    ...process.env,
    LONGHAUL_HOME: home,
    LONGHAUL_DATA_ROOT: dataRoot,
    LONGHAUL_TEMPORAL_PORT: '1',
    LONGHAUL_PG_PORT: '2',
    LONGHAUL_S3_PORT: '3',
  };
  try {
    const { stderr } = await run(process.execPath, [cli, 'eval', ...args], { env, timeout: 60_000 });
    return { code: 0, stderr };
  } catch (error) {
    const failure = error as { code: number; stderr: string };
    return { code: failure.code, stderr: failure.stderr };
  }
}

const cases: { readonly what: string; readonly args: string[]; readonly message: RegExp }[] = [
  {
    what: 'an unknown dataset',
    args: ['--dataset', 'nowhere'],
    message: /^longhaul: --dataset: "nowhere" is no file and no set under the data root; sets: sets\/capitals/,
  },
  {
    what: 'an unknown layout',
    args: ['--dataset', 'capitals', '--layout', 'weird'],
    message: /^longhaul: --layout: .*unknown layout "weird"/,
  },
  { what: 'k < 1', args: ['--dataset', questions, '-k', '0'], message: /^longhaul: --k expects an integer between 1 and 256, got "0"/ },
  { what: 'a bad limit', args: ['--dataset', questions, '--limit', '0'], message: /^longhaul: --limit expects an integer/ },
  { what: 'a bad version', args: ['--dataset', questions, '--version', 'newest'], message: /^longhaul: --version expects an integer/ },
  {
    what: 'a bad result id',
    args: ['--dataset', questions, '--result-id', 'a/b'],
    message: /^longhaul: --result-id \(resultId\): use letters/,
  },
  {
    what: '--reproduce with other settings',
    args: ['--reproduce', 'r1', '-k', '3'],
    message: /^longhaul: --reproduce runs the original's settings; leave out --k/,
  },
  {
    what: 'compare with one result id',
    args: ['compare', 'eval-a'],
    message: /^longhaul: compare needs two result ids, BEFORE and AFTER \(got 1\)/,
  },
  {
    what: 'compare with a bad seed',
    args: ['compare', 'eval-a', 'eval-b', '--seed', 'x'],
    message: /^longhaul: --seed expects an integer/,
  },
];

for (const { what, args, message } of cases) {
  test(`eval with ${what} exits 2 naming the flag, and starts nothing`, { timeout: 90_000 }, async () => {
    const result = await longhaul(args);
    assert.equal(result.code, 2, result.stderr);
    assert.match(result.stderr.trim(), message);
    assert.equal(fs.existsSync(home), false, `${home} was created: something started`);
  });
}
