import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { configMarkdownTable } from '../cli/commands/config.command.js';
import { repoRoot } from '../infra/paths.js';

test('docs/CONFIG.md carries the variables table generated from the config schema', () => {
  const doc = fs.readFileSync(path.join(repoRoot, 'docs', 'CONFIG.md'), 'utf8');
  assert.ok(doc.includes(configMarkdownTable()), 'docs/CONFIG.md is stale: regenerate its table with `longhaul config --markdown`');
});
