/**
 * Fork a recorded trajectory at turn k (`longhaul fork`): N new trajectories replay the parent's first
 * k turns as teacher-forced text (`forcedTurns`) and sample from turn k on, each with its own seed.
 * The lineage goes to the `trajectory_forks` table before a child starts and into each child's record
 * (`forkOf`). After the children finish, their replayed turns are compared with the parent's: the
 * text must be identical, and so must the observations when the tools are deterministic over a fixed
 * corpus; any difference is reported, never hidden.
 */
import type { Client } from '@temporalio/client';
import { decodeArrayFromPayloads } from '@temporalio/common/lib/internal-non-workflow/index.js';
import { z } from 'zod';
import type { BlobStore } from '../activities/ports/blob-store.port.js';
import type { TrajectoryForkStore, ForkTreeNode } from '../activities/ports/trajectory-fork-store.port.js';
import { trajectoryRecordSchema, turnRecordSchema } from '../activities/ports/trajectory-record.schema.js';
import type { TrajectoryStore } from '../activities/ports/trajectory-store.port.js';
import {
  invalidObservation,
  observationText,
  readJson,
  transcriptKeys,
  type GenerationRecord,
  type ToolsRecord,
} from '../activities/agent/transcript.js';
import { trajectoryWorkflowType, type TrajectoryInput, type TrajectoryResult } from '../workflows/contracts/trajectory.contract.js';
import { parseTrajectoryInput } from '../workflows/contracts/trajectory.input.js';
import { UsageError } from './command.js';

/** What a fork reads of the parent's record. */
const parentRecordSchema = trajectoryRecordSchema
  .pick({ trajectoryId: true, question: true, answers: true, questionId: true, dataset: true, rewardMetric: true, turns: true })
  .extend({ turnRecords: z.array(turnRecordSchema.pick({ turn: true, policyVersion: true, text: true, temperature: true })) });
type ParentRecord = z.infer<typeof parentRecordSchema>;

export interface ForkRequest {
  readonly trajectoryId: string;
  /** Turns 0..at-1 are replayed. */
  readonly at: number;
  readonly n: number;
  /** Default: the parent's temperature when it sampled, else 0.7. */
  readonly temperature?: number;
  /** Child i samples with seed firstSeed + i. @default 1 */
  readonly firstSeed?: number;
}

export interface ForkPlan {
  readonly parent: ParentRecord;
  readonly at: number;
  readonly temperature: number;
  /** Where the children's settings come from: the parent's workflow input in Temporal's history, or the record alone (defaults). */
  readonly settingsFrom: 'history' | 'record';
  readonly children: readonly { readonly seed: number; readonly input: TrajectoryInput }[];
}

export interface ReplayMismatch {
  readonly childId: string;
  readonly turn: number;
  readonly what: 'text' | 'observation' | 'missing';
  readonly parent: string;
  readonly child: string;
}

export interface ForkChildOutcome {
  readonly trajectoryId: string;
  readonly seed: number;
  readonly turns: number;
  readonly stopReason: string;
  readonly answer: string | null;
  readonly reward: number;
}

export interface ForkOutcome {
  readonly parent: string;
  readonly at: number;
  readonly temperature: number;
  readonly settingsFrom: ForkPlan['settingsFrom'];
  readonly children: readonly ForkChildOutcome[];
  /** Every difference between a child's replayed turns and the parent's (empty: the replay was exact). */
  readonly mismatches: readonly ReplayMismatch[];
}

export interface ForkDependencies {
  readonly client: Client;
  readonly blobs: BlobStore;
  readonly trajectories: TrajectoryStore;
  readonly forks: TrajectoryForkStore;
}

/** The parent's own workflow input (first event of its latest run; continue-as-new carries it whole), or undefined when history is gone. */
async function originalInput(client: Client, trajectoryId: string): Promise<Record<string, unknown> | undefined> {
  try {
    const history = await client.workflow.getHandle(trajectoryId).fetchHistory();
    const started = history.events?.[0]?.workflowExecutionStartedEventAttributes;
    const [input] = await decodeArrayFromPayloads(client.options.loadedDataConverter, started?.input?.payloads);
    if (input === null || typeof input !== 'object') return undefined;
    // Not inherited: the parent's own forced turns and lineage, its learner, and an evaluation's frozen observations
    // (a fork must not add observations to a stored evaluation's scope).
    const {
      carried: _carried,
      forcedTurns: _forced,
      forkOf: _forkOf,
      reportTo: _reportTo,
      frozenObservations: _frozen,
      ...rest
    } = input as Record<string, unknown>;
    return rest;
  } catch {
    return undefined;
  }
}

