/**
 * The warm start (issue 5 item 5; contract in contracts/warm-start.contract.ts): collect validated
 * trajectories as children (gold paths by teacher forcing, or rejection sampling), keep those whose
 * reward clears `minReward`, then `sftStep` on the gpu-train queue, one new policy version per
 * chunk of kept trajectories. A crash anywhere resumes from history: finished children are not
 * rerun, and a published step is found again by (runId, step) instead of being trained twice.
 */
import {
  ParentClosePolicy,
  patched,
  proxyActivities,
  setHandler,
  startChild,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import { activityOptions } from './contracts/activity-options.js';
import type { LearnerActivities } from './contracts/learner.contract.js';
import { queuePrefixOf } from './contracts/queues.js';
import { searchAttributes } from './contracts/search-attributes.js';
import type { TrajectoryInput, TrajectoryResult } from './contracts/trajectory.contract.js';
import {
  warmStartStateQuery,
  type SftActivities,
  type WarmStartInput,
  type WarmStartPhase,
  type WarmStartResult,
  type WarmStartState,
  type WarmStartStep,
} from './contracts/warm-start.contract.js';
import { parseWarmStartInput } from './contracts/warm-start.input.js';
import { childTrajectoryInput, trajectoryMetadata, trajectoryMetadataPatch } from './trajectory-child.js';
import { validated } from './validated.js';
import type { trajectory } from './trajectory.workflow.js';

export async function warmStart(raw: WarmStartInput): Promise<WarmStartResult> {
  const input = validated(() => parseWarmStartInput(raw));
  const { settings } = input;
  const prefix = queuePrefixOf(workflowInfo().taskQueue);
  const options = activityOptions(prefix);
  const act = proxyActivities<Pick<LearnerActivities, 'loadQuestion'>>(options.bookkeeping);
  const train = proxyActivities<SftActivities>(options.train);
  const startedAtMs = Date.now();
  let phase: WarmStartPhase = 'collecting';
  let questions = 0;
  let started = 0;
  let skipped = 0;
  let version = input.startVersion;
  const rewards: number[] = [];
  const kept: string[] = [];
  const steps: WarmStartStep[] = [];
  const state = (): WarmStartState => ({
    runId: input.runId,
    phase,
    source: settings.source,
    questions,
    started,
    finished: rewards.length,
    kept: kept.length,
    skipped,
    version,
    steps,
  });
  setHandler(warmStartStateQuery, state);
  // Refuse bad hyperparameters now, not at the first sftStep after every trajectory has run.
  if (patched('check-hyperparameters')) await train.checkHyperparameters({ kind: 'sft', hyperparameters: raw.hyperparameters ?? {} });
  upsertSearchAttributes([
    { key: searchAttributes.kind, value: 'warm-start' },
    { key: searchAttributes.runId, value: input.runId },
    { key: searchAttributes.status, value: 'running' },
    { key: searchAttributes.policyVersion, value: version },
  ]);

  // Collect: a bounded pool of trajectory children.
  const running = new Set<Promise<void>>();
  const launch = async (childId: string, child: TrajectoryInput) => {
    started += 1;
    const handle = await startChild<typeof trajectory>('trajectory', {
      workflowId: childId,
      args: [child],
      parentClosePolicy: ParentClosePolicy.TERMINATE,
      // What the child is and where to read it, in the Web UI; behind a patch so earlier histories replay.
      ...(patched(trajectoryMetadataPatch) ? trajectoryMetadata({ workflowId: childId, ...child }) : {}),
    });
    const done: Promise<void> = handle
      .result()
      .then(
        (result: TrajectoryResult) => {
          rewards.push(result.reward);
          if (result.reward >= settings.minReward) kept.push(result.trajectoryId);
        },
        () => {
          rewards.push(Number.NaN);
        }, // a failed child is counted, never kept
      )
      .finally(() => {
        running.delete(done);
      });
    running.add(done);
  };
  for (let index = 0; index < settings.maxQuestions; index += 1) {
    const question = await act.loadQuestion({ datasetKey: input.datasetKey, index });
    if (!question) break;
    questions += 1;
    const gold = settings.source === 'gold';
    if (gold && !question.goldTurns?.length) {
      skipped += 1;
      continue;
    }
    const samples = gold ? 1 : settings.samplesPerQuestion;
    for (let sample = 0; sample < samples; sample += 1) {
      while (running.size >= settings.concurrency) await Promise.race(running);
      await launch(
        `${input.runId}-q${index}-s${sample}`,
        childTrajectoryInput({
          question,
          runId: input.runId,
          datasetKey: input.datasetKey,
          policyVersion: version,
          sample,
          settings: raw.trajectory,
          ...(gold ? { forcedTurns: question.goldTurns } : {}),
        }),
      );
    }
  }
  await Promise.all(running);
  kept.sort(); // completion order varies between runs; the batch of a step must not

  // Train: one sftStep (one version) per chunk of kept trajectories.
  phase = 'training';
  for (let start = 0, step = 0; start < kept.length; start += settings.trajectoriesPerStep, step += 1) {
    const trajectoryIds = kept.slice(start, start + settings.trajectoriesPerStep);
    const stepStarted = Date.now();
    const result = await train.sftStep({
      runId: input.runId,
      step,
      trajectoryIds,
      baseVersion: version,
      outputVersion: version + 1,
      hyperparameters: raw.hyperparameters ?? {},
    });
    version = result.version;
    steps.push({
      step,
      version,
      trajectories: trajectoryIds.length,
      trainSeconds: (Date.now() - stepStarted) / 1000,
      metrics: result.metrics,
    });
    upsertSearchAttributes([{ key: searchAttributes.policyVersion, value: version }]);
  }
  phase = 'done';
  const scored = rewards.filter((reward) => Number.isFinite(reward));
  upsertSearchAttributes([{ key: searchAttributes.status, value: 'completed' }]);
  return {
    ...state(),
    startVersion: input.startVersion,
    finalVersion: version,
    meanReward: scored.length ? scored.reduce((a, b) => a + b, 0) / scored.length : 0,
    wallSeconds: (Date.now() - startedAtMs) / 1000,
  };
}
