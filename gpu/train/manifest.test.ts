/**
 * One contract on both sides: the JSON schema the engine reads is the one zod generates, manifests
 * built by the TypeScript builder validate in Python (`python -m longhaul_engine.manifest`), and
 * documents the zod schema rejects, Python rejects too. Also the record → sample conversion. Needs
 * the engine's venv, not the stack.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import { repoRoot } from '../../infra/paths.js';
import { testPython } from '../../test/doubles/test-model.js';
import { batchManifestSchema, manifestJsonSchemaPath, manifestJsonSchemaText, type BatchManifest } from './manifest.js';
import type { TrainingRecord } from '../../activities/ports/trajectory-record.schema.js';
import { rlSamples, sftSamples } from './samples.js';
import { defaultRlHyperparameters, defaultSftHyperparameters } from './train-step.schema.js';
import { errorTypes, LonghaulError } from '../../workflows/contracts/errors.js';

const run = promisify(execFile);

/** Two turns; turn 1's prompt extends turn 0's sequence with an observation [7, 8]. */
export function twoTurnRecord(id: string, questionId: string, reward: number, version = 3): TrainingRecord {
  return {
    trajectoryId: id,
    runId: 'run-a',
    questionId,
    reward,
    turnRecords: [
      { turn: 0, promptTokenIds: [1, 2, 3], tokenIds: [4, 5], logprobs: [-0.5, -1.5], tokenVersions: [version, version] },
      { turn: 1, promptTokenIds: [1, 2, 3, 4, 5, 7, 8], tokenIds: [9], logprobs: [-0.25], tokenVersions: [version] },
    ],
  };
}

async function pythonVerdict(file: string): Promise<{ event: string; message?: string }> {
  try {
    const { stdout } = await run(testPython(), ['-m', 'longhaul_engine.manifest', '--manifest', file], {
      cwd: path.join(repoRoot, 'gpu', 'engine'),
    });
    return JSON.parse(stdout.trim().split('\n').pop()!) as { event: string };
  } catch (error) {
    return JSON.parse(((error as { stdout?: string }).stdout ?? '').trim().split('\n').pop()!) as { event: string; message: string };
  }
}

