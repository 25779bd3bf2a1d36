import { test } from 'node:test';
import assert from 'node:assert/strict';
import { UsageError } from '../command.js';
import { stageTable } from './manifest.js';
import {
  demoPlan,
  demoRolloutTemperature,
  parseBand,
  parseHops,
  demoTrainable,
  presets,
  probeTrajectory,
  trainedLabel,
  warmStartTrainable,
} from './plan.js';

test('the default plan and --full: sizes, sampling RL rollouts, one RL object', () => {
  const plan = demoPlan({});
  assert.equal(plan.full, false);
  assert.equal(plan.split.heldOut, presets.default.heldout);
  assert.deepEqual(plan.synthesis.hops, [1]);
  assert.equal(plan.references.sets.length, 0);
  assert.equal(plan.rl.trajectory.options?.temperature, demoRolloutTemperature, 'RL rollouts sample');
  assert.ok(demoRolloutTemperature > 0 && demoRolloutTemperature < 1);
  assert.equal(plan.rl.trajectory.rewardMetric, 'f1_format', 'graded credit with a format term');
  assert.deepEqual(plan.rl.curriculum, { lower: 0, upper: 1, masteredAfter: 2, tooHardAfter: 3, passReward: 0.5 });
  assert.equal(demoPlan({ 'no-curriculum': true }).rl.curriculum, null);
  assert.equal(
    demoPlan({ 'no-curriculum': true, steps: '10', batch: '16', 'train-candidates': '40', 'synth-count': '200' }).rl.curriculum,
    null,
  );
  assert.deepEqual(demoPlan({ band: '0.1,0.9' }).rl.curriculum, {
    lower: 0.1,
    upper: 0.9,
    masteredAfter: 2,
    tooHardAfter: 3,
    passReward: 0.5,
  });
  assert.equal(plan.band.enabled, false, 'the default demo has no separate band probe: the curriculum applies the band');
  assert.equal(demoPlan({ 'band-probe': true }).band.enabled, true);
  assert.equal(plan.synthesis.reuse, true);
  assert.equal(demoPlan({ 'fresh-synthesis': true }).synthesis.reuse, false);
  assert.equal(plan.warmStart.hyperparameters.learningRate, 3e-4);
  assert.deepEqual(demoPlan({ 'sft-trainable': 'full' }).warmStart.hyperparameters.trainable, warmStartTrainable);
  assert.equal(demoPlan({ 'sft-trainable': 'full' }).warmStart.hyperparameters.learningRate, 1e-4);
  assert.deepEqual(plan.rl.hyperparameters.trainable, demoTrainable, 'RL trains the last layers by default');
  assert.equal(trainedLabel(plan.rl.hyperparameters), 'the last 4 layers and the norm, lr 0.00002');
  assert.equal(trainedLabel(demoPlan({ 'rl-trainable': 'full', lr: '3e-5' }).rl.hyperparameters), 'every parameter, lr 0.00003');
  assert.equal(demoPlan({ 'rl-trainable': 'full' }).rl.hyperparameters.learningRate, 5e-6, 'full RL has its own, lower default rate');
  assert.deepEqual(demoPlan({ 'rl-trainable': 'full' }).rl.hyperparameters.trainable, warmStartTrainable);
  assert.deepEqual(demoPlan({ 'rl-trainable': 'full' }).warmStart.hyperparameters.trainable, demoTrainable, 'each stage its own');
  assert.equal(demoPlan({ reward: 'em' }).rl.trajectory.rewardMetric, 'em');
  assert.equal(plan.rl.trajectory.rewardFormatCredit, 'when-scored', 'the format term only for an answer that scores');
  assert.equal(demoPlan({ 'format-credit': 'always' }).rl.trajectory.rewardFormatCredit, 'always');
  assert.equal(demoPlan({ reward: 'em_format', 'format-credit': 'always' }).rl.trajectory.rewardFormatCredit, 'always');
  assert.equal(demoPlan({ reward: 'em' }).rl.trajectory.rewardFormatCredit, undefined, 'no format term, no format credit');
  assert.equal(plan.evaluation.trajectory.options?.temperature, 0);
  assert.equal(plan.evaluation.concurrency, 8);
  assert.equal(demoPlan({ 'eval-concurrency': '16' }).evaluation.concurrency, 16);
  const full = demoPlan({ full: true });
  assert.ok(full.split.heldOut >= 200);
  assert.deepEqual(full.synthesis.hops, [1, 2]);
  assert.equal(full.references.sets.length, 4);
  assert.equal(full.references.limit, 10);
  assert.equal(full.evaluation.concurrency, 16);
  assert.equal(full.split.warmStart, 64);
  assert.deepEqual(full.rl.hyperparameters.trainable, warmStartTrainable, '--full: RL trains every parameter');
  assert.equal(full.rl.hyperparameters.learningRate, 5e-6);
  assert.deepEqual(demoPlan({ full: true, 'rl-trainable': 'freeze' }).rl.hyperparameters.trainable, demoTrainable);
  assert.ok(
    full.synthesis.candidatesPerHop * full.synthesis.hops.length >= full.split.heldOut + full.split.warmStart + full.split.candidates,
  );
  assert.equal(demoPlan({ full: true, 'reference-limit': '0' }).references.sets.length, 0);
  assert.equal(full.band.enabled, false, '--full lets the curriculum apply the band (a probe of 48 × 4 would take ~18 min)');
  assert.equal(demoPlan({ full: true, 'band-probe': true }).band.enabled, true);
});

