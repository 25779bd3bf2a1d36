/**
 * Where a learner run's wall clock went, read from its Temporal history (every execution of the
 * continue-as-new chain): when each trajectory child started and finished, when each group settled,
 * and when each trainStep was scheduled and completed. For each wait of the trainer it says whether a
 * full batch of settled groups was already there (the learner was slow to use it) or not (generation
 * was behind), so a low trainer-busy figure can be pinned on one side or the other.
 */
import type { Client } from '@temporalio/client';
import type { BatchSelection } from '../workflows/contracts/learner.contract.js';

/** One trainer wait: from the end of the previous step (or the run's start) to this step's trainStep. */
export interface TrainerWait {
  readonly step: number;
  readonly fromSeconds: number;
  readonly seconds: number;
  /** Seconds of the wait during which settled, unconsumed groups held at least a batch. */
  readonly batchReadySeconds: number;
}

export interface LearnerTimeline {
  /** Seconds from the learner's start to its first trainStep (nothing to train on yet). */
  readonly firstStepSeconds: number;
  /** Seconds from the learner's start to the first group that settled. */
  readonly firstGroupSettledSeconds: number;
  /** Sum of the gaps between trainSteps, after the first. */
  readonly betweenStepsSeconds: number;
  /** Of those gaps, the seconds in which a full batch of settled groups was already waiting. */
  readonly betweenStepsBatchReadySeconds: number;
  readonly trainSeconds: number;
  readonly wallSeconds: number;
  readonly childrenStarted: number;
  readonly childrenFinished: number;
  /** Trajectories in flight, sampled at each step's start: mean and max. */
  readonly inflightMean: number;
  readonly inflightMax: number;
  /** The longest waits, longest first. */
  readonly longestWaits: readonly TrainerWait[];
}

/** The parts of a history event the timeline reads (a subset of Temporal's IHistoryEvent). */
export interface RawEvent {
  readonly eventId?: unknown;
  readonly eventTime?: { seconds?: unknown; nanos?: number | null } | null;
  readonly workflowExecutionStartedEventAttributes?: { continuedExecutionRunId?: string | null } | null;
  readonly startChildWorkflowExecutionInitiatedEventAttributes?: { workflowId?: string | null } | null;
  readonly childWorkflowExecutionCompletedEventAttributes?: { workflowExecution?: { workflowId?: string | null } | null } | null;
  readonly activityTaskScheduledEventAttributes?: { activityType?: { name?: string | null } | null } | null;
  readonly activityTaskCompletedEventAttributes?: { scheduledEventId?: unknown } | null;
}

const millisOf = (event: RawEvent): number => {
  const time = event.eventTime;
  return time ? Number(time.seconds ?? 0) * 1000 + (time.nanos ?? 0) / 1e6 : 0;
};

/** The events of every execution of `workflowId`, oldest execution first. */
async function chainEvents(client: Client, workflowId: string): Promise<RawEvent[]> {
  const executions: RawEvent[][] = [];
  let runId: string | undefined;
  for (let hop = 0; hop < 1000; hop += 1) {
    const history = await client.workflow.getHandle(workflowId, runId).fetchHistory();
    const events = (history.events ?? []) as RawEvent[];
    executions.unshift(events);
    const previous = events[0]?.workflowExecutionStartedEventAttributes?.continuedExecutionRunId;
    if (!previous) break;
    runId = previous;
  }
  return executions.flat();
}

/** The group of a child id `<groupId>-s<sample>`. */
const groupOf = (childId: string) => childId.replace(/-s\d+$/, '');

export interface TimelineOptions {
  readonly batchSize: number;
  readonly groupSize: number;
  readonly eta: number;
  /** The buffer's selection the claims are replayed with (priority is replayed as freshest). @default 'expiring' */
  readonly selection?: BatchSelection;
}

export async function learnerTimeline(client: Client, workflowId: string, options: TimelineOptions): Promise<LearnerTimeline> {
  return timelineOf(await chainEvents(client, workflowId), options);
}

