/**
 * A finished trajectory as people read it: each turn's text, its tool calls with their inputs and
 * observations, the policy versions that generated it, and the reward. Built from the record blob
 * (`trajectories/<id>/record.json`) and the turns' tools blobs; read by `longhaul show`, the
 * report's trajectory pages and the behaviour analysis. Token ids and logprobs are left out.
 */
import type { BlobStore } from '../ports/blob-store.port.js';
import { trajectoryRecordSchema, type TrajectoryRecord } from '../ports/trajectory-record.schema.js';
import { transcriptKeys, type ToolsRecord } from '../agent/transcript.js';
import { errorTypes, LonghaulError } from '../../workflows/contracts/errors.js';

export interface ToolCallView {
  readonly tool: string;
  readonly input: unknown;
  readonly ok: boolean;
  readonly invalid: boolean;
  /** The observation text the agent saw; null when the tools blob is missing. */
  readonly observation: string | null;
  readonly documentIds: readonly string[];
  readonly latencyMs: number;
  readonly cacheHit: boolean;
}

export interface TurnView {
  readonly turn: number;
  /** The version the turn asked for. */
  readonly policyVersion: number;
  /** Distinct versions that generated the turn's tokens (several when interrupted across a publish). */
  readonly tokenVersions: readonly number[];
  readonly text: string;
  readonly action: 'tools' | 'answer' | 'invalid';
  readonly answer?: string;
  readonly invalidReason?: string;
  readonly generatedTokens: number;
  readonly interruptions: number;
  readonly toolCalls: readonly ToolCallView[];
}

export interface TrajectoryView {
  readonly trajectoryId: string;
  readonly runId: string;
  readonly dataset: string;
  readonly questionId: string;
  readonly question: string;
  readonly goldAnswers: readonly string[];
  readonly answer: string | null;
  readonly reward: number;
  readonly rewardMetric: string;
  readonly rewardParts: Readonly<Record<string, number>>;
  readonly stopReason: string;
  readonly versionsUsed: readonly number[];
  readonly generatedTokens: number;
  readonly turns: readonly TurnView[];
}

/** The newest version that generated any token of the trajectory: the version its behaviour is counted under. */
export function trajectoryVersion(view: Pick<TrajectoryView, 'versionsUsed'>): number {
  return view.versionsUsed.length ? Math.max(...view.versionsUsed) : 0;
}

/** Pure: the view of a record, with each turn's tool results (observations) where known. */
export function buildTrajectoryView(record: TrajectoryRecord, toolsByTurn: ReadonlyMap<number, ToolsRecord>): TrajectoryView {
  return {
    trajectoryId: record.trajectoryId,
    runId: record.runId,
    dataset: record.dataset,
    questionId: record.questionId,
    question: record.question,
    goldAnswers: record.answers,
    answer: record.answer,
    reward: record.reward,
    rewardMetric: record.rewardMetric,
    rewardParts: record.rewardParts,
    stopReason: record.stopReason,
    versionsUsed: record.versionsUsed,
    generatedTokens: record.generatedTokens,
    turns: record.turnRecords.map((turn) => {
      const results = toolsByTurn.get(turn.turn)?.results ?? [];
      const calls = turn.action.kind === 'tools' ? turn.action.calls : [];
      return {
        turn: turn.turn,
        policyVersion: turn.policyVersion,
        tokenVersions: [...new Set(turn.tokenVersions)].sort((a, b) => a - b),
        text: turn.text,
        action: turn.action.kind,
        ...(turn.action.kind === 'answer' ? { answer: turn.action.answer } : {}),
        ...(turn.action.kind === 'invalid' ? { invalidReason: turn.action.reason } : {}),
        generatedTokens: turn.untrainable?.generatedTokens ?? turn.tokenIds.length,
        interruptions: turn.interruptions,
        toolCalls: turn.tools.map((summary, index) => ({
          tool: summary.tool,
          input: calls[index]?.input ?? null,
          ok: summary.ok,
          invalid: summary.invalid,
          observation: results[index]?.observation ?? null,
          documentIds: summary.documentIds,
          latencyMs: summary.latencyMs,
          cacheHit: summary.cacheHit,
        })),
      };
    }),
  };
}

/**
 * Reads a trajectory's record and its tools blobs. A trajectory with no record (unknown id, or one
 * still running) is a LonghaulNotFound error naming the id; a record that does not parse is LonghaulCorrupt.
 */
export async function loadTrajectoryView(
  blobs: BlobStore,
  trajectoryId: string,
  options: { observations?: boolean } = {},
): Promise<TrajectoryView> {
  const key = transcriptKeys.record(trajectoryId);
  if (!(await blobs.exists(key)))
    throw new LonghaulError(
      errorTypes.notFound,
      `trajectory ${JSON.stringify(trajectoryId)} has no record (${key}): the id is unknown or the trajectory has not finished yet`,
    );
  const parsed = trajectoryRecordSchema.safeParse(JSON.parse((await blobs.get(key)).toString('utf8')));
  if (!parsed.success) throw new LonghaulError(errorTypes.corrupt, `${key} is not a trajectory record: ${parsed.error.issues[0]?.message}`);
  const record = parsed.data;
  const toolsByTurn = new Map<number, ToolsRecord>();
  if (options.observations !== false) {
    const toolTurns = record.turnRecords.filter((turn) => turn.tools.length > 0).map((turn) => turn.turn);
    const loaded = await Promise.all(
      toolTurns.map(async (turn) => {
        const toolsKey = transcriptKeys.tools(trajectoryId, turn);
        return (await blobs.exists(toolsKey)) ? (JSON.parse((await blobs.get(toolsKey)).toString('utf8')) as ToolsRecord) : undefined;
      }),
    );
    toolTurns.forEach((turn, index) => {
      const tools = loaded[index];
      if (tools) toolsByTurn.set(turn, tools);
    });
  }
  return buildTrajectoryView(record, toolsByTurn);
}
