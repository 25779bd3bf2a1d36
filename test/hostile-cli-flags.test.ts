/**
 * Hostile-input corpus, boundary "CLI flags" (test/fixtures/hostile/cli-flags.json): every flag a
 * command parses as a number, given a value out of range and one of the wrong type. Each must exit 2
 * with one line naming the flag, before anything starts. The test scans cli/commands/ and the demo's
 * plan (cli/demo/) for the flags parsed as numbers (integerFlag, rateFlag, Number(values…), intervals,
 * policy versions, the demo's integer/numberIn/--band/--hops) and fails when one has no case, so a new
 * numeric flag needs a line in the corpus.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { repoRoot } from '../infra/paths.js';
import { loadCorpus, reportCount, type CorpusCase } from './helpers/hostile-corpus.js';
import { offlineCli } from './helpers/offline-cli.js';

interface FlagCase extends CorpusCase {
  readonly args: readonly string[];
  readonly flag: string;
  /** What the message must contain when it is not `--<flag>`. */
  readonly names?: string;
}

const cases = loadCorpus<FlagCase>('cli-flags');

/** Patterns of cli/commands/*.command.ts that parse a flag as a number; the first non-empty group is the flag. */
const numericFlagPatterns = [
  /integerFlag\([^,]*?,\s*'([\w-]+)/g,
  /rateFlag\([^,]*?,\s*'([\w-]+)/g,
  /(?:numeric|Number|temperatureFlag|parseInterval|pauseRange)\(values(?:\.(\w+)|\['([\w-]+)'\])/g,
  /startVersionFlag\([^,]+,\s*values(?:\.(\w+)|\['([\w-]+)'\])/g,
  /--([\w-]+) expects (?:an integer|a number|a positive number)/g,
];

/**
 * Patterns of the demo's flag parser (cli/demo/*.ts: the `integer(flag, …)` shorthand over integerFlag,
 * `numberIn(values…)`, `--band`/`--hops` (lists of numbers) and `--from-version`), read as flags of the `demo` command.
 */
const demoNumericFlagPatterns = [
  ...numericFlagPatterns,
  /\binteger\('([\w-]+)'/g,
  /numberIn\(values(?:\.(\w+)|\['([\w-]+)'\])/g,
  /parse(?:Band|Hops)\(text\(values(?:\.(\w+)|\['([\w-]+)'\])\)/g,
  /startVersionRequest\(text\(values(?:\.(\w+)|\['([\w-]+)'\])/g,
];

/** "<command> --<flag>" for every numeric flag the commands (and the demo's plan) parse. */
function numericFlagsInSource(): Set<string> {
  const found = new Set<string>();
  const scan = (file: string, command: string, patterns: readonly RegExp[]) => {
    const source = fs.readFileSync(file, 'utf8');
    for (const pattern of patterns)
      for (const match of source.matchAll(pattern)) found.add(`${command} --${match.slice(1).find((group) => group !== undefined)}`);
  };
  const commands = path.join(repoRoot, 'cli', 'commands');
  for (const file of fs.readdirSync(commands).filter((name) => name.endsWith('.command.ts')))
    scan(path.join(commands, file), file.replace(/\.command\.ts$/, '').replace(/^bench-.*$/, 'bench'), numericFlagPatterns);
  const demo = path.join(repoRoot, 'cli', 'demo');
  for (const file of fs.readdirSync(demo).filter((name) => name.endsWith('.ts') && !name.endsWith('.test.ts')))
    scan(path.join(demo, file), 'demo', demoNumericFlagPatterns);
  return found;
}

test(`the hostile CLI-flag corpus (${cases.length} cases): every numeric flag of every command, out of range or of the wrong type, exits 2 naming the flag and starts nothing`, async () => {
  const covered = new Set(cases.map((entry) => `${entry.args[0]} --${entry.flag}`));
  const missing = [...numericFlagsInSource()].filter((flag) => !covered.has(flag));
  assert.deepEqual(missing, [], 'numeric flags without a case in test/fixtures/hostile/cli-flags.json');
  const cli = await offlineCli('hostile-cli-flags');
  try {
    const questions = path.join(cli.scratch, 'questions.jsonl');
    fs.writeFileSync(
      questions,
      `${JSON.stringify({ id: 'q1', question: 'What is the capital of Peru?', answers: ['Lima'], goldTurns: ['<answer>Lima</answer>'] })}\n`,
    );
    const corpus = path.join(cli.scratch, 'corpus.jsonl');
    fs.writeFileSync(corpus, `${JSON.stringify({ id: 'd1', contents: '"Lima"\nLima is the capital of Peru.' })}\n`);
    const substitute = (arg: string) => arg.replace('$QUESTIONS', questions).replace('$CORPUS', corpus);
    const results = await cli.runAll(cases.map((entry) => entry.args.map(substitute)));
    const failures: string[] = [];
    cases.forEach((entry, index) => {
      const { code, stderr, started } = results[index]!;
      const message = stderr.trim();
      const names = entry.names ?? `--${entry.flag}`;
      if (started) failures.push(`${entry.id}: started something (created the home) before refusing`);
      if (code !== 2) failures.push(`${entry.id}: exit ${code}, expected 2: ${message.slice(0, 200)}`);
      else if (!message.includes(names)) failures.push(`${entry.id}: "${message.slice(0, 200)}" does not name ${names}`);
      else if (message.split('\n').length !== 1) failures.push(`${entry.id}: more than one line: ${message.slice(0, 300)}`);
    });
    assert.deepEqual(failures, []);
    assert.equal(fs.existsSync(cli.home), false, 'nothing started: the home was never created');
    const commands = new Map<string, number>();
    for (const entry of cases) commands.set(entry.args[0]!, (commands.get(entry.args[0]!) ?? 0) + 1);
    reportCount('CLI flags', cases.length, `${commands.size} commands, ${covered.size} flags`);
  } finally {
    await cli.close();
  }
});
