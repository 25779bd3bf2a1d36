import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { UsageError } from '../command.js';
import {
  continuedEvaluationPhase,
  continuedRuns,
  createManifest,
  createManifestContinuing,
  createManifestFrom,
  DemoPhases,
  phasesBeforeRl,
  readManifest,
} from './manifest.js';
import { demoPlan, demoTrainable, rlContinuePlan, rlFromPlan, warmStartTrainable } from './plan.js';

const usage = (pattern: RegExp) => (error: unknown) => error instanceof UsageError && pattern.test(error.message);

test('--rl-from: the source plan with only the RL flags given replaced, one by one', () => {
  const source = demoPlan({ full: true, steps: '6', 'sft-questions': '128', dataset: 'set.jsonl' });
  const same = rlFromPlan(source, 'src', { 'rl-from': 'src', 'run-id': 'ablation', json: true });
  assert.equal(same.rlFrom, 'src');
  assert.deepEqual({ ...same, rlFrom: null }, { ...source, rl: { ...source.rl, trainHops: null } }, 'no RL flag: the source plan');

  const plan = rlFromPlan(source, 'src', { 'rl-from': 'src', group: '8', lr: '1e-5', 'train-hops': '1', temperature: '0.9' });
  assert.equal(plan.rl.settings.groupSize, 8);
  assert.equal(plan.rl.settings.maxSteps, 6, "steps not given: the source's 6, not --full's default 8");
  assert.equal(plan.rl.settings.batchSize, source.rl.settings.batchSize);
  assert.equal(plan.rl.hyperparameters.learningRate, 1e-5);
  assert.deepEqual(plan.rl.hyperparameters.trainable, warmStartTrainable, "the source's full-parameter RL kept");
  assert.deepEqual(plan.rl.trainHops, [1]);
  assert.equal(plan.rl.trajectory.options?.temperature, 0.9);
  assert.equal(plan.rl.trajectory.rewardMetric, source.rl.trajectory.rewardMetric);
  assert.deepEqual(plan.rl.trajectory.limits, source.rl.trajectory.limits);
  for (const part of ['split', 'warmStart', 'evaluation', 'references', 'synthesis'] as const)
    assert.deepEqual(plan[part], source[part], `${part} is the source's: the held-out scores pair`);

  const freeze = rlFromPlan(source, 'src', { 'rl-trainable': 'freeze' });
  assert.deepEqual(freeze.rl.hyperparameters.trainable, demoTrainable);
  assert.equal(freeze.rl.hyperparameters.learningRate, 2e-5, 'a new mode without --lr takes its default rate');
  const banded = rlFromPlan(source, 'src', { band: '0.1,0.9' });
  assert.deepEqual([banded.band.low, banded.band.high, banded.rl.curriculum?.lower, banded.rl.curriculum?.upper], [0.1, 0.9, 0.1, 0.9]);
  assert.equal(rlFromPlan(source, 'src', { 'no-curriculum': true, steps: '2' }).rl.curriculum, null);
  assert.equal(plan.rl.trainWarmStart, false);
  assert.equal(rlFromPlan(source, 'src', { 'train-warm-start': true }).rl.trainWarmStart, true);
  assert.equal(
    rlFromPlan(source, 'src', { 'train-warm-start': true, 'no-curriculum': true, steps: '40' }).rl.curriculum,
    null,
    '40 steps × 16 in groups of 4 draw 160 questions: the 48 candidates and the 128 warm-start ones',
  );
  assert.throws(
    () => rlFromPlan(source, 'src', { 'train-warm-start': true, 'no-curriculum': true, steps: '50' }),
    usage(/src has 48 training candidates and 128 warm-start questions and 50 steps/),
  );
});

