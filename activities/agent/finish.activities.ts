/**
 * finishTrajectory: scores the answer and writes the trajectory record once (blob + row, keyed by
 * workflow id), so retries and resumes never duplicate it. Runs on the agent queue.
 */
import type { BlobStore } from '../ports/blob-store.port.js';
import type { PolicyBackend } from '../ports/policy.port.js';
import type { TrajectoryStore } from '../ports/trajectory-store.port.js';
import type { FinishTrajectoryInput, FinishTrajectoryResult } from '../../workflows/contracts/agent-turn.contract.js';
import { judgeAnswer } from '../reward/judge.js';
import { scoreAnswer } from '../reward/metrics.js';
import { readJson, transcriptKeys, type GenerationRecord, type ToolsRecord } from './transcript.js';

export interface FinishDependencies {
  readonly blobs: BlobStore;
  readonly trajectories: TrajectoryStore;
  /** A judge model, when the reward metric is "judge". */
  readonly judge?: PolicyBackend;
}

async function readTurns(blobs: BlobStore, id: string, turns: number) {
  const out: { generation: GenerationRecord; tools?: ToolsRecord }[] = [];
  for (let start = 0; start < turns; start += 32) {
    const batch = Array.from({ length: Math.min(32, turns - start) }, (_, index) => start + index);
    out.push(...(await Promise.all(batch.map(async (turn) => {
      const generation = await readJson<GenerationRecord>(blobs, transcriptKeys.generation(id, turn));
      if (!generation) throw new Error(`record of ${id}: generation of turn ${turn} is missing`);
      const tools = generation.action.kind === 'tools' ? await readJson<ToolsRecord>(blobs, transcriptKeys.tools(id, turn)) : undefined;
      return tools ? { generation, tools } : { generation };
    }))));
  }
  return out;
}

export function createFinishActivities({ blobs, trajectories, judge }: FinishDependencies) {
  return {
    async finishTrajectory(input: FinishTrajectoryInput): Promise<FinishTrajectoryResult> {
      const existing = await trajectories.get(input.trajectoryId);
      if (existing) return { reward: existing.reward, rewardParts: existing.rewardParts, recordKey: existing.recordKey, written: false };
      const turns = await readTurns(blobs, input.trajectoryId, input.turns);
      const { parts, errors } = scoreAnswer(input.answer, input.answers, { turns: input.turns, invalidSteps: input.invalidSteps, answered: input.answer !== null });
      if (input.rewardMetric === 'judge') {
        const outcome = judge ? await judgeAnswer(judge, input.question, input.answers, input.answer) : { score: 0, error: 'no judge backend configured' };
        parts.judge = outcome.score;
        if (outcome.error) errors.judge = outcome.error;
      }
      const reward = input.answers.length === 0 ? 0 : parts[input.rewardMetric] ?? 0;
      const recordKey = transcriptKeys.record(input.trajectoryId);
      const record = {
        schema: 'longhaul.trajectory/1', ...input, reward, rewardParts: parts, rewardErrors: errors,
        // False when some turn's server returned no token ids or logprobs (see GenerateResult.untrainable).
        trainable: turns.every(({ generation }) => generation.untrainable === undefined),
        turnRecords: turns.map(({ generation, tools }) => ({
          turn: generation.turn, policyVersion: generation.policyVersion, tokenVersions: generation.tokenVersions,
          promptTokenIds: generation.promptTokenIds, tokenIds: generation.tokenIds, logprobs: generation.logprobs,
          text: generation.text, action: generation.action, finishReason: generation.finishReason, interruptions: generation.interruptions,
          ...(generation.untrainable ? { untrainable: generation.untrainable } : {}),
          tools: (tools?.results ?? []).map((result) => ({ tool: result.tool, ok: result.ok, invalid: result.invalid, latencyMs: result.latencyMs, cacheHit: result.cacheHit, truncated: result.truncated, documentIds: result.documentIds })),
        })),
      };
      await blobs.put(recordKey, JSON.stringify(record), 'application/json');
      const written = await trajectories.insert({
        trajectoryId: input.trajectoryId, runId: input.runId, dataset: input.dataset, questionId: input.questionId, question: input.question,
        answer: input.answer, gold: input.answers, reward, rewardParts: parts, stopReason: input.stopReason, turns: input.turns,
        invalidSteps: input.invalidSteps, generatedTokens: input.generatedTokens, versions: [...input.versionsUsed], recordKey,
      });
      return { reward, rewardParts: parts, recordKey, written };
    },
  };
}

export type FinishActivities = ReturnType<typeof createFinishActivities>;