test('the band probe samples at the RL temperature, whatever --temperature says', () => {
  for (const values of [{ full: true }, { full: true, temperature: '0.9' }, { 'band-probe': true, temperature: '1' }]) {
    const plan = demoPlan(values);
    assert.equal(probeTrajectory(plan).options?.temperature, plan.rl.trajectory.options?.temperature);
  }
  assert.equal(demoPlan({ temperature: '0.9' }).rl.trajectory.options?.temperature, 0.9);
});

test('the per-stage table: seconds, share of the total, "-" for an untimed stage', () => {
  const table = stageTable([
    { stage: 'stack', seconds: 10 },
    { stage: 'synthesis', seconds: 30 },
    { stage: 'rl', seconds: null },
  ]).split('\n');
  assert.equal(table[0], 'per-stage wall time:');
  assert.match(table[2]!, /synthesis +30\.0 s +75 %/);
  assert.match(table[3]!, /rl +- s$/);
  assert.match(table[4]!, /total +40\.0 s +100 %/);
});

const refused = (values: Parameters<typeof demoPlan>[0], flag: RegExp) =>
  assert.throws(
    () => demoPlan(values),
    (error: unknown) => error instanceof UsageError && flag.test(error.message),
  );

test('bad flags are refused naming the flag', () => {
  refused({ band: '0,1.5' }, /^--band: .*\[0, 1\]/);
  refused({ band: '-0.1,0.5' }, /^--band: .*\[0, 1\]/);
  refused({ band: '0.6,0.4' }, /^--band: LOW must be below HIGH/);
  refused({ band: 'half' }, /^--band expects LOW,HIGH/);
  refused({ heldout: '0' }, /^--heldout: the held-out set would be empty/);
  refused({ 'warm-start': 'silver' }, /^--warm-start expects gold/);
  refused({ 'eval-k': '4' }, /^--eval-k 4 with --eval-temperature 0/);
  refused({ hops: '1,1' }, /^--hops expects distinct/);
  refused({ 'synth-count': '5' }, /^--synth-count: 5 candidates/);
  refused({ 'eval-temperature': 'warm' }, /^--eval-temperature expects a number/);
  refused(
    { 'no-curriculum': true, steps: '10', batch: '16', group: '4' },
    /^--train-candidates 8 is too few for --no-curriculum: .* draw 40 questions/,
  );
  refused({ 'eval-concurrency': '0' }, /^--eval-concurrency expects an integer between 1 and 256/);
  refused({ reward: 'judge' }, /^--reward expects one of f1_format, em_format, f1, em, cover_em/);
  refused({ 'format-credit': 'sometimes' }, /^--format-credit expects one of when-scored, always/);
  refused({ reward: 'em', 'format-credit': 'always' }, /^--format-credit applies to a reward with a format term .*not --reward em/);
  refused({ 'from-version': '-1' }, /from-version/);
  refused({ 'band-k': '8' }, /^--band-k sets the band probe's samples/);
  refused({ 'band-probe': true, 'no-band': true }, /^--band-probe contradicts --no-band/);
  refused({ temperature: '0' }, /^--temperature 0 is greedy/);
  refused({ temperature: 'hot' }, /^--temperature expects a number/);
  refused({ 'sft-trainable': 'lora' }, /^--sft-trainable expects freeze/);
  refused({ 'rl-trainable': 'lora' }, /^--rl-trainable expects freeze \(the last 4 layers and the norm\) or full/);
  refused({ dataset: 'x.jsonl', 'fresh-synthesis': true }, /^--fresh-synthesis has no effect with --dataset/);
});

test('band and hop lists', () => {
  assert.deepEqual(parseBand(undefined), { low: 0, high: 1 });
  assert.deepEqual(parseBand('0.1, 0.9'), { low: 0.1, high: 0.9 });
  assert.deepEqual(parseHops('2,1', [1]), [2, 1]);
  assert.deepEqual(parseHops(undefined, [1, 2]), [1, 2]);
});

test('--warm-start none drops the warm-start set from the split', () => {
  assert.equal(demoPlan({ 'warm-start': 'none' }).split.warmStart, 0);
  assert.equal(demoPlan({ 'no-warm-start': true }).warmStart.source, 'none');
});
