/**
 * The learner (DESIGN §2, AReaL's fully asynchronous loop). Rollouts stream as trajectory
 * children; a new group is admitted only while AReaL's staleness bound allows it
 * (learner-admission.ts); training steps run on the gpu-train queue while rollouts continue
 * (`async`), or after a whole batch has been generated (`sync`, the baseline). State that must
 * survive is small and carried across continue-as-new; finished trajectories live in the Postgres
 * buffer.
 */
import {
  ParentClosePolicy,
  condition,
  continueAsNew,
  getExternalWorkflowHandle,
  patched,
  proxyActivities,
  setHandler,
  startChild,
  upsertSearchAttributes,
  workflowInfo,
  allHandlersFinished,
} from '@temporalio/workflow';
import { activityOptions } from './contracts/activity-options.js';
import {
  learnerStateQuery,
  pauseUpdate,
  resumeUpdate,
  setConfigUpdate,
  type GroupState,
  type LearnerActivities,
  type LearnerCarried,
  type LearnerInput,
  type LearnerResult,
  type LearnerState,
  type QuestionRow,
  type StepStats,
  type TrainActivities,
  type WeightSyncActivities,
  trainPhasesOf,
} from './contracts/learner.contract.js';
import { parseLearnerInput, parseLearnerSettings } from './contracts/learner.input.js';
import { requireTrainablePolicy, type PolicyCapabilitiesActivities } from './contracts/policy-capabilities.contract.js';
import { queuePrefixOf } from './contracts/queues.js';
import { searchAttributes } from './contracts/search-attributes.js';
import {
  interruptSignal,
  trajectoryFailedSignal,
  trajectoryFinishedSignal,
  type TrajectoryFailureReport,
  type TrajectoryReport,
} from './contracts/trajectory.contract.js';
import { mayAdmitGroup } from './learner-admission.js';
import {
  curriculumCounts,
  curriculumGroupQuestionId,
  curriculumReport,
  drawQuestion,
  emptyCurriculum,
  enterQuestion,
  pickQuestion,
  recordGroup,
} from './learner-curriculum.js';
import { childTrajectoryInput, trajectoryMetadata, trajectoryMetadataPatch, withRolloutSampling } from './trajectory-child.js';
import { validated } from './validated.js';
import { evaluationWorkflowType } from './contracts/evaluation.contract.js';
import { resultIdOf } from './contracts/schedules.contract.js';
import type { evaluation } from './evaluation.workflow.js';
import type { trajectory } from './trajectory.workflow.js';

/**
 * Patch: a group enters the learner's window before its first child starts. Learners started
 * earlier registered it after the last start, so a child that finished within the workflow task
 * resolving its last sibling's start reported to no group and the run stalled (issue 9, bug 5).
 */
const groupBeforeChildrenPatch = 'learner-group-before-children';

/**
 * Patch: the learner hears of a child that failed for good, from the child's handle (children it
 * started in this run) and from the child's `trajectoryFailed` signal (children of an earlier run,
 * before continue-as-new). Learners started earlier waited for a report that never came: the
 * group never settled and, at the end of the data, the run stalled (issue 14).
 */
const childFailurePatch = 'learner-child-failure';

/**
 * Patch: one admission pass starts at most a window's worth of groups (maxInflight / G), then the
 * learner settles groups, trains and checks its step count before admitting more. Learners started
 * earlier admitted for as long as admission held; with a staleness bound so loose that only
 * maxInflight limited it, children finishing during each start kept the pass going, and the learner
 * neither trained nor noticed it had reached maxSteps (found by `longhaul chaos`, issue 14).
 */
const boundedAdmissionPatch = 'learner-bounded-admission';

/** Patch: a learner with an `evaluation` request starts an abandoned evaluation child after every N-th version. */
const evaluateEveryPatch = 'learner-evaluate-every-n-versions';

/**
 * Patch: a learner with a `curriculum` draws its groups from an active set that refreshes as
 * questions are mastered or found too hard (learner-curriculum.ts). Only runs whose input has a
 * curriculum (none before it existed) take these paths.
 */
const curriculumPatch = 'learner-curriculum';

