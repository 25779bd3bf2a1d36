/**
 * The hostile-input corpus (issue 14): one JSON file per boundary under test/fixtures/hostile/, each
 * `{ "about": "…", "cases": [{ "id": "…", …input, …expected outcome }] }`, so adding a case is adding a
 * line. Inside a case's input, `{ "$repeat": "text", "times": N }` stands for the text repeated N times
 * (oversized inputs without megabytes in the file). Each test prints how many cases of its boundary ran.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { repoRoot } from '../../infra/paths.js';

export interface CorpusCase {
  readonly id: string;
}

export function loadCorpus<Case extends CorpusCase>(boundary: string): Case[] {
  const file = path.join(repoRoot, 'test', 'fixtures', 'hostile', `${boundary}.json`);
  const corpus = JSON.parse(fs.readFileSync(file, 'utf8')) as { cases: Case[] };
  const seen = new Set<string>();
  for (const entry of corpus.cases) {
    assert.equal(typeof entry.id, 'string', `${boundary}: every case has an id`);
    assert.ok(!seen.has(entry.id), `${boundary}: case id "${entry.id}" repeats`);
    seen.add(entry.id);
  }
  return corpus.cases;
}

/** The value with every `{ "$repeat": s, "times": n }` replaced by s repeated n times. */
export function expand(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(expand);
  if (value !== null && typeof value === 'object') {
    const record = value as Record<string, unknown>;
    if (typeof record.$repeat === 'string' && typeof record.times === 'number') return record.$repeat.repeat(record.times);
    return Object.fromEntries(Object.entries(record).map(([key, inner]) => [key, expand(inner)]));
  }
  return value;
}

/** One line a test run shows: how many cases of a boundary ran (and passed, since a failure throws first). */
export function reportCount(boundary: string, count: number, detail = ''): void {
  console.log(`hostile corpus: ${boundary}: ${count} cases ran${detail ? ` (${detail})` : ''}`);
}