test('--rl-from refuses what it cannot do before anything starts, naming the flag', () => {
  const source = demoPlan({ full: true });
  assert.throws(() => rlFromPlan(source, 'src', { dataset: 'x.jsonl', heldout: '10' }), usage(/leave out --dataset, --heldout/));
  assert.throws(() => rlFromPlan(source, 'src', { 'sft-epochs': '2' }), usage(/--sft-epochs/));
  assert.throws(() => rlFromPlan(demoPlan({ 'warm-start': 'none' }), 'src', {}), usage(/has no warm start/));
  assert.throws(() => rlFromPlan(source, 'src', { 'train-hops': '1,x' }), usage(/--train-hops expects/));
  assert.throws(
    () => rlFromPlan(source, 'src', { 'no-curriculum': true, steps: '50' }),
    usage(/--no-curriculum: src has 48 training candidates/),
  );
  assert.throws(() => rlFromPlan(source, 'src', { temperature: '0' }), usage(/--temperature 0 is greedy/));
  assert.throws(
    () => rlFromPlan(demoPlan({ full: true, reward: 'em' }), 'src', { 'format-credit': 'always' }),
    usage(/--format-credit applies to a reward with a format term .*reused from src is em: give --reward too/),
  );
});

test('--rl-from: the format credit follows the reward; a source recorded before the setting keeps none', () => {
  const source = demoPlan({ full: true });
  assert.equal(rlFromPlan(source, 'src', {}).rl.trajectory.rewardFormatCredit, 'when-scored');
  assert.equal(rlFromPlan(source, 'src', { 'format-credit': 'always' }).rl.trajectory.rewardFormatCredit, 'always');
  const always = demoPlan({ full: true, 'format-credit': 'always' });
  assert.equal(rlFromPlan(always, 'src', {}).rl.trajectory.rewardFormatCredit, 'always', "the source's credit kept");
  const em = rlFromPlan(always, 'src', { reward: 'em' }).rl.trajectory;
  assert.equal(em.rewardMetric, 'em');
  assert.equal(em.rewardFormatCredit, undefined, 'a reward without a format term drops the credit');
  assert.equal(rlFromPlan(always, 'src', { reward: 'em_format' }).rl.trajectory.rewardFormatCredit, 'when-scored');
  const { rewardFormatCredit: _credit, ...older } = source.rl.trajectory;
  const recordedBefore = { ...source, rl: { ...source.rl, trajectory: older } };
  assert.equal(rlFromPlan(recordedBefore, 'src', {}).rl.trajectory.rewardFormatCredit, undefined);
  assert.equal(rlContinuePlan(always, 'prev', { steps: '2' }).rl.trajectory.rewardFormatCredit, 'always');
});

test('--unanswered-reward and --advantage-scale: checked as a whole run checks them, carried by --rl-from and --rl-continue', () => {
  const plan = demoPlan({});
  assert.equal(plan.rl.trajectory.rewardUnanswered, undefined, 'no answer earns 0 (the contract default) unless asked');
  assert.equal(plan.rl.hyperparameters.ppo, undefined, 'the engine default, std');
  const both = demoPlan({ 'unanswered-reward': '-0.1', 'advantage-scale': 'none' });
  assert.equal(both.rl.trajectory.rewardUnanswered, -0.1);
  assert.deepEqual(both.rl.hyperparameters.ppo, { groupScale: 'none' });
  assert.throws(() => demoPlan({ 'unanswered-reward': '0.2' }), usage(/--unanswered-reward/));
  assert.throws(() => demoPlan({ 'unanswered-reward': 'low' }), usage(/--unanswered-reward/));
  assert.throws(() => demoPlan({ 'advantage-scale': 'max' }), usage(/--advantage-scale expects one of std, none/));
  const source = demoPlan({ full: true });
  const from = rlFromPlan(source, 'src', { 'unanswered-reward': '-0.05', 'advantage-scale': 'none' });
  assert.equal(from.rl.trajectory.rewardUnanswered, -0.05);
  assert.deepEqual(from.rl.hyperparameters.ppo, { groupScale: 'none' });
  assert.equal(from.rl.hyperparameters.learningRate, source.rl.hyperparameters.learningRate, 'the rest of RL is the source run');
  assert.equal(rlFromPlan(source, 'src', {}).rl.trajectory.rewardUnanswered, undefined);
  const continued = rlContinuePlan(from, 'prev', { steps: '2' });
  assert.equal(continued.rl.trajectory.rewardUnanswered, -0.05, "a continued run keeps the previous run's settings");
  assert.deepEqual(continued.rl.hyperparameters.ppo, { groupScale: 'none' });
  assert.deepEqual(rlContinuePlan(from, 'prev', { 'advantage-scale': 'std' }).rl.hyperparameters.ppo, { groupScale: 'std' });
});

