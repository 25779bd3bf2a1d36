/**
 * The learner (DESIGN §2, AReaL's fully asynchronous loop). Rollouts stream as trajectory
 * children; a new group is admitted only while started ≤ (version + η + 1) × batchSize; training
 * steps run on the gpu-train queue while rollouts continue (`async`), or after a whole batch has
 * been generated (`sync`, the baseline). State that must survive is small and carried across
 * continue-as-new; finished trajectories live in the Postgres buffer.
 */
import {
  ParentClosePolicy, condition, continueAsNew, getExternalWorkflowHandle, patched, proxyActivities, setHandler,
  startChild, upsertSearchAttributes, workflowInfo, allHandlersFinished,
} from '@temporalio/workflow';
import { nonRetryableErrorTypes } from './contracts/errors.js';
import {
  learnerStateQuery, pauseUpdate, resumeUpdate, setConfigUpdate,
  type GroupState, type LearnerActivities, type LearnerCarried, type LearnerInput, type LearnerResult, type LearnerState, type StepStats, type TrainActivities,
  type WeightSyncActivities,
} from './contracts/learner.contract.js';
import { parseLearnerInput, parseLearnerSettings } from './contracts/learner.input.js';
import { queuePrefixOf, taskQueueName } from './contracts/queues.js';
import { searchAttributes } from './contracts/search-attributes.js';
import { interruptSignal, trajectoryFinishedSignal, type TrajectoryInput } from './contracts/trajectory.contract.js';
import { validated } from './validated.js';
import type { trajectory } from './trajectory.workflow.js';

const retry = { initialInterval: '1s', maximumInterval: '30s', nonRetryableErrorTypes: [...nonRetryableErrorTypes] };


