import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { ESLint } from 'eslint';
import { repoRoot } from '../infra/paths.js';

const eslint = new ESLint({ cwd: repoRoot });

async function ruleMessages(file: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: path.join(repoRoot, file) });
  return (result?.messages ?? []).filter((message) => message.ruleId === 'no-restricted-imports').map((message) => message.message);
}

test('workflow code may not import Node built-ins, pg, minio, zod, onnxruntime or infra', async () => {
  const banned = [
    "import fs from 'node:fs';",
    "import { readFileSync } from 'fs';",
    "import pg from 'pg';",
    "import { Client } from 'minio';",
    "import { z } from 'zod';",
    "import ort from 'onnxruntime-node';",
    "import { config } from '../infra/config.js';",
    "import { createSkeletonActivities } from '../activities/skeleton.activities.js';",
  ];
  for (const line of banned) {
    const messages = await ruleMessages(
      'workflows/example.workflow.ts',
      `${line}\nexport const used = [${line.match(/import \{?\s*(\w+)/)![1]}];\n`,
    );
    assert.ok(messages.length >= 1, `expected the layer rule to reject: ${line}`);
  }
});

test('workflow code may import @temporalio/workflow and activity types', async () => {
  const code =
    "import { sleep } from '@temporalio/workflow';\nimport type { SkeletonActivities } from '../activities/skeleton.activities.js';\nexport type A = SkeletonActivities;\nexport const s = sleep;\n";
  assert.deepEqual(await ruleMessages('workflows/example.workflow.ts', code), []);
});

test('activities may not reach adapters directly', async () => {
  const messages = await ruleMessages('activities/example.activities.ts', "import pg from 'pg';\nexport const p = pg;\n");
  assert.equal(messages.length, 1);
});

test('the arrows between rooms: each folder imports only what its job allows', async () => {
  const cases: [file: string, line: string, allowed: boolean][] = [
    ['infra/postgres/example.pg.ts', "import type { BlobStore } from '../../activities/ports/blob-store.port.js';", true],
    ['infra/postgres/example.pg.ts', "import type { TrajectoryInput } from '../../workflows/contracts/trajectory.contract.js';", true],
    ['infra/search/example.ts', "import { createSearchTool } from '../../activities/tools/search.tool.js';", false],
    ['infra/search/example.ts', "import { learner } from '../../workflows/learner.workflow.js';", false],
    ['infra/example.ts', "import { createToolRegistry } from '../composition/tool-registry.js';", false],
    ['infra/example.ts', "import { onnx } from '../gpu/infer/onnx.backend.js';", false],
    ['activities/example.activities.ts', "import { createPool } from '../infra/postgres/database.js';", false],
    ['activities/example.activities.ts', "import { tokenizer } from '../gpu/infer/tokenizer.js';", false],
    ['gpu/infer/example.ts', "import { config } from '../../infra/config.js';", false],
    ['gpu/infer/example.ts', "import { repoRoot } from '../../infra/paths.js';", true],
    ['composition/example.ts', "import { createScriptedPolicy } from '../test/doubles/scripted-policy.js';", true],
    ['composition/example.ts', "import { openContext } from '../test/helpers/stack.js';", false],
    ['bench/example.ts', "import { createScriptedTools } from '../test/doubles/scripted-tools.js';", true],
    ['bench/example.ts', "import { main } from '../cli/main.js';", false],
    ['cli/example.ts', "import { createScriptedTools } from '../test/doubles/scripted-tools.js';", false],
    ['corpus/example.ts', "import { createToolRegistry } from '../composition/tool-registry.js';", false],
  ];
  for (const [file, line, allowed] of cases) {
    const name = line.match(/import (?:type )?\{ (\w+)/)![1];
    const messages = await ruleMessages(file, `${line}\nexport const used = [${name}];\n`);
    assert.equal(messages.length === 0, allowed, `${file}: ${line} → ${allowed ? 'allowed' : 'refused'} (got ${JSON.stringify(messages)})`);
  }
});