test('--drop-equal-groups: off by default, carried by --rl-from and --rl-continue, undone by --keep-equal-groups', () => {
  assert.equal(demoPlan({}).rl.settings.dropEqualRewardGroups, false, 'the demo keeps equal groups unless asked');
  assert.equal(demoPlan({ 'drop-equal-groups': true }).rl.settings.dropEqualRewardGroups, true);
  assert.throws(() => demoPlan({ 'drop-equal-groups': true, 'keep-equal-groups': true }), usage(/contradict/));
  const source = demoPlan({ full: true });
  const from = rlFromPlan(source, 'src', { 'drop-equal-groups': true, steps: '3' });
  assert.equal(from.rl.settings.dropEqualRewardGroups, true);
  assert.equal(from.rl.settings.maxSteps, 3);
  assert.equal(from.rl.settings.batchSize, source.rl.settings.batchSize, 'the rest of the settings are the source run');
  assert.equal(rlContinuePlan(from, 'prev', { steps: '2' }).rl.settings.dropEqualRewardGroups, true, 'a continued run keeps it');
  assert.equal(rlContinuePlan(from, 'prev', { 'keep-equal-groups': true }).rl.settings.dropEqualRewardGroups, false);
  assert.equal(rlFromPlan(source, 'src', {}).rl.settings.dropEqualRewardGroups, false);
});

test('--validation N [--validate-every K]: checked before anything starts, counted against --no-curriculum, carried by --rl-from', () => {
  assert.equal(demoPlan({}).rl.validation, null, 'off by default');
  assert.deepEqual(demoPlan({ validation: '32' }).rl.validation, { questions: 32, everyVersions: 2 });
  assert.deepEqual(demoPlan({ validation: '32', 'validate-every': '4' }).rl.validation, { questions: 32, everyVersions: 4 });
  assert.throws(() => demoPlan({ 'validate-every': '2' }), usage(/--validate-every chooses which versions --validation evaluates/));
  assert.throws(() => demoPlan({ validation: '0' }), usage(/--validation expects an integer between 1/));
  assert.throws(() => demoPlan({ validation: '8', 'validate-every': 'x' }), usage(/--validate-every expects an integer/));
  const source = demoPlan({ full: true });
  assert.deepEqual(rlFromPlan(source, 'src', { validation: '16' }).rl.validation, { questions: 16, everyVersions: 2 });
  assert.equal(rlFromPlan(source, 'src', {}).rl.validation, null);
  // 48 candidates, 8 steps × 16 in groups of 4 draw 32: 16 may be held back, 17 may not.
  assert.equal(rlFromPlan(source, 'src', { 'no-curriculum': true, validation: '16' }).rl.validation?.questions, 16);
  assert.throws(
    () => rlFromPlan(source, 'src', { 'no-curriculum': true, validation: '17' }),
    usage(/--no-curriculum: src has 48 training candidates \(--validation holds 17 back\)/),
  );
  const validated = rlFromPlan(source, 'src', { validation: '16' });
  assert.deepEqual(
    rlContinuePlan(validated, 'prev', { steps: '2' }).rl.validation,
    { questions: 16, everyVersions: 2 },
    'kept when continued',
  );
});

test('--train-hops: hop counts the run synthesizes, any with --dataset', () => {
  assert.deepEqual(demoPlan({ full: true, 'train-hops': '1' }).rl.trainHops, [1]);
  assert.equal(demoPlan({}).rl.trainHops, null);
  assert.throws(() => demoPlan({ 'train-hops': '2' }), usage(/--train-hops 2: this run synthesizes 1-hop questions only/));
  assert.deepEqual(demoPlan({ dataset: 'set.jsonl', 'train-hops': '3' }).rl.trainHops, [3]);
  assert.throws(() => demoPlan({ 'train-hops': '' }), usage(/--train-hops expects/));
});