/** Checks the request against the parent's record (unknown id, k past its turns: UsageError naming the flag) and builds each child's input. */
export async function planFork(deps: ForkDependencies, request: ForkRequest): Promise<ForkPlan> {
  const row = await deps.trajectories.get(request.trajectoryId);
  if (!row)
    throw new UsageError(
      `<trajectory-id>: no finished trajectory "${request.trajectoryId}" in the trajectories table (a trajectory can be forked once it has finished and written its record)`,
    );
  const parent = parentRecordSchema.parse(JSON.parse((await deps.blobs.get(row.recordKey)).toString('utf8')));
  if (request.at > parent.turns)
    throw new UsageError(
      `--at ${request.at}: trajectory "${parent.trajectoryId}" recorded ${parent.turns} turns; give --at between 0 and ${parent.turns}`,
    );
  const forced = parent.turnRecords.slice(0, request.at).map((turn) => turn.text);
  const empty = forced.findIndex((text) => text.trim() === '');
  if (empty >= 0)
    throw new UsageError(
      `--at ${request.at}: turn ${empty} of "${parent.trajectoryId}" generated no text and cannot be replayed; give --at ${empty} or less`,
    );
  const sampled = parent.turnRecords.map((turn) => turn.temperature ?? 0).find((temperature) => temperature > 0);
  const temperature = request.temperature ?? sampled ?? 0.7;
  const firstSeed = request.firstSeed ?? 1;
  const fromHistory = await originalInput(deps.client, parent.trajectoryId);
  const base: Record<string, unknown> = fromHistory ?? {
    question: parent.question,
    answers: parent.answers,
    ...(parent.questionId ? { questionId: parent.questionId } : {}),
    ...(parent.dataset ? { dataset: parent.dataset } : {}),
    rewardMetric: parent.rewardMetric,
  };
  const branchTurn = parent.turnRecords[Math.min(request.at, parent.turnRecords.length - 1)];
  const children = Array.from({ length: request.n }, (_, index) => {
    const seed = firstSeed + index;
    const options = typeof base.options === 'object' && base.options !== null ? base.options : {};
    // A fork is an experiment on the side: it joins no learner run (its buffer) and reports to nobody.
    const { runId: _runId, ...settings } = base;
    const input: TrajectoryInput = {
      ...(settings as unknown as TrajectoryInput),
      ...(branchTurn ? { policyVersion: branchTurn.policyVersion } : {}),
      options: { ...options, temperature, seed },
      forcedTurns: forced,
      forkOf: { trajectoryId: parent.trajectoryId, turn: request.at },
    };
    parseTrajectoryInput(input); // the workflow's own check, before anything starts
    return { seed, input };
  });
  return { parent, at: request.at, temperature, settingsFrom: fromHistory ? 'history' : 'record', children };
}

/** Text a turn showed the agent after its generation: the tools' observations, or the invalid-step notice. */
async function observationOf(blobs: BlobStore, trajectoryId: string, turn: number): Promise<string | undefined> {
  const generation = await readJson<GenerationRecord>(blobs, transcriptKeys.generation(trajectoryId, turn));
  if (!generation) return undefined;
  if (generation.action.kind === 'invalid') return invalidObservation(generation.action.reason);
  if (generation.action.kind !== 'tools') return '';
  const tools = await readJson<ToolsRecord>(blobs, transcriptKeys.tools(trajectoryId, turn));
  return tools ? observationText(tools.results) : undefined;
}

const clip = (text: string) => (text.length > 300 ? `${text.slice(0, 300)}…` : text);

