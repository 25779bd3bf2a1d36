/**
 * `longhaul bench transfer` without a stack: the mode patterns (pure), and
 * bad flags exit 2 naming the flag before anything starts (the stack's ports point at nothing, so a
 * command that tried to start a service would not exit 2 at once). The run itself:
 * test/browser-transfer-benchmark.test.ts.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { after, describe, it } from 'node:test';
import { transferModes } from '../bench/transfer-benchmark.js';
import { repoRoot } from '../infra/paths.js';

describe('the transfer modes', () => {
  it('builds freeze patterns for the last N layers and refuses more layers than the model has', () => {
    const [freeze, lora, full] = transferModes(30, 4, 16);
    assert.deepEqual(freeze!.trainable, {
      mode: 'freeze',
      trainPatterns: ['^model\\.layers\\.(26|27|28|29)\\.', '^model\\.norm\\.weight$'],
    });
    assert.equal((lora!.trainable as { rank: number }).rank, 16);
    assert.deepEqual(full!.trainable, { mode: 'full' });
    assert.throws(() => transferModes(2, 3, 4), /freezeLayers: expected 1\.\.2/);
  });
});

describe('longhaul bench transfer refuses bad flags before anything starts', () => {
  const run = promisify(execFile);
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'longhaul-transfer-cli-'));
  const home = path.join(scratch, 'home-that-does-not-exist');
  const noGold = path.join(scratch, 'no-gold.jsonl');
  fs.writeFileSync(noGold, `${JSON.stringify({ id: 'q1', question: 'What is the capital of Peru?', answers: ['Lima'] })}\n`);
  after(() => fs.rmSync(scratch, { recursive: true, force: true }));
  const cases: { readonly args: string[]; readonly message: RegExp }[] = [
    { args: ['--modes', 'freeze,lora'], message: /^longhaul: --modes must include full/ },
    { args: ['--modes', 'freeze,half,full'], message: /^longhaul: --modes: unknown mode "half"/ },
    { args: ['--freeze-layers', '0'], message: /^longhaul: --freeze-layers expects an integer between 1/ },
    { args: ['--lr', '3'], message: /^longhaul: --lr expects a number between 0 and 1/ },
    { args: ['--dataset', noGold], message: /^longhaul: --dataset: no row of .* has "goldTurns"/ },
    { args: ['--max-turns', '0'], message: /^longhaul: --max-turns expects an integer/ },
    { args: ['--bogus'], message: /^longhaul: Unknown option '--bogus'/ },
    { args: ['--stage', 'ppo'], message: /^longhaul: --stage expects sft \(the warm start\) or rl/ },
    { args: ['--steps', '2'], message: /^longhaul: --steps is an RL setting; add --stage rl/ },
    { args: ['--stage', 'rl', '--epochs', '2'], message: /^longhaul: --epochs is a warm-start setting; RL takes --steps/ },
    { args: ['--stage', 'rl', '--batch', '6', '--group', '4'], message: /^longhaul: --batch.*multiple of groupSize \(4\)/ },
    { args: ['--stage', 'rl', '--temperature', '0'], message: /^longhaul: --temperature expects a number above 0/ },
    { args: ['--stage', 'rl', '--reward', 'judge'], message: /^longhaul: --reward expects one of f1_format/ },
    { args: ['--stage', 'rl', '--steps', '0'], message: /^longhaul: --steps expects an integer between 1/ },
  ];
  for (const { args, message } of cases)
    it(`${args.join(' ')} exits 2 naming the flag`, { timeout: 90_000 }, async () => {
      const outcome = await run(process.execPath, [path.join(repoRoot, 'dist', 'cli', 'main.js'), 'bench', 'transfer', ...args], {
        env: { ...process.env, LONGHAUL_HOME: home, LONGHAUL_TEMPORAL_PORT: '1', LONGHAUL_PG_PORT: '2', LONGHAUL_S3_PORT: '3' },
        timeout: 60_000,
      }).then(
        () => ({ code: 0, stderr: '' }),
        (error: { code: number; stderr: string }) => error,
      );
      assert.equal(outcome.code, 2, outcome.stderr);
      assert.match(outcome.stderr.trim(), message);
      assert.equal(fs.existsSync(home), false, `${home} was created: something started`);
    });
});