export async function learner(raw: LearnerInput): Promise<LearnerResult> {
  const input = validated(() => parseLearnerInput(raw));
  const { workflowId, taskQueue } = workflowInfo();
  const prefix = queuePrefixOf(taskQueue);
  const act = proxyActivities<LearnerActivities>({ startToCloseTimeout: '2 minutes', retry });
  const train = proxyActivities<TrainActivities>({ taskQueue: taskQueueName('gpu-train', prefix), startToCloseTimeout: '6 hours', heartbeatTimeout: '2 minutes', retry });
  const infer = proxyActivities<WeightSyncActivities>({ taskQueue: taskQueueName('gpu-infer', prefix), startToCloseTimeout: '30 minutes', heartbeatTimeout: '1 minute', retry });
  let s: LearnerCarried = raw.carried ?? {
    version: input.startVersion, step: 0, started: 0, nextQuestion: 0, finished: 0, dropped: 0, consumed: 0, groups: [], busyMs: 0,
    startedAtMs: Date.now(), history: [], paused: false, settings: input.settings, oldestVersions: {}, ready: 0,
  };
  let training = false;
  let changed = false;
  let questionsLeft = true;
  const wake = () => { changed = true; };

  const inflight = () => s.groups.reduce((count, group) => count + group.rewards.filter((reward) => reward === null).length, 0);
  /** Trajectories of settled (complete, kept) groups not yet trained on: what claimBatch can return. */
  const ready = () => s.ready;
  const state = (): LearnerState => ({
    runId: input.runId, mode: s.settings.mode, version: s.version, step: s.step, inflight: inflight(), finished: s.finished, ready: ready(),
    dropped: s.dropped, consumed: s.consumed, paused: s.paused, training, trainerBusy: busyFraction(), history: s.history,
  });
  const busyFraction = () => {
    const elapsed = Date.now() - s.startedAtMs;
    return elapsed > 0 ? s.busyMs / elapsed : 0;
  };

  setHandler(learnerStateQuery, state);
  setHandler(pauseUpdate, () => { s = { ...s, paused: true }; wake(); return state(); });
  setHandler(resumeUpdate, () => { s = { ...s, paused: false }; wake(); return state(); });
  setHandler(setConfigUpdate, (patch) => {
    s = { ...s, settings: parseLearnerSettings({ ...s.settings, ...patch }) };
    wake();
    return state();
  }, { validator: (patch) => { validated(() => parseLearnerSettings({ ...s.settings, ...(patch as object) })); } });
  setHandler(trajectoryFinishedSignal, (result) => {
    const groups = s.groups.map((group) => {
      const index = group.children.indexOf(result.trajectoryId);
      if (index < 0 || group.rewards[index] !== null) return group;
      return { ...group, rewards: group.rewards.map((reward, position) => (position === index ? result.reward : reward)) };
    });
    s = {
      ...s, groups, finished: s.finished + 1, oldestVersions: { ...s.oldestVersions, [result.trajectoryId]: Math.min(s.version, ...result.versionsUsed) },
      rewards: { ...s.rewards, [result.trajectoryId]: result.reward },
    };
    wake();
  });
  // Refuse bad hyperparameters now, not at the first trainStep after a whole batch of rollouts.
  if (raw.carried === undefined && patched('check-hyperparameters')) await train.checkHyperparameters({ kind: 'rl', groupSize: s.settings.groupSize, hyperparameters: raw.hyperparameters ?? {} });
  upsertSearchAttributes([
    { key: searchAttributes.kind, value: 'learner' }, { key: searchAttributes.runId, value: input.runId },
    { key: searchAttributes.status, value: 'running' }, { key: searchAttributes.policyVersion, value: s.version },
  ]);

  async function startGroup(): Promise<boolean> {
    const question = await act.loadQuestion({ datasetKey: input.datasetKey, index: s.nextQuestion });
    if (!question) { questionsLeft = false; return false; }
    const groupId = `${input.runId}-q${s.nextQuestion}`;
    const children: string[] = [];
    for (let sample = 0; sample < s.settings.groupSize; sample += 1) {
      const childId = `${groupId}-s${sample}`;
      const childInput: TrajectoryInput = {
        question: question.question, answers: question.answers, questionId: question.id, dataset: input.datasetKey, runId: input.runId,
        policyVersion: s.version, reportTo: workflowId, ...(raw.trajectory?.limits ? { limits: raw.trajectory.limits } : {}),
        options: { ...(raw.trajectory?.options ?? {}), seed: (raw.trajectory?.options?.seed ?? 0) + sample },
        ...(raw.trajectory?.rewardMetric ? { rewardMetric: raw.trajectory.rewardMetric } : {}),
      };
      await startChild<typeof trajectory>('trajectory', { workflowId: childId, args: [childInput], parentClosePolicy: ParentClosePolicy.ABANDON });
      children.push(childId);
    }
    s = { ...s, nextQuestion: s.nextQuestion + 1, started: s.started + children.length,
      groups: [...s.groups, { groupId, questionIndex: s.nextQuestion, children, rewards: children.map(() => null) }] };
    return true;
  }

  /** Finished groups leave the window; all-equal-reward groups are dropped from the buffer. */
  async function settleGroups(): Promise<void> {
    const done = s.groups.filter((group) => group.rewards.every((reward) => reward !== null));
    if (done.length === 0) return;
    const useless = s.settings.dropEqualRewardGroups ? done.filter((group) => new Set(group.rewards).size === 1) : [];
    const uselessIds = new Set(useless.flatMap((group) => group.children));
    if (useless.length > 0) await act.dropTrajectories({ runId: input.runId, trajectoryIds: useless.flatMap((group) => group.children), reason: 'equal rewards in group' });
    const oldestVersions = omit(s.oldestVersions, uselessIds);
    const rewards = omit(s.rewards ?? {}, uselessIds);
    const kept = done.filter((group) => !useless.includes(group)).reduce((count, group) => count + group.children.length, 0);
    s = { ...s, oldestVersions, rewards, groups: s.groups.filter((group) => !done.includes(group)), ready: s.ready + kept, dropped: s.dropped + useless.reduce((count, group) => count + group.children.length, 0) };
  }

  function admissible(): boolean {
    const { groupSize, batchSize, eta, maxInflight } = s.settings;
    // AReaL's rule: a rollout may start only if it can be consumed while still within η versions.
    // Dropped trajectories never will be consumed, so they do not count against it.
    // With nothing in flight and too little ready, admit anyway: the rule must never stall the run.
    const starved = inflight() === 0 && !training && s.ready < batchSize;
    return !s.paused && questionsLeft && inflight() + groupSize <= maxInflight
      && (starved || s.started - s.dropped + groupSize <= (s.version - input.startVersion + eta + 1) * batchSize);
  }

  async function trainOnce(): Promise<void> {
    training = true;
    try {
      const claim = await act.claimBatch({ runId: input.runId, step: s.step, batchSize: s.settings.batchSize, currentVersion: s.version, eta: s.settings.eta, selection: s.settings.selection, minGroupSize: s.settings.groupSize });
      if (claim.trajectoryIds.length === 0) {
        // None eligible: what is ready is too stale. Drop it for good and wait for fresh groups.
        const stale = await act.releaseStaleTrajectories({ runId: input.runId, currentVersion: s.version, eta: s.settings.eta });
        s = { ...s, ready: 0, dropped: s.dropped + stale.dropped };
        return;
      }
      // A short claim (some went stale) is trained on as it is: claimed trajectories are never given back.
      const startedAt = Date.now();
      const result = await train.trainStep({
        runId: input.runId, step: s.step, trajectoryIds: claim.trajectoryIds, baseVersion: s.version, outputVersion: s.version + 1,
        groupSize: s.settings.groupSize, hyperparameters: raw.hyperparameters ?? {},
      });
      const trainMs = Date.now() - startedAt;
      const batchRewards = claim.trajectoryIds.map((id) => s.rewards?.[id]).filter((reward): reward is number => reward !== undefined);
      // Serving switches to the new version before in-flight trajectories hear of it (publish), so
      // what they resubmit runs on it. Learners started before weight sync replay without the call.
      const synced = patched('weight-sync') ? await infer.syncWeights({ runId: input.runId, version: result.version }) : undefined;
      const staleness = Math.max(0, ...claim.trajectoryIds.map((id) => s.version - (s.oldestVersions[id] ?? s.version)));
      const consumed = new Set(claim.trajectoryIds);
      const oldestVersions = omit(s.oldestVersions, consumed);
      const rewards = omit(s.rewards ?? {}, consumed);
      const stats: StepStats = {
        step: s.step, version: result.version, trainSeconds: trainMs / 1000, finishedAtMs: Date.now(), maxStaleness: staleness,
        ...(synced ? { syncSeconds: synced.seconds } : {}),
        meanReward: batchRewards.length ? batchRewards.reduce((a, b) => a + b, 0) / batchRewards.length : 0,
      };
      s = { ...s, oldestVersions, rewards, version: result.version, step: s.step + 1, consumed: s.consumed + claim.trajectoryIds.length, ready: Math.max(0, s.ready - claim.trajectoryIds.length), busyMs: s.busyMs + trainMs, history: [...s.history, stats] };
      upsertSearchAttributes([{ key: searchAttributes.policyVersion, value: s.version }, { key: searchAttributes.meanReward, value: stats.meanReward }]);
      const released = await act.releaseStaleTrajectories({ runId: input.runId, currentVersion: s.version, eta: s.settings.eta });
      if (released.dropped > 0) s = { ...s, dropped: s.dropped + released.dropped, ready: Math.max(0, s.ready - released.dropped) };
      await publish();
    } finally {
      training = false;
      wake();
    }
  }

  /** Tell in-flight trajectories about the new version; they resubmit generations under it. */
  async function publish(): Promise<void> {
    const running = s.groups.flatMap((group) => group.children.filter((_, index) => group.rewards[index] === null));
    await Promise.all(running.map(async (childId) => {
      const handle = getExternalWorkflowHandle(childId);
      try {
        if (s.settings.interruptOnPublish) await handle.signal(interruptSignal);
      } catch {
        /* the child may have finished meanwhile */
      }
    }));
  }

  let trainer: Promise<void> | undefined;
  while (s.step < s.settings.maxSteps) {
    changed = false;
    await settleGroups();
    if (s.settings.mode === 'async') {
      while (admissible()) if (!(await startGroup())) break;
      if (!training && ready() >= s.settings.batchSize) trainer = trainOnce();
    } else if (!training) {
      // sync: generate a whole batch, wait for all of it, then train while nothing generates
      if (s.groups.length === 0 && ready() < s.settings.batchSize && !s.paused) {
        for (let count = 0; count < s.settings.batchSize && questionsLeft; count += s.settings.groupSize) await startGroup();
      } else if (s.groups.length === 0 && ready() >= s.settings.batchSize) {
        trainer = trainOnce();
      }
    }
    if (!training && s.groups.length === 0 && !questionsLeft && ready() < s.settings.batchSize) break; // out of data
    if (!training && workflowInfo().continueAsNewSuggested) {
      await condition(allHandlersFinished);
      await continueAsNew<typeof learner>({ ...raw, carried: s });
    }
    await condition(() => changed);
  }
  await trainer;
  const wallSeconds = (Date.now() - s.startedAtMs) / 1000;
  upsertSearchAttributes([{ key: searchAttributes.status, value: 'completed' }]);
  return {
    runId: input.runId, mode: s.settings.mode, steps: s.step, finalVersion: s.version, consumed: s.consumed, dropped: s.dropped,
    samplesPerHour: wallSeconds > 0 ? (s.consumed / wallSeconds) * 3600 : 0, trainerBusy: busyFraction(),
    maxStaleness: Math.max(0, ...s.history.map((stats) => stats.maxStaleness)), wallSeconds, history: s.history,
  };
}

/** The per-trajectory bookkeeping without the trajectories that left the buffer (consumed or dropped). */
function omit<T>(byId: Readonly<Record<string, T>>, ids: ReadonlySet<string>): Record<string, T> {
  return Object.fromEntries(Object.entries(byId).filter(([id]) => !ids.has(id)));
}

export type { GroupState };