/** The timeline of a learner's events (all executions, oldest first). */
export function timelineOf(events: readonly RawEvent[], options: TimelineOptions): LearnerTimeline {
  const startMs = events.length > 0 ? millisOf(events[0]!) : 0;
  const at = (event: RawEvent) => (millisOf(event) - startMs) / 1000;
  const childStarts: number[] = [];
  const childEnds: number[] = [];
  const groupSize = new Map<string, number>();
  const groupFinished = new Map<string, number[]>();
  const groupStartedAt = new Map<string, number>();
  const trainScheduled = new Map<string, number>();
  const steps: { from: number; to: number }[] = [];
  for (const event of events) {
    // Event ids start again in each execution of the chain (a step never spans continue-as-new).
    if (event.workflowExecutionStartedEventAttributes) trainScheduled.clear();
    const childStart = event.startChildWorkflowExecutionInitiatedEventAttributes?.workflowId;
    if (childStart) {
      childStarts.push(at(event));
      groupSize.set(groupOf(childStart), (groupSize.get(groupOf(childStart)) ?? 0) + 1);
      if (!groupStartedAt.has(groupOf(childStart))) groupStartedAt.set(groupOf(childStart), at(event));
    }
    const childEnd = event.childWorkflowExecutionCompletedEventAttributes?.workflowExecution?.workflowId;
    if (childEnd) {
      childEnds.push(at(event));
      groupFinished.set(groupOf(childEnd), [...(groupFinished.get(groupOf(childEnd)) ?? []), at(event)]);
    }
    if (event.activityTaskScheduledEventAttributes?.activityType?.name === 'trainStep')
      trainScheduled.set(String(event.eventId), at(event));
    const completedOf = event.activityTaskCompletedEventAttributes?.scheduledEventId;
    if (completedOf !== undefined && completedOf !== null && trainScheduled.has(String(completedOf)))
      steps.push({ from: trainScheduled.get(String(completedOf))!, to: at(event) });
  }
  const wallSeconds = events.length > 0 ? at(events[events.length - 1]!) : 0;
  const versionAt = (time: number) => steps.filter((step) => step.to <= time).length;
  // A group settles when its last child finished (groups whose children all completed; failed ones never settle).
  const groups = [...groupFinished.entries()]
    .filter(([group, ends]) => ends.length >= (groupSize.get(group) ?? options.groupSize))
    .map(([group, ends]) => ({ settled: Math.max(...ends), startVersion: versionAt(groupStartedAt.get(group) ?? 0) }))
    .sort((a, b) => a.settled - b.settled);
  const perBatch = Math.ceil(options.batchSize / options.groupSize);
  const consumed = new Set<(typeof groups)[number]>();
  const waits: TrainerWait[] = [];
  let previousEnd = 0;
  for (const [index, step] of steps.entries()) {
    // During the wait the version is `index`: a settled group is trainable while index − its start version ≤ η.
    const trainable = groups.filter((group) => !consumed.has(group) && index - group.startVersion <= options.eta);
    const readyFrom = trainable[perBatch - 1]?.settled;
    const readySince = readyFrom === undefined ? step.from : Math.min(step.from, Math.max(previousEnd, readyFrom));
    waits.push({
      step: index,
      fromSeconds: Number(previousEnd.toFixed(1)),
      seconds: Number((step.from - previousEnd).toFixed(1)),
      batchReadySeconds: Number((step.from - readySince).toFixed(1)),
    });
    // The step's claim, as the buffer makes it: the freshest trainable groups settled by then ('expiring': those
    // this step is the last able to train first).
    const lastChance = (group: (typeof groups)[number]) =>
      (options.selection ?? 'expiring') === 'expiring' && index - group.startVersion >= options.eta ? 1 : 0;
    const claimed = trainable
      .filter((group) => group.settled <= step.from)
      .sort((a, b) => lastChance(b) - lastChance(a) || b.startVersion - a.startVersion || b.settled - a.settled)
      .slice(0, perBatch);
    for (const group of claimed) consumed.add(group);
    previousEnd = step.to;
  }
  const inflightAt = (time: number) => childStarts.filter((when) => when <= time).length - childEnds.filter((when) => when <= time).length;
  const samples = steps.map((step) => inflightAt(step.from));
  const later = waits.slice(1);
  return {
    firstStepSeconds: Number((steps[0]?.from ?? wallSeconds).toFixed(1)),
    firstGroupSettledSeconds: Number((groups[0]?.settled ?? wallSeconds).toFixed(1)),
    betweenStepsSeconds: Number(later.reduce((sum, wait) => sum + wait.seconds, 0).toFixed(1)),
    betweenStepsBatchReadySeconds: Number(later.reduce((sum, wait) => sum + wait.batchReadySeconds, 0).toFixed(1)),
    trainSeconds: Number(steps.reduce((sum, step) => sum + step.to - step.from, 0).toFixed(1)),
    wallSeconds: Number(wallSeconds.toFixed(1)),
    childrenStarted: childStarts.length,
    childrenFinished: childEnds.length,
    inflightMean: samples.length > 0 ? Number((samples.reduce((sum, count) => sum + count, 0) / samples.length).toFixed(1)) : 0,
    inflightMax: samples.length > 0 ? Math.max(...samples) : 0,
    longestWaits: [...waits].sort((a, b) => b.seconds - a.seconds).slice(0, 8),
  };
}
