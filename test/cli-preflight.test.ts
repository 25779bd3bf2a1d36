/**
 * Bad CLI input is refused before anything starts: the commands run the workflows' own input
 * parsers and the train step's hyperparameter schema first, exit 2 naming the flag and the field,
 * and leave no LONGHAUL_HOME (no run/ folder, no pid files) behind. The stack's ports point at
 * ports nothing listens on, so a command that tried to reach or start a service would not exit 2.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { repoRoot } from '../infra/paths.js';

const run = promisify(execFile);
const cli = path.join(repoRoot, 'dist', 'cli', 'main.js');

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'longhaul-preflight-'));
const home = path.join(scratch, 'home-that-does-not-exist');
const questions = path.join(scratch, 'questions.jsonl');
fs.writeFileSync(
  questions,
  `${JSON.stringify({ id: 'q1', question: 'What is the capital of Peru?', answers: ['Lima'], goldTurns: ['<answer>Lima</answer>'] })}\n`,
);

const withoutGold = path.join(scratch, 'without-gold.jsonl');
fs.writeFileSync(
  withoutGold,
  ['Peru', 'Chile', 'Bolivia']
    .map((country, index) => JSON.stringify({ id: `p${index}`, question: `What is the capital of ${country}?`, answers: ['x'] }))
    .join('\n') + '\n',
);

let environment: NodeJS.ProcessEnv | undefined;
async function stackEnv(): Promise<NodeJS.ProcessEnv> {
  environment ??= {
    ...process.env,
    LONGHAUL_HOME: home,
    LONGHAUL_TEMPORAL_PORT: String(await freePort()),
    LONGHAUL_TEMPORAL_UI_PORT: String(await freePort()),
    LONGHAUL_PG_PORT: String(await freePort()),
    LONGHAUL_S3_PORT: String(await freePort()),
  };
  return environment;
}

async function longhaul(args: string[]): Promise<{ code: number; stderr: string }> {
  try {
    const { stderr } = await run(process.execPath, [cli, ...args], { env: await stackEnv(), timeout: 60_000 });
    return { code: 0, stderr };
  } catch (error) {
    const failure = error as { code: number; stderr: string };
    return { code: failure.code, stderr: failure.stderr };
  }
}

const cases: { readonly what: string; readonly args: string[]; readonly message: RegExp }[] = [
  {
    what: 'train --batch not a multiple of --group',
    args: ['train', '--dataset', questions, '--batch', '5', '--group', '4'],
    message: /^longhaul: --batch \(settings\.batchSize\): must be a multiple of groupSize \(4\), got 5 \(see longhaul train --help\)$/,
  },
  {
    what: 'train with a typo in the hyperparameters',
    args: ['train', '--dataset', questions, '--hyperparameters', '{"ppo":{"clipEpsilonn":0.3}}'],
    message:
      /^longhaul: --hyperparameters \(hyperparameters\.ppo\.clipEpsilonn\): unknown field \(expected one of: clipEpsilon, importanceCap, .*maxStaleness\)/,
  },
  {
    what: "train with a hyperparameter out of the engine's range",
    args: ['train', '--dataset', questions, '--hyperparameters', '{"ppo":{"clipEpsilon":1.5}}'],
    message: /^longhaul: --hyperparameters \(hyperparameters\.ppo\.clipEpsilon\): Too big: expected number to be <1/,
  },
  {
    what: 'train with --max-inflight below the group size',
    args: ['train', '--dataset', questions, '--group', '4', '--max-inflight', '2'],
    message: /^longhaul: --max-inflight \(settings\.maxInflight\): expected an integer between 4 and 100000, got 2/,
  },
  {
    what: 'train with --max-observation-chars below what any tool result needs',
    args: ['train', '--dataset', questions, '--max-observation-chars', '10'],
    message: /^longhaul: --max-observation-chars expects an integer between 100 and 1000000, got "10"/,
  },
  {
    what: 'eval with --max-observation-chars that is not a number',
    args: ['eval', '--dataset', questions, '--max-observation-chars', 'all'],
    message: /^longhaul: --max-observation-chars expects an integer between 100 and 1000000, got "all"/,
  },
  {
    what: 'warm-start with --min-reward out of range',
    args: ['warm-start', '--dataset', questions, '--min-reward', '5000000'],
    message: /^longhaul: --min-reward \(settings\.minReward\): expected a number between -1000000 and 1000000, got 5000000/,
  },
  {
    what: 'bench concurrency with --inflight beyond what any machine is measured to hold',
    args: ['bench', 'concurrency', '--inflight', '20000'],
    message: /^longhaul: --inflight expects an integer between 1 and 10000, got "20000"/,
  },
  {
    what: 'bench concurrency with a modelled generation time that is not a number',
    args: ['bench', 'concurrency', '--delay-ms', 'fast'],
    message: /^longhaul: --delay-ms expects an integer between 0 and 600000, got "fast"/,
  },
  {
    what: 'demo --batch not a multiple of --group',
    args: ['demo', '--batch', '6', '--group', '4'],
    message: /^longhaul: --batch \(batchSize\): must be a multiple of groupSize \(4\), got 6/,
  },
  {
    what: 'demo with a band outside [0, 1]',
    args: ['demo', '--band', '0,1.5'],
    message: /^longhaul: --band: LOW and HIGH are pass rates and must lie in \[0, 1\], got "0,1\.5"/,
  },
  {
    what: 'demo with an empty held-out set',
    args: ['demo', '--heldout', '0'],
    message: /^longhaul: --heldout: the held-out set would be empty/,
  },
  {
    what: 'demo asking for the gold warm start with a dataset without gold paths',
    args: ['demo', '--dataset', withoutGold],
    message: /^longhaul: --dataset: .*without-gold\.jsonl has no gold paths \(no row has "goldTurns"\).*--warm-start none/,
  },
  {
    what: 'demo --resume of a run that does not exist',
    args: ['demo', '--resume', 'demo-never-ran'],
    message: /^longhaul: --resume: no demo run "demo-never-ran"/,
  },
  {
    what: 'demo --resume with other flags',
    args: ['demo', '--resume', 'demo-never-ran', '--steps', '3'],
    message: /^longhaul: --resume continues with the run's own plan; leave out --steps/,
  },
  {
    what: 'synth with an unknown synthesizer',
    args: ['synth', '--synthesizer', 'magic', '--count', '5'],
    message: /^longhaul: --synthesizer \(synthesizer\): expected one of "grounded", "llm", got "magic"/,
  },
  {
    what: 'synth --synthesizer llm with an --llm-url that is not an OpenAI-compatible base URL',
    args: ['synth', '--synthesizer', 'llm', '--llm-url', 'ftp://models.example/v2'],
    message: /^longhaul: --llm-url \(settings\.llmBaseUrl\): expected an http\(s\) URL ending in \/v1/,
  },
  {
    what: 'synth --solver with an unknown mode',
    args: ['synth', '--solver', 'oracle'],
    message: /^longhaul: --solver \(settings\.solverMode\): expected one of "gold", "policy", got "oracle"/,
  },
  {
    what: 'synth with --count 0',
    args: ['synth', '--count', '0'],
    message: /^longhaul: --count \(count\): expected an integer between 1 and 10000000, got 0/,
  },
  {
    what: 'synth with --threshold outside [0, 1]',
    args: ['synth', '--threshold', '1.5'],
    message: /^longhaul: --threshold \(settings\.difficultyThreshold\): expected a number between 0 and 1, got 1\.5/,
  },
];

for (const { what, args, message } of cases) {
  test(`${what} exits 2 naming the flag and the field, and starts nothing`, { timeout: 90_000 }, async () => {
    const result = await longhaul(args);
    assert.equal(result.code, 2, result.stderr);
    assert.equal(result.stderr.trim().split('\n').length, 1, result.stderr);
    assert.match(result.stderr.trim(), message);
    assert.equal(fs.existsSync(home), false, `${home} was created: something started (run/ and pid files live there)`);
  });
}

after(async () => {
  // Were a check missing, the command would have started services under `home`: stop them before failing.
  if (fs.existsSync(home)) await run(process.execPath, [cli, 'down'], { env: await stackEnv() }).catch(() => undefined);
  fs.rmSync(scratch, { recursive: true, force: true });
});