describe('the batch manifest contract', () => {
  let dir: string;
  let rl: BatchManifest;
  let sft: BatchManifest;

  before(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'longhaul-manifest-'));
    // The validator checks that the base folder holds these files; it does not load them.
    fs.mkdirSync(path.join(dir, 'base'));
    fs.writeFileSync(path.join(dir, 'base', 'config.json'), '{}');
    fs.writeFileSync(path.join(dir, 'base', 'model.safetensors'), '');
    fs.writeFileSync(path.join(dir, 'base', 'engine_state.json'), JSON.stringify({ policyVersion: 3 }));
    const records = [twoTurnRecord('t1', 'q1', 1), twoTurnRecord('t2', 'q1', 0)];
    const common = {
      schemaVersion: 1 as const,
      runId: 'run-a',
      step: 3,
      basePolicy: { version: 3, modelDir: path.join(dir, 'base') },
      outputDir: path.join(dir, 'out'),
      outputPolicyVersion: 4,
    };
    rl = {
      ...common,
      kind: 'rl',
      hyperparameters: defaultRlHyperparameters,
      samples: records.flatMap((record) => rlSamples(record, record.trajectoryId, { baseVersion: 3, eta: 4 })),
    };
    sft = {
      ...common,
      kind: 'sft',
      hyperparameters: { ...defaultSftHyperparameters, trainable: { mode: 'lora', rank: 4, alpha: 8, targets: ['q_proj'] } },
      samples: records.flatMap((record) => sftSamples(record, record.trajectoryId)),
    };
  });
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  const write = (name: string, document: unknown) => {
    const file = path.join(dir, name);
    fs.writeFileSync(file, JSON.stringify(document));
    return file;
  };

  it('the committed JSON schema the engine reads is exactly what zod generates from gpu/train/manifest.ts', () => {
    const committed = fs.readFileSync(path.join(repoRoot, manifestJsonSchemaPath), 'utf8');
    assert.ok(
      committed === manifestJsonSchemaText(),
      `${manifestJsonSchemaPath} differs from the zod schema: run \`npx tsc -p tsconfig.json && node dist/gpu/train/write-manifest-schema.js\` and commit it`,
    );
  });

  it('concatenates turns whose prompt extends the sequence, masking the observation tokens', () => {
    const [sample] = rlSamples(twoTurnRecord('t1', 'q1', 1), 't1', { baseVersion: 3, eta: 4 });
    assert.deepEqual(sample, {
      id: 't1',
      groupId: 'q1',
      reward: 1,
      tokenIds: [1, 2, 3, 4, 5, 7, 8, 9],
      lossMask: [0, 0, 0, 1, 1, 0, 0, 1],
      behaviourLogprobs: [0, 0, 0, -0.5, -1.5, 0, 0, -0.25],
      policyVersions: [-1, -1, -1, 3, 3, -1, -1, 3],
      turnIndices: [0, 0, 0, 0, 0, 1, 1, 1],
      temperature: 1,
    });
  });

  it('carries the temperature the behaviour logprobs were sampled at (greedy and old records: 1) and splits at a change', () => {
    const record = twoTurnRecord('t1', 'q1', 1);
    const at = (t0: number | undefined, t1: number | undefined): TrainingRecord => ({
      ...record,
      turnRecords: [
        { ...record.turnRecords[0]!, ...(t0 === undefined ? {} : { temperature: t0 }) },
        { ...record.turnRecords[1]!, ...(t1 === undefined ? {} : { temperature: t1 }) },
      ],
    });
    const temperatures = (r: TrainingRecord) =>
      rlSamples(r, 't1', { baseVersion: 3, eta: 4 }).map((sample) => [sample.id, sample.temperature]);
    assert.deepEqual(temperatures(at(0.7, 0.7)), [['t1', 0.7]]);
    assert.deepEqual(temperatures(at(0, 0)), [['t1', 1]]);
    assert.deepEqual(temperatures(at(undefined, 0)), [['t1', 1]]);
    assert.deepEqual(temperatures(at(0.7, 1.2)), [
      ['t1#0', 0.7],
      ['t1#1', 1.2],
    ]);
  });

  it('splits a trajectory into one sample per segment when a prompt does not extend the sequence', () => {
    const record = twoTurnRecord('t1', 'q1', 1);
    const truncated = { ...record, turnRecords: [record.turnRecords[0]!, { ...record.turnRecords[1]!, promptTokenIds: [1, 7, 8] }] };
    const samples = rlSamples(truncated, 't1', { baseVersion: 3, eta: 4 });
    assert.deepEqual(
      samples.map((sample) => [sample.id, sample.tokenIds, sample.lossMask]),
      [
        ['t1#0', [1, 2, 3, 4, 5], [0, 0, 0, 1, 1]],
        ['t1#1', [1, 7, 8, 9], [0, 0, 0, 1]],
      ],
    );
  });

  it('refuses mismatched lengths, a non-finite reward and tokens staler than eta, naming the field', () => {
    const record = twoTurnRecord('t1', 'q1', 1);
    const short = { ...record, turnRecords: [{ ...record.turnRecords[0]!, logprobs: [-0.5] }] };
    assert.throws(
      () => rlSamples(short, 'trajectoryIds[0] (t1)', { baseVersion: 3, eta: 4 }),
      new LonghaulError(errorTypes.invalidInput, 'trajectoryIds[0] (t1): turn 0: logprobs has 1 entries but tokenIds has 2'),
    );
    assert.throws(
      () => rlSamples({ ...record, reward: Number.NaN }, 'x', { baseVersion: 3, eta: 4 }),
      new LonghaulError(errorTypes.invalidInput, 'x: reward is NaN, must be a finite number'),
    );
    assert.throws(
      () => rlSamples(twoTurnRecord('t1', 'q1', 1, 0), 'x', { baseVersion: 3, eta: 2 }),
      new LonghaulError(errorTypes.invalidInput, 'x: turn 0: tokenVersions[0] is 0, staler than eta 2 allows at base version 3'),
    );
  });

  it('builds rl and sft manifests that the zod schema and the Python engine both accept', async () => {
    for (const [name, manifest] of [
      ['rl', rl],
      ['sft', sft],
    ] as const) {
      assert.equal(batchManifestSchema.safeParse(manifest).success, true);
      assert.deepEqual(await pythonVerdict(write(`${name}.json`, manifest)), { event: 'valid', kind: name, samples: 2, baseVersion: 3 });
    }
  });

  it('rejects on both sides what breaks the schema: RL fields on an sft sample, a LoRA recipe without rank, a negative eta, an unknown key', async () => {
    const rlDocument = rl as Extract<BatchManifest, { kind: 'rl' }>;
    const broken: Record<string, unknown> = {
      sftWithRlFields: { ...sft, samples: [{ ...rlDocument.samples[0] }] },
      loraWithoutRank: {
        ...rl,
        hyperparameters: { ...rlDocument.hyperparameters, trainable: { mode: 'lora', alpha: 8, targets: ['q_proj'] } },
      },
      negativeEta: {
        ...rl,
        hyperparameters: { ...rlDocument.hyperparameters, ppo: { ...rlDocument.hyperparameters.ppo, maxStaleness: -1 } },
      },
      unknownKey: { ...rl, extra: true },
    };
    for (const [name, document] of Object.entries(broken)) {
      assert.equal(batchManifestSchema.safeParse(document).success, false, `zod accepted ${name}`);
      const verdict = await pythonVerdict(write(`${name}.json`, document));
      assert.equal(verdict.event, 'error', `python accepted ${name}`);
      assert.match(verdict.message ?? '', /^invalid manifest: /);
    }
  });
});