/**
 * Patch: an async learner starts a step as soon as a batch is ready, also between the groups of an
 * admission pass; a group's children start together (one workflow task instead of a round trip per
 * child); and a step releases stale trajectories while serving syncs, not after. Learners started
 * earlier admitted first: a signal that woke the loop while a step was publishing began a pass
 * (the new version had opened room), and the next step waited for all of it, a question load and G
 * child starts per group, one after the other. `longhaul bench async` measured those waits as 1–6 s
 * of trainer idle time per step at load 20, with a full batch ready (issue 12).
 */
const trainBeforeAdmissionPatch = 'learner-train-before-admission';

/**
 * Patch: the learner counts as ready exactly the trajectories a claim can take: reported, of settled
 * kept groups, not consumed, and within η versions of the current one (from the oldest version each
 * one reported). Learners started earlier kept a running count that added every settled group, stale
 * or not, and subtracted every stale drop of the buffer, also drops of finished children whose group
 * had not settled (never counted): a group passed over by the freshest-first claim stayed counted
 * after it went stale, so steps were claimed with less than a batch there (issue 12).
 */
const freshReadyPatch = 'learner-fresh-ready';

/**
 * Patch: the curriculum's n-th group of a question samples with seeds n·G … n·G + G − 1. Learners
 * started earlier gave every group of a question seeds 0 … G − 1, so two groups of it started at the
 * same policy version were the same text sample by sample (s19 demo: q2's groups 0 and 1 gave the
 * same four answers), a group's worth of rollouts spent on a copy that counted twice in the batch.
 */
const distinctGroupSeedsPatch = 'learner-distinct-group-seeds';