/** Every difference between the child's first `at` turns and the parent's: generated text, then observation. */
export async function compareReplay(blobs: BlobStore, parent: ParentRecord, childId: string, at: number): Promise<ReplayMismatch[]> {
  const mismatches: ReplayMismatch[] = [];
  for (let turn = 0; turn < at; turn += 1) {
    const childGeneration = await readJson<GenerationRecord>(blobs, transcriptKeys.generation(childId, turn));
    const parentText = parent.turnRecords[turn]?.text ?? '';
    if (!childGeneration) {
      mismatches.push({ childId, turn, what: 'missing', parent: clip(parentText), child: '(no generation recorded)' });
      continue;
    }
    if (childGeneration.text !== parentText)
      mismatches.push({ childId, turn, what: 'text', parent: clip(parentText), child: clip(childGeneration.text) });
    const [parentObservation, childObservation] = await Promise.all([
      observationOf(blobs, parent.trajectoryId, turn),
      observationOf(blobs, childId, turn),
    ]);
    if (parentObservation !== childObservation)
      mismatches.push({
        childId,
        turn,
        what: 'observation',
        parent: clip(parentObservation ?? '(none recorded)'),
        child: clip(childObservation ?? '(none recorded)'),
      });
  }
  return mismatches;
}

export interface RunForkOptions {
  readonly taskQueue: string;
  /** Child i's workflow id is `${idPrefix}-${i}`. */
  readonly idPrefix: string;
  readonly onStarted?: (childId: string, seed: number) => void;
  readonly onFinished?: (child: ForkChildOutcome, done: number, of: number) => void;
}

/** Record each child's lineage, start the children, wait for all, compare their replayed turns with the parent's. */
export async function runFork(deps: ForkDependencies, plan: ForkPlan, options: RunForkOptions): Promise<ForkOutcome> {
  const handles = [];
  for (const [index, child] of plan.children.entries()) {
    const childId = `${options.idPrefix}-${index}`;
    await deps.forks.record({
      childId,
      parentId: plan.parent.trajectoryId,
      forkTurn: plan.at,
      seed: child.seed,
      temperature: plan.temperature,
    });
    const handle = await deps.client.workflow.start(trajectoryWorkflowType, {
      taskQueue: options.taskQueue,
      workflowId: childId,
      args: [child.input],
      staticSummary: `fork of ${plan.parent.trajectoryId} at turn ${plan.at} · seed ${child.seed} · T ${plan.temperature}`,
    });
    options.onStarted?.(childId, child.seed);
    handles.push({ handle, seed: child.seed });
  }
  let done = 0;
  const children = await Promise.all(
    handles.map(async ({ handle, seed }) => {
      const result = (await handle.result()) as TrajectoryResult;
      const outcome: ForkChildOutcome = {
        trajectoryId: handle.workflowId,
        seed,
        turns: result.turns,
        stopReason: result.stopReason,
        answer: result.answer,
        reward: result.reward,
      };
      done += 1;
      options.onFinished?.(outcome, done, handles.length);
      return outcome;
    }),
  );
  const mismatches: ReplayMismatch[] = [];
  for (const child of children)
    mismatches.push(...(await compareReplay(deps.blobs, plan.parent, child.trajectoryId, Math.min(plan.at, child.turns))));
  return {
    parent: plan.parent.trajectoryId,
    at: plan.at,
    temperature: plan.temperature,
    settingsFrom: plan.settingsFrom,
    children,
    mismatches,
  };
}

/** The fork tree as indented text, one trajectory a line. */
export function formatForkTree(node: ForkTreeNode, mark = (id: string) => id): string[] {
  const describe = (entry: ForkTreeNode) => {
    const how = entry.fork ? `at turn ${entry.fork.forkTurn} · seed ${entry.fork.seed} · T ${entry.fork.temperature} · ` : '';
    const outcome = entry.outcome
      ? `${entry.outcome.stopReason} after ${entry.outcome.turns} turns · reward ${entry.outcome.reward.toFixed(3)} · answer ${JSON.stringify(entry.outcome.answer)}`
      : 'not finished';
    return `${mark(entry.trajectoryId)}  ${how}${outcome}`;
  };
  const lines = [describe(node)];
  const walk = (entry: ForkTreeNode, indent: string) => {
    entry.children.forEach((child, index) => {
      const last = index === entry.children.length - 1;
      lines.push(`${indent}${last ? '└─ ' : '├─ '}${describe(child)}`);
      walk(child, `${indent}${last ? '   ' : '│  '}`);
    });
  };
  walk(node, '');
  return lines;
}