test('--train-warm-start: the warm-start questions join the training pool, counted by --no-curriculum', () => {
  assert.equal(demoPlan({}).rl.trainWarmStart, false);
  assert.equal(demoPlan({ 'train-warm-start': true }).rl.trainWarmStart, true);
  assert.throws(() => demoPlan({ 'train-warm-start': true, 'warm-start': 'none' }), usage(/--train-warm-start .* without a warm start/));
  assert.throws(() => demoPlan({ 'no-curriculum': true, steps: '10' }), usage(/give --train-candidates 20 or more/));
  assert.equal(demoPlan({ 'no-curriculum': true, steps: '10', 'train-warm-start': true }).rl.curriculum, null, '8 + 24 ≥ 20');
  assert.throws(
    () => demoPlan({ 'no-curriculum': true, steps: '20', 'train-warm-start': true }),
    usage(/\(24 of them can be --train-warm-start's\); give --train-candidates 16 or more/),
  );
});

test('an --rl-from manifest holds the source phases before RL, marked reused, and resumes like any run', async () => {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'longhaul-rl-from-'));
  try {
    const sourcePlan = demoPlan({});
    const sourcePhases = new DemoPhases(home, createManifest(home, 'src', sourcePlan));
    for (const name of phasesBeforeRl.slice(0, -1)) await sourcePhases.run(name, async () => ({ name }));
    const plan = rlFromPlan(sourcePlan, 'src', { group: '8' });
    assert.throws(() => createManifestFrom(home, 'early', plan, readManifest(home, 'src')), usage(/has not finished evaluation-warm/));
    await sourcePhases.run('evaluation-warm', async () => ({ version: 26 }));
    await sourcePhases.run('rl', async () => ({ finalVersion: 32 }));

    const manifest = createManifestFrom(home, 'ablation', plan, readManifest(home, 'src'));
    assert.deepEqual(Object.keys(manifest.phases), [...phasesBeforeRl], "the source's RL is not taken over");
    assert.ok(Object.values(manifest.phases).every((phase) => phase.reusedFrom === 'src' && phase.seconds === 0));
    assert.throws(() => createManifestFrom(home, 'ablation', plan, readManifest(home, 'src')), usage(/exists already/));

    const resumed = readManifest(home, 'ablation');
    assert.equal(resumed.plan.rlFrom, 'src');
    assert.equal(resumed.plan.rl.settings.groupSize, 8);
    const skipped: string[] = [];
    const phases = new DemoPhases(home, resumed, (name, from) => skipped.push(`${name}<${from ?? ''}`));
    assert.deepEqual(await phases.run('evaluation-warm', async () => assert.fail('a reused phase does not run again')), { version: 26 });
    assert.deepEqual(skipped, ['evaluation-warm<src']);
    await phases.run('rl', async () => ({ finalVersion: 40 }));
    assert.deepEqual(
      phases.stageSeconds().map((row) => row.stage),
      ['rl'],
      'the stage table shows what this run ran, not the reused phases',
    );
    // An ablation of an ablation names the run that ran the phases.
    const second = createManifestFrom(home, 'ablation-2', rlFromPlan(resumed.plan, 'ablation', {}), readManifest(home, 'ablation'));
    assert.equal(second.phases['warm-start']?.reusedFrom, 'src');
  } finally {
    fs.rmSync(home, { recursive: true, force: true });
  }
});

