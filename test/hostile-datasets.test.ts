/**
 * Hostile-input corpus, boundary "dataset rows" (test/fixtures/hostile/dataset-rows.json): rows with
 * wrong types or missing fields for every question-set loader — the eight layouts of
 * activities/question-sets and the learner's JSONL that train and warm-start read. Each case is
 * checked in the parser (skipped with its line and field, or refused under strict) and through the
 * CLI: `longhaul datasets inspect` with and without --strict, `eval --strict` (one file per layout),
 * and `train` / `warm-start` for the learner's JSONL; a refusal exits 2 naming the file, the line and
 * the field, and nothing starts (the commands run against a home that must never come to exist).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { parseQuestions } from '../activities/learner.activities.js';
import { parseQuestionSet, questionSetLayoutNames, questionSetLayouts } from '../activities/question-sets/question-set.js';
import { repoRoot } from '../infra/paths.js';
import { loadCorpus, reportCount, type CorpusCase } from './helpers/hostile-corpus.js';
import { offlineCli } from './helpers/offline-cli.js';

interface DatasetCase extends CorpusCase {
  readonly loader?: string;
  readonly bad?: unknown;
  readonly badRaw?: string;
  readonly field?: string;
  readonly file?: string;
  readonly refused?: string;
}

const cases = loadCorpus<DatasetCase>('dataset-rows');
const good = (
  JSON.parse(fs.readFileSync(path.join(repoRoot, 'test', 'fixtures', 'hostile', 'dataset-rows.json'), 'utf8')) as {
    good: Record<string, unknown>;
  }
).good;
const loaders = [...questionSetLayoutNames, 'questions'];

const isArrayLayout = (loader: string | undefined) =>
  loader !== undefined && loader !== 'questions' && questionSetLayouts[loader as keyof typeof questionSetLayouts].container === 'json';

/** The case's file text and the line its bad row is on. */
function fileOf(entry: DatasetCase): { text: string; line: number; extension: string } {
  const extension = isArrayLayout(entry.loader) ? 'json' : 'jsonl';
  if (entry.file !== undefined) return { text: entry.file, line: 0, extension };
  const first = JSON.stringify(good[entry.loader!]);
  const second = entry.badRaw ?? JSON.stringify(entry.bad);
  if (extension === 'json') return { text: `[\n${first},\n${second}\n]\n`, line: 3, extension };
  return { text: `${first}\n${second}\n`, line: 2, extension };
}

const fileName = (entry: DatasetCase, extension: string) => `${entry.id.replace(/[^A-Za-z0-9-]+/g, '_')}.${extension}`;

function refusal(action: () => unknown): string {
  try {
    action();
  } catch (error) {
    return (error as Error).message;
  }
  return '(not refused)';
}

test(`the hostile dataset-row corpus (${cases.length} cases) covers every loader, and each bad row is skipped with its line and field, or refused under strict`, () => {
  for (const loader of loaders)
    assert.ok(
      cases.some((entry) => entry.loader === loader && entry.bad !== undefined),
      `dataset-rows.json has no bad-row case for the loader ${loader}`,
    );
  const perLoader = new Map<string, number>();
  for (const entry of cases) {
    const { text, line, extension } = fileOf(entry);
    const name = fileName(entry, extension);
    const options = entry.loader !== undefined && entry.loader !== 'questions' ? { layout: entry.loader } : {};
    perLoader.set(entry.loader ?? 'detected', (perLoader.get(entry.loader ?? 'detected') ?? 0) + 1);
    if (entry.refused !== undefined) {
      for (const strict of [false, true]) {
        const message = refusal(() => parseQuestionSet(text, name, { ...options, strict }));
        assert.match(message, new RegExp(entry.refused), `${entry.id} (strict ${strict})`);
        assert.ok(message.startsWith(`${name}: `), `${entry.id}: names the file: ${message}`);
      }
      continue;
    }
    if (entry.loader === 'questions') {
      const message = refusal(() => parseQuestions(text, name));
      assert.ok(message.startsWith(`${name}:${line}: ${entry.field}`), `${entry.id}: ${message}`);
      continue;
    }
    const set = parseQuestionSet(text, name, options);
    assert.equal(set.items.length, 1, `${entry.id}: the good row is kept`);
    assert.deepEqual(
      set.skipped.map((row) => [row.line, row.field]),
      [[line, entry.field]],
      `${entry.id}: skipped ${JSON.stringify(set.skipped)}`,
    );
    const message = refusal(() => parseQuestionSet(text, name, { ...options, strict: true }));
    assert.ok(message.startsWith(`${name}:${line}: ${entry.field}: `), `${entry.id} under strict: ${message}`);
  }
  reportCount('dataset rows (parsers)', cases.length, [...perLoader].map(([loader, count]) => `${loader} ${count}`).join(', '));
});