export async function learner(raw: LearnerInput): Promise<LearnerResult> {
  const input = validated(() => parseLearnerInput(raw));
  const { workflowId, taskQueue } = workflowInfo();
  const prefix = queuePrefixOf(taskQueue);
  const options = activityOptions(prefix);
  const learnerActivities = proxyActivities<LearnerActivities>(options.bookkeeping);
  const trainer = proxyActivities<TrainActivities>(options.train);
  const inference = proxyActivities<WeightSyncActivities & PolicyCapabilitiesActivities>(options.weightSync);
  let run: LearnerCarried = raw.carried ?? {
    version: input.startVersion,
    step: 0,
    started: 0,
    nextQuestion: 0,
    finished: 0,
    dropped: 0,
    consumed: 0,
    groups: [],
    busyMs: 0,
    startedAtMs: Date.now(),
    history: [],
    paused: false,
    settings: input.settings,
    oldestVersions: {},
    ready: 0,
  };
  const groupBeforeChildren = patched(groupBeforeChildrenPatch);
  const hearsOfFailures = patched(childFailurePatch);
  const boundedAdmission = patched(boundedAdmissionPatch);
  const trainBeforeAdmission = patched(trainBeforeAdmissionPatch);
  const distinctGroupSeeds = patched(distinctGroupSeedsPatch);
  const countsFreshReady = patched(freshReadyPatch);
  const curriculum = input.curriculum !== undefined && patched(curriculumPatch) ? input.curriculum : undefined;
  /** Training steps taken in this execution (continue-as-new after input.stepsPerExecution of them). */
  let stepsThisExecution = 0;
  let training = false;
  let changed = false;
  let questionsLeft = true;
  const wake = () => {
    changed = true;
  };

  const inflight = () => run.groups.reduce((count, group) => count + group.rewards.filter((reward) => reward === null).length, 0);
  /** Settled, kept trajectories outside the window: within η versions (what a claim can take) or past it. */
  const settledOutsideWindow = () => {
    const inWindow = new Set(run.groups.flatMap((group) => group.children));
    const fresh: string[] = [];
    const stale: string[] = [];
    for (const [id, oldest] of Object.entries(run.oldestVersions)) {
      if (!inWindow.has(id)) (run.version - oldest <= run.settings.eta ? fresh : stale).push(id);
    }
    return { fresh, stale };
  };
  /** With the fresh-ready patch: how many a claim can take. */
  const freshReady = () => settledOutsideWindow().fresh.length;
  /** The same, pruned: settled trajectories past η left the buffer (releaseStaleTrajectories) and are forgotten here. */
  const recountReady = () => {
    const { fresh, stale } = settledOutsideWindow();
    const gone = new Set(stale);
    run = { ...run, oldestVersions: omit(run.oldestVersions, gone), rewards: omit(run.rewards ?? {}, gone), ready: fresh.length };
  };
  const busyFraction = () => {
    const elapsed = Date.now() - run.startedAtMs;
    return elapsed > 0 ? run.busyMs / elapsed : 0;
  };
  const state = (): LearnerState => ({
    runId: input.runId,
    mode: run.settings.mode,
    version: run.version,
    step: run.step,
    inflight: inflight(),
    finished: run.finished,
    ready: run.ready,
    dropped: run.dropped,
    consumed: run.consumed,
    failed: run.failed ?? 0,
    paused: run.paused,
    training,
    trainerBusy: busyFraction(),
    history: run.history,
    ...(run.curriculum ? { curriculum: curriculumReport(run.curriculum) } : {}),
  });

  /** A child's report: its reward goes into its group's slot, and its oldest token version is kept for the staleness of the step that trains on it. */
  function recordReport(report: TrajectoryReport): void {
    const groups = run.groups.map((group) => {
      const index = group.children.indexOf(report.trajectoryId);
      if (index < 0 || group.rewards[index] !== null) return group;
      return { ...group, rewards: group.rewards.map((reward, position) => (position === index ? report.reward : reward)) };
    });
    run = {
      ...run,
      groups,
      finished: run.finished + 1,
      oldestVersions: { ...run.oldestVersions, [report.trajectoryId]: Math.min(run.version, ...report.versionsUsed) },
      rewards: { ...run.rewards, [report.trajectoryId]: report.reward },
    };
    wake();
  }

  /** A child failed for good: its slot is filled (reward 0, never trained on) and it is counted; its group is dropped when it settles. */
  function recordFailure(report: TrajectoryFailureReport): void {
    const owner = run.groups.find((group) => group.children.includes(report.trajectoryId));
    if (!owner || owner.rewards[owner.children.indexOf(report.trajectoryId)] !== null) return; // settled, or heard already
    const groups = run.groups.map((group) =>
      group !== owner
        ? group
        : {
            ...group,
            rewards: group.rewards.map((reward, position) => (group.children[position] === report.trajectoryId ? 0 : reward)),
            failed: [...(group.failed ?? []), report.trajectoryId],
          },
    );
    run = { ...run, groups, failed: (run.failed ?? 0) + 1 };
    wake();
  }

  setHandler(learnerStateQuery, state);
  setHandler(pauseUpdate, () => {
    run = { ...run, paused: true };
    wake();
    return state();
  });
  setHandler(resumeUpdate, () => {
    run = { ...run, paused: false };
    wake();
    return state();
  });
  setHandler(
    setConfigUpdate,
    (patch) => {
      run = { ...run, settings: parseLearnerSettings({ ...run.settings, ...patch }) };
      wake();
      return state();
    },
    {
      validator: (patch) => {
        validated(() => parseLearnerSettings({ ...run.settings, ...(patch as object) }));
      },
    },
  );
  setHandler(trajectoryFinishedSignal, recordReport);
  if (hearsOfFailures) setHandler(trajectoryFailedSignal, recordFailure);
  // Refuse bad hyperparameters now, not at the first trainStep after a whole batch of rollouts.
  if (raw.carried === undefined && patched('check-hyperparameters')) {
    await trainer.checkHyperparameters({
      kind: 'rl',
      groupSize: run.settings.groupSize,
      eta: run.settings.eta,
      hyperparameters: raw.hyperparameters ?? {},
    });
  }
  // RL rollouts sample (temperature rlRolloutTemperature unless the run sets one): greedy groups never differ.
  const rolloutSettings = patched('rl-samples-by-default') ? withRolloutSampling(raw.trajectory) : raw.trajectory;
  upsertSearchAttributes([
    { key: searchAttributes.kind, value: 'learner' },
    { key: searchAttributes.runId, value: input.runId },
    { key: searchAttributes.status, value: 'running' },
    { key: searchAttributes.policyVersion, value: run.version },
  ]);

  /** Groups of dataset line `index` still in the window (some child not reported). */
  const inflightGroupsOf = (index: number) => run.groups.filter((group) => group.questionIndex === index).length;

  /** Fill the curriculum's active set with unused questions of the dataset, as far as it has them. */
  async function refillCurriculum(): Promise<void> {
    if (!curriculum) return;
    while (run.curriculum && run.curriculum.active.length < curriculum.activeSize && !run.curriculum.exhausted) {
      const index = run.nextQuestion;
      const question = await learnerActivities.loadQuestion({ datasetKey: input.datasetKey, index });
      const current = run.curriculum;
      run = question
        ? { ...run, nextQuestion: index + 1, curriculum: enterQuestion(current, index, question.id) }
        : { ...run, curriculum: { ...current, exhausted: true } };
    }
    questionsLeft = run.curriculum !== undefined && run.curriculum.active.length > 0;
  }

  /** The next group's question: the dataset's next line, or the curriculum's pick of its active set. */
  async function nextGroupQuestion(): Promise<{ question: QuestionRow; index: number; groupId: string; draw: number } | undefined> {
    if (!curriculum || !run.curriculum) {
      const question = await learnerActivities.loadQuestion({ datasetKey: input.datasetKey, index: run.nextQuestion });
      return question ? { question, index: run.nextQuestion, groupId: `${input.runId}-q${run.nextQuestion}`, draw: 0 } : undefined;
    }
    const picked = pickQuestion(run.curriculum, inflightGroupsOf);
    if (!picked) return undefined;
    const question = await learnerActivities.loadQuestion({ datasetKey: input.datasetKey, index: picked.index });
    if (!question) return undefined;
    return {
      question: { ...question, id: curriculumGroupQuestionId(question.id, picked.groups) },
      index: picked.index,
      groupId: `${input.runId}-q${picked.index}-g${picked.groups}`,
      draw: picked.groups,
    };
  }

  async function startGroup(): Promise<boolean> {
    const next = await nextGroupQuestion();
    if (!next) {
      questionsLeft = false;
      return false;
    }
    const { question, groupId } = next;
    const children = Array.from({ length: run.settings.groupSize }, (_, sample) => `${groupId}-s${sample}`);
    const group: GroupState = { groupId, questionIndex: next.index, children, rewards: children.map(() => null) };
    const enter = () => {
      run = run.curriculum
        ? { ...run, curriculum: drawQuestion(run.curriculum, next.index) }
        : { ...run, nextQuestion: run.nextQuestion + 1 };
      run = { ...run, started: run.started + children.length, groups: [...run.groups, group] };
    };
    // The group is in the window before any child can report to it (signals of a workflow task are
    // delivered before the child starts it resolves).
    if (groupBeforeChildren) enter();
    const startOne = async (sample: number, childId: string) => {
      const childInput = childTrajectoryInput({
        question,
        runId: input.runId,
        datasetKey: input.datasetKey,
        policyVersion: run.version,
        sample,
        ...(distinctGroupSeeds && next.draw > 0 ? { seedOffset: next.draw * run.settings.groupSize } : {}),
        settings: rolloutSettings,
        reportTo: workflowId,
      });
      const child = await startChild<typeof trajectory>('trajectory', {
        workflowId: childId,
        args: [childInput],
        parentClosePolicy: ParentClosePolicy.ABANDON,
        // What the child is and where to read it, in the Web UI; behind a patch so earlier histories replay.
        ...(patched(trajectoryMetadataPatch) ? trajectoryMetadata({ workflowId: childId, ...childInput, sample }) : {}),
      });
      // A child that fails, times out or is terminated while this run lasts is heard of here; a
      // success reports by signal (which survives continue-as-new) and is ignored here.
      if (hearsOfFailures)
        void child.result().then(
          () => undefined,
          (error: unknown) => recordFailure({ trajectoryId: childId, runId: input.runId, message: failureMessage(error) }),
        );
    };
    if (trainBeforeAdmission) await Promise.all(children.map((childId, sample) => startOne(sample, childId)));
    else for (const [sample, childId] of children.entries()) await startOne(sample, childId);
    if (!groupBeforeChildren) enter();
    return true;
  }

  /** Finished groups leave the window; all-equal-reward groups are dropped from the buffer. */
  async function settleGroups(): Promise<void> {
    const done = run.groups.filter((group) => group.rewards.every((reward) => reward !== null));
    if (done.length === 0) return;
    // A group with a failed child is incomplete (no advantage baseline, and the buffer only claims whole groups): drop it.
    const broken = done.filter((group) => (group.failed ?? []).length > 0);
    const equalGroups = run.settings.dropEqualRewardGroups
      ? done.filter((group) => !broken.includes(group) && new Set(group.rewards).size === 1)
      : [];
    const useless = [...broken, ...equalGroups];
    const uselessIds = new Set(useless.flatMap((group) => group.children));
    const failedIds = new Set(broken.flatMap((group) => group.failed ?? []));
    const brokenIds = broken.flatMap((group) => group.children.filter((id) => !failedIds.has(id)));
    if (brokenIds.length > 0)
      await learnerActivities.dropTrajectories({
        runId: input.runId,
        trajectoryIds: brokenIds,
        reason: 'a trajectory of the group failed',
      });
    const equalIds = equalGroups.flatMap((group) => group.children);
    if (equalIds.length > 0)
      await learnerActivities.dropTrajectories({ runId: input.runId, trajectoryIds: equalIds, reason: 'equal rewards in group' });
    const kept = done.filter((group) => !useless.includes(group)).reduce((count, group) => count + group.children.length, 0);
    const equal = done.filter((group) => !broken.includes(group) && new Set(group.rewards).size === 1).length;
    const add = (counts = { settled: 0, equal: 0 }) => ({ settled: counts.settled + done.length, equal: counts.equal + equal });
    run = {
      ...run,
      groupsSinceStep: add(run.groupsSinceStep),
      groupsTotal: add(run.groupsTotal),
      oldestVersions: omit(run.oldestVersions, uselessIds),
      rewards: omit(run.rewards ?? {}, uselessIds),
      groups: run.groups.filter((group) => !done.includes(group)),
      ready: run.ready + kept,
      dropped: run.dropped + uselessIds.size,
    };
    if (countsFreshReady) run = { ...run, ready: freshReady() };
    if (curriculum && run.curriculum) {
      // Whole groups only (a failed child leaves no pass rate), in the order they entered the window.
      let updated = run.curriculum;
      for (const group of done)
        if (!broken.includes(group))
          updated = recordGroup(updated, group.questionIndex, group.rewards as readonly number[], curriculum).state;
      run = { ...run, curriculum: updated };
      await refillCurriculum();
    }
  }

  function admissible(): boolean {
    return mayAdmitGroup(
      {
        started: run.started,
        dropped: run.dropped,
        inflight: inflight(),
        ready: run.ready,
        version: run.version,
        startVersion: input.startVersion,
        training,
        paused: run.paused,
        questionsLeft,
      },
      run.settings,
    );
  }

  async function trainOnce(): Promise<void> {
    training = true;
    try {
      const { eta, batchSize, groupSize, selection } = run.settings;
      const claim = await learnerActivities.claimBatch({
        runId: input.runId,
        step: run.step,
        batchSize,
        currentVersion: run.version,
        eta,
        selection,
        minGroupSize: groupSize,
      });
      if (claim.trajectoryIds.length === 0) {
        // None eligible: what is ready is too stale. Drop it for good and wait for fresh groups.
        const stale = await learnerActivities.releaseStaleTrajectories({ runId: input.runId, currentVersion: run.version, eta });
        run = { ...run, ready: 0, dropped: run.dropped + stale.dropped };
        if (countsFreshReady) recountReady();
        return;
      }
      // A short claim (some went stale) is trained on as it is: claimed trajectories are never given back.
      const startedAt = Date.now();
      const result = await trainer.trainStep({
        runId: input.runId,
        step: run.step,
        trajectoryIds: claim.trajectoryIds,
        baseVersion: run.version,
        outputVersion: run.version + 1,
        groupSize,
        eta,
        hyperparameters: raw.hyperparameters ?? {},
      });
      const trainMs = Date.now() - startedAt;
      const trainPhases = trainPhasesOf(result.metrics);
      const batchRewards = claim.trajectoryIds.map((id) => run.rewards?.[id]).filter((reward): reward is number => reward !== undefined);
      // Serving switches to the new version before in-flight trajectories hear of it (publish), so
      // what they resubmit runs on it. Learners started before weight sync replay without the call.
      const sync = () => (patched('weight-sync') ? inference.syncWeights({ runId: input.runId, version: result.version }) : undefined);
      // Trajectories that outlived η versions at the new version leave the buffer; with the patch, while serving syncs.
      const releaseStale = () =>
        learnerActivities.releaseStaleTrajectories({ runId: input.runId, currentVersion: result.version, eta: run.settings.eta });
      const early = trainBeforeAdmission ? releaseStale() : undefined;
      const synced = await sync();
      const staleness = Math.max(0, ...claim.trajectoryIds.map((id) => run.version - (run.oldestVersions[id] ?? run.version)));
      const consumed = new Set(claim.trajectoryIds);
      const stats: StepStats = {
        step: run.step,
        version: result.version,
        trainSeconds: trainMs / 1000,
        finishedAtMs: Date.now(),
        maxStaleness: staleness,
        ...(synced ? { syncSeconds: synced.seconds } : {}),
        ...(synced?.phases ? { syncPhases: synced.phases } : {}),
        meanReward: batchRewards.length ? batchRewards.reduce((sum, reward) => sum + reward, 0) / batchRewards.length : 0,
        ...(run.groupsSinceStep && run.groupsSinceStep.settled > 0
          ? { zeroAdvantageGroupShare: run.groupsSinceStep.equal / run.groupsSinceStep.settled, groupsSettled: run.groupsSinceStep.settled }
          : {}),
        ...(run.curriculum ? { curriculum: curriculumCounts(run.curriculum) } : {}),
        ...(trainPhases ? { trainPhases } : {}),
      };
      stepsThisExecution += 1;
      run = {
        ...run,
        oldestVersions: omit(run.oldestVersions, consumed),
        rewards: omit(run.rewards ?? {}, consumed),
        version: result.version,
        step: run.step + 1,
        consumed: run.consumed + consumed.size,
        ready: Math.max(0, run.ready - consumed.size),
        busyMs: run.busyMs + trainMs,
        history: [...run.history, stats],
        groupsSinceStep: { settled: 0, equal: 0 },
      };
      upsertSearchAttributes([
        { key: searchAttributes.policyVersion, value: run.version },
        { key: searchAttributes.meanReward, value: stats.meanReward },
      ]);
      const released = await (early ?? releaseStale());
      if (released.dropped > 0) run = { ...run, dropped: run.dropped + released.dropped, ready: Math.max(0, run.ready - released.dropped) };
      if (countsFreshReady) recountReady();
      await publish();
      if (input.evaluation && run.version % input.evaluation.everyVersions === 0 && patched(evaluateEveryPatch))
        await requestEvaluation(run.version);
    } finally {
      training = false;
      wake();
    }
  }

  /**
   * Start the evaluation of `version` and go on at once: only its start is awaited, and ABANDON lets it
   * outlive this run (continue-as-new or the end of training).
   */
  async function requestEvaluation(version: number): Promise<void> {
    const { everyVersions: _every, ...settings } = input.evaluation!;
    const resultId = resultIdOf(`${input.runId}-v${version}`);
    await startChild<typeof evaluation>(evaluationWorkflowType, {
      workflowId: `evaluation-${resultId}`,
      parentClosePolicy: ParentClosePolicy.ABANDON,
      args: [{ ...settings, resultId, policyVersion: version, runId: input.runId }],
    });
  }

  /** Tell in-flight trajectories about the new version; they resubmit generations under it. */
  async function publish(): Promise<void> {
    const running = run.groups.flatMap((group) => group.children.filter((_, index) => group.rewards[index] === null));
    await Promise.all(
      running.map(async (childId) => {
        const handle = getExternalWorkflowHandle(childId);
        try {
          if (run.settings.interruptOnPublish) await handle.signal(interruptSignal);
        } catch {
          /* the child may have finished meanwhile */
        }
      }),
    );
  }

  // Refuse at once a policy backend whose trajectories could not be trained on (no token ids or logprobs).
  if (raw.carried === undefined && patched('policy-capabilities')) requireTrainablePolicy(await inference.policyCapabilities());
  if (curriculum && !run.curriculum) run = { ...run, curriculum: emptyCurriculum() };
  await refillCurriculum();
  let trainerRun: Promise<void> | undefined;
  /**
   * A step runs beside admission and is awaited only at the end: its failure (a trainStep refused as
   * invalid input, after the activity's retries) is kept here and fails the run on the next pass. Left
   * unhandled it failed every workflow task instead, and the run hung at its step (session 20).
   */
  let trainerFailure: { error: unknown } | undefined;
  const startTraining = () => {
    trainerRun = trainOnce().catch((error: unknown) => {
      trainerFailure = { error };
      wake();
    });
  };
  while (run.step < run.settings.maxSteps) {
    changed = false;
    if (trainerFailure) throw trainerFailure.error;
    await settleGroups();
    const { mode, batchSize, groupSize } = run.settings;
    if (mode === 'async') {
      // With the patch a step starts only while the run has steps left (a pass may outlast the last one).
      const mayTrain = () => !training && run.ready >= batchSize && (!trainBeforeAdmission || run.step < run.settings.maxSteps);
      if (trainBeforeAdmission && mayTrain()) startTraining();
      const perPass = boundedAdmission ? Math.max(1, Math.ceil(run.settings.maxInflight / groupSize)) : Infinity;
      for (let admitted = 0; admitted < perPass && admissible(); admitted += 1) {
        // A step that became possible during the pass (the previous one finished) starts before the next group.
        if (trainBeforeAdmission && mayTrain()) startTraining();
        if (!(await startGroup())) break;
      }
      if (mayTrain()) startTraining();
    } else if (!training) {
      // sync: generate a whole batch, wait for all of it, then train while nothing generates
      if (run.groups.length === 0 && run.ready < batchSize && !run.paused) {
        for (let count = 0; count < batchSize && questionsLeft; count += groupSize) await startGroup();
      } else if (run.groups.length === 0 && run.ready >= batchSize) {
        startTraining();
      }
    }
    if (!training && run.groups.length === 0 && !questionsLeft && run.ready < batchSize) break; // out of data
    const executionFull = input.stepsPerExecution !== undefined && stepsThisExecution >= input.stepsPerExecution;
    if (!training && (workflowInfo().continueAsNewSuggested || executionFull)) {
      await condition(allHandlersFinished);
      await continueAsNew<typeof learner>({ ...raw, carried: run });
    }
    await condition(() => changed);
  }
  await trainerRun;
  if (trainerFailure) throw trainerFailure.error;
  const wallSeconds = (Date.now() - run.startedAtMs) / 1000;
  upsertSearchAttributes([{ key: searchAttributes.status, value: 'completed' }]);
  return {
    runId: input.runId,
    mode: run.settings.mode,
    steps: run.step,
    finalVersion: run.version,
    consumed: run.consumed,
    dropped: run.dropped,
    failed: run.failed ?? 0,
    samplesPerHour: wallSeconds > 0 ? (run.consumed / wallSeconds) * 3600 : 0,
    trainerBusy: busyFraction(),
    maxStaleness: Math.max(0, ...run.history.map((stats) => stats.maxStaleness)),
    wallSeconds,
    history: run.history,
    ...(run.groupsTotal && run.groupsTotal.settled > 0 ? { zeroAdvantageGroupShare: run.groupsTotal.equal / run.groupsTotal.settled } : {}),
    ...(run.curriculum ? { curriculum: curriculumReport(run.curriculum) } : {}),
  };
}

function failureMessage(error: unknown): string {
  const cause = (error as { cause?: { message?: string } }).cause?.message;
  const message = error instanceof Error ? error.message : String(error);
  return (cause ? `${message}: ${cause}` : message).slice(0, 500);
}

/** The per-trajectory bookkeeping without the trajectories that left the buffer (consumed or dropped). */
function omit<T>(byId: Readonly<Record<string, T>>, ids: ReadonlySet<string>): Record<string, T> {
  return Object.fromEntries(Object.entries(byId).filter(([id]) => !ids.has(id)));
}

export type { GroupState };
