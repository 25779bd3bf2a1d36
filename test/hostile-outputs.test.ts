import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { parseAction } from '../activities/agent/parse-action.js';
import { repoRoot } from '../infra/paths.js';
import type { Protocol } from '../workflows/contracts/trajectory.contract.js';

interface HostileCase {
  readonly name: string;
  readonly text?: string;
  readonly textBase64?: string;
  readonly prefix?: string;
  readonly repeat?: string;
  readonly times?: number;
  readonly protocol?: Protocol;
  readonly expect: 'invalid' | 'tools' | 'answer';
  readonly reason?: string;
  /** The answer text expected (sanitised: no NUL, no unpaired surrogate). */
  readonly answer?: string;
}

const corpus = JSON.parse(fs.readFileSync(path.join(repoRoot, 'test', 'fixtures', 'hostile', 'model-outputs.json'), 'utf8')) as {
  cases: HostileCase[];
};

function textOf(entry: HostileCase): string {
  if (entry.textBase64 !== undefined) return Buffer.from(entry.textBase64, 'base64').toString('utf8');
  if (entry.repeat !== undefined) return (entry.prefix ?? '') + entry.repeat.repeat(entry.times ?? 1);
  return entry.text ?? '';
}

test(`the hostile model-output corpus (${corpus.cases.length} cases) parses to invalid steps with reasons or to the one action spelled, never an exception`, () => {
  for (const entry of corpus.cases) {
    const action = parseAction(textOf(entry), {
      protocol: entry.protocol ?? 'tags',
      tools: ['search', 'access', 'answer'],
      maxCallsPerTurn: 3,
    });
    assert.equal(action.kind, entry.expect, `${entry.name}: ${JSON.stringify(action).slice(0, 300)}`);
    if (action.kind === 'answer' && entry.answer !== undefined)
      assert.equal(action.answer, entry.answer, `${entry.name}: the answer as scored and stored`);
    if (action.kind === 'invalid') {
      assert.ok(action.reason.length <= 201, `${entry.name}: the reason stays short`);
      if (entry.reason)
        assert.ok(action.reason.includes(entry.reason), `${entry.name}: reason ${JSON.stringify(action.reason)} names ${entry.reason}`);
    }
  }
});