test(`the dataset-row corpus through the CLI: datasets inspect with and without --strict, eval --strict, train and warm-start exit 2 naming the line, and start nothing`, async () => {
  const cli = await offlineCli('hostile-datasets');
  try {
    const runs: { entry: DatasetCase; what: string; args: string[]; line: number; file: string }[] = [];
    const evalLayouts = new Set<string>();
    for (const entry of cases) {
      const { text, line, extension } = fileOf(entry);
      const file = path.join(cli.scratch, fileName(entry, extension));
      fs.writeFileSync(file, text);
      const layout = entry.loader !== undefined && entry.loader !== 'questions' ? ['--layout', entry.loader] : [];
      if (entry.loader === 'questions') {
        runs.push({ entry, what: 'train', args: ['train', '--dataset', file], line, file });
        runs.push({ entry, what: 'warm-start', args: ['warm-start', '--dataset', file], line, file });
        continue;
      }
      runs.push({ entry, what: 'inspect', args: ['datasets', 'inspect', file, ...layout, '--json'], line, file });
      runs.push({ entry, what: 'inspect --strict', args: ['datasets', 'inspect', file, ...layout, '--strict'], line, file });
      if (entry.loader !== undefined && entry.refused === undefined && !evalLayouts.has(entry.loader)) {
        evalLayouts.add(entry.loader);
        runs.push({ entry, what: 'eval --strict', args: ['eval', '--dataset', file, ...layout, '--strict'], line, file });
      }
    }
    const results = await cli.runAll(runs.map((entry) => entry.args));
    const failures: string[] = [];
    runs.forEach(({ entry, what, line, file }, index) => {
      const { code, stdout, stderr, started } = results[index]!;
      const label = `${entry.id} (${what})`;
      if (started) failures.push(`${label}: started something (created the home)`);
      if (entry.refused !== undefined || what !== 'inspect') {
        if (code !== 2) failures.push(`${label}: exit ${code}, expected 2: ${stderr.trim().slice(0, 300)}`);
        const message = stderr.trim();
        const expected =
          entry.refused !== undefined
            ? new RegExp(entry.refused)
            : new RegExp(`${escape(path.basename(file))}:${line}: ${escape(entry.field!)}`);
        if (!expected.test(message)) failures.push(`${label}: ${message.slice(0, 300)} does not match ${expected}`);
        if (message.split('\n').length !== 1) failures.push(`${label}: more than one line on stderr: ${message.slice(0, 300)}`);
        return;
      }
      if (code !== 0) return void failures.push(`${label}: exit ${code}: ${stderr.trim().slice(0, 300)}`);
      const report = JSON.parse(stdout.trim().split('\n').pop()!) as { questions: number; skipped: { line: number; field: string }[] };
      const skipped = report.skipped.map((row) => `${row.line}:${row.field}`).join(',');
      if (report.questions !== 1 || skipped !== `${line}:${entry.field}`)
        failures.push(`${label}: ${report.questions} questions, skipped ${skipped}; expected 1 and ${line}:${entry.field}`);
    });
    assert.deepEqual(failures, []);
    assert.equal(fs.existsSync(cli.home), false, 'nothing started: the home was never created');
    const counts = new Map<string, number>();
    for (const { what } of runs) counts.set(what, (counts.get(what) ?? 0) + 1);
    reportCount('dataset rows (CLI)', runs.length, [...counts].map(([what, count]) => `${what} ${count}`).join(', '));
  } finally {
    await cli.close();
  }
});

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