test("--rl-continue: the continued run's plan with the RL flags given replaced; the warm start paired with is its source's", () => {
  const source = demoPlan({ full: true, steps: '6', 'sft-questions': '128', dataset: 'set.jsonl' });
  const ablation = rlFromPlan(source, 'src', { 'train-warm-start': true, 'no-curriculum': true, steps: '8' });
  const next = rlContinuePlan(ablation, 'ablation', { 'rl-continue': 'ablation', 'run-id': 'next', json: true, steps: '4' });
  assert.equal(next.rlFrom, 'src', 'the held-out gains pair with the warm start the ablation started from');
  assert.equal(next.rlContinue, 'ablation');
  assert.equal(next.rl.settings.maxSteps, 4);
  assert.equal(next.rl.trainWarmStart, true, "the ablation's settings carry over");
  assert.equal(next.rl.curriculum, null);
  for (const part of ['split', 'warmStart', 'evaluation', 'references', 'synthesis'] as const)
    assert.deepEqual(next[part], source[part], `${part} is the source's`);
  // A whole run continued: its own warm start; a continued run continued again keeps the first warm start.
  assert.equal(rlContinuePlan(source, 'src', {}).rlFrom, 'src');
  const third = rlContinuePlan(next, 'next', { lr: '1e-6' });
  assert.deepEqual([third.rlFrom, third.rlContinue, third.rl.hyperparameters.learningRate], ['src', 'next', 1e-6]);

  assert.throws(() => rlContinuePlan(ablation, 'ablation', { 'rl-from': 'src' }), usage(/leave out --rl-from/));
  assert.throws(() => rlContinuePlan(ablation, 'ablation', { 'sft-epochs': '2' }), usage(/--rl-continue reuses .* leave out --sft-epochs/));
  assert.throws(() => rlContinuePlan(demoPlan({ 'warm-start': 'none' }), 'bare', {}), usage(/bare has no warm start/));
  assert.throws(() => rlFromPlan(next, 'next', {}), usage(/continued ablation's RL; take the warm start of src \(--rl-from src\)/));
});

test('an --rl-continue manifest holds the phases before RL and the continued RL evaluation as its start, once that RL finished', async () => {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'longhaul-rl-continue-'));
  try {
    const sourcePlan = demoPlan({});
    const sourcePhases = new DemoPhases(home, createManifest(home, 'src', sourcePlan));
    for (const name of phasesBeforeRl) await sourcePhases.run(name, async () => ({ name }));
    const ablationPlan = rlFromPlan(sourcePlan, 'src', {});
    const ablation = new DemoPhases(home, createManifestFrom(home, 'ablation', ablationPlan, readManifest(home, 'src')));
    await ablation.run('rl', async () => ({ finalVersion: 40 }));
    const plan = rlContinuePlan(ablationPlan, 'ablation', {});
    assert.throws(
      () => createManifestContinuing(home, 'early', plan, readManifest(home, 'ablation')),
      usage(/has not finished evaluation-rl/),
    );
    await ablation.run('evaluation-rl', async () => ({ stage: 'rl', version: 40 }));

    const manifest = createManifestContinuing(home, 'next', plan, readManifest(home, 'ablation'));
    assert.deepEqual(Object.keys(manifest.phases), [...phasesBeforeRl, continuedEvaluationPhase]);
    assert.equal(manifest.phases['warm-start']?.reusedFrom, 'src', 'the run that ran the phase');
    assert.deepEqual(manifest.phases[continuedEvaluationPhase]?.result, { stage: 'rl', version: 40 });
    assert.equal(manifest.phases[continuedEvaluationPhase]?.reusedFrom, 'ablation');
    assert.deepEqual(continuedRuns(home, readManifest(home, 'next').plan), ['ablation']);
    assert.deepEqual(continuedRuns(home, ablationPlan), []);

    // A chain: the next link continues "next", whose own RL and evaluation are its own phases.
    const next = new DemoPhases(home, readManifest(home, 'next'));
    await next.run('rl', async () => ({ finalVersion: 44 }));
    await next.run('evaluation-rl', async () => ({ stage: 'rl', version: 44 }));
    const link = createManifestContinuing(home, 'link', rlContinuePlan(plan, 'next', {}), readManifest(home, 'next'));
    assert.deepEqual(link.phases[continuedEvaluationPhase]?.result, { stage: 'rl', version: 44 });
    assert.deepEqual(continuedRuns(home, link.plan), ['next', 'ablation']);
  } finally {
    fs.rmSync(home, { recursive: true, force: true });
  }
});
