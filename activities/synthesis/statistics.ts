/** Dataset statistics from the stored candidates and verdicts (yield per stage, rejections, chain shape, solver effort, difficulty). */
import type { SynthesisCandidateRow, SynthesisVerdictRow } from '../ports/synthesis-store.port.js';
import { synthesisChecks, type SynthesisStatistics } from '../../workflows/contracts/synthesis.contract.js';

const mean = (values: readonly number[]) => (values.length ? values.reduce((a, b) => a + b, 0) / values.length : 0);

export function median(values: readonly number[]): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

const round = (value: number, digits = 3) => Number(value.toFixed(digits));

export function datasetStatistics(
  candidates: readonly SynthesisCandidateRow[],
  verdicts: readonly SynthesisVerdictRow[],
): SynthesisStatistics {
  const accepted = candidates.filter((row) => row.accepted);
  const verdictOf = new Map(verdicts.map((verdict) => [`${verdict.workflowId}\u0000${verdict.check}`, verdict]));
  const synthesized = candidates.filter((row) => !row.reason.startsWith('synthesis:'));
  const yieldPerStage: Record<string, number> = { seeds: candidates.length, synthesized: synthesized.length };
  let standing = synthesized;
  for (const check of synthesisChecks) {
    standing = standing.filter((row) => verdictOf.get(`${row.workflowId}\u0000${check}`)?.passed === true);
    yieldPerStage[check] = standing.length;
  }
  const rejectionsByReason: Record<string, number> = {};
  for (const row of candidates) {
    if (row.accepted) continue;
    const key = row.reason.split(':')[0]!.trim() + (row.reason.includes(':') ? `: ${shortReason(row.reason)}` : '');
    rejectionsByReason[key] = (rejectionsByReason[key] ?? 0) + 1;
  }
  const shape = (row: SynthesisCandidateRow) => row.candidate as { injections?: number; fuzzes?: number; hops?: number };
  const solverCalls = accepted.map((row) => Number(verdictOf.get(`${row.workflowId}\u0000solvability`)?.details.solverToolCalls ?? 0));
  const solved = candidates.filter((row) => verdictOf.has(`${row.workflowId}\u0000solvability`));
  const hopsDistribution: Record<string, number> = {};
  for (const row of accepted) hopsDistribution[String(shape(row).hops ?? 0)] = (hopsDistribution[String(shape(row).hops ?? 0)] ?? 0) + 1;
  const difficultyDistribution: Record<string, number> = {};
  for (const row of accepted) {
    const bound = Number(verdictOf.get(`${row.workflowId}\u0000difficulty`)?.details.errorLowerBound ?? 0);
    const bucket = Math.min(0.9, Math.floor(bound * 10) / 10).toFixed(1);
    difficultyDistribution[bucket] = (difficultyDistribution[bucket] ?? 0) + 1;
  }
  const totalSeconds = candidates.reduce((sum, row) => sum + row.seconds, 0);
  const totalTokens = candidates.reduce((sum, row) => sum + row.tokens, 0);
  const llmOf = (row: SynthesisCandidateRow) =>
    (row.candidate as { llmUsage?: { calls?: number; promptTokens?: number; completionTokens?: number } }).llmUsage ?? {};
  const llmCalls = candidates.reduce((sum, row) => sum + (llmOf(row).calls ?? 0), 0);
  const llmPromptTokens = candidates.reduce((sum, row) => sum + (llmOf(row).promptTokens ?? 0), 0);
  const llmCompletionTokens = candidates.reduce((sum, row) => sum + (llmOf(row).completionTokens ?? 0), 0);
  // The evidence-only check beside the tool-using solver's verdict of the same candidates.
  const evidenceChecked = candidates.filter((row) => verdictOf.has(`${row.workflowId}\u0000evidence`));
  const evidencePassed = evidenceChecked.filter((row) => verdictOf.get(`${row.workflowId}\u0000evidence`)!.passed);
  const failedWhereSolverPassed = evidenceChecked.filter(
    (row) =>
      !verdictOf.get(`${row.workflowId}\u0000evidence`)!.passed && verdictOf.get(`${row.workflowId}\u0000solvability`)?.passed === true,
  ).length;
  return {
    candidates: candidates.length,
    accepted: accepted.length,
    yieldPerStage,
    rejectionsByReason,
    injectionsPerQuestion: round(mean(accepted.map((row) => shape(row).injections ?? 0))),
    fuzzesPerQuestion: round(mean(accepted.map((row) => shape(row).fuzzes ?? 0))),
    hopsPerQuestion: round(mean(accepted.map((row) => shape(row).hops ?? 0))),
    hopsDistribution,
    medianSolverToolCalls: median(solverCalls),
    shareSolverToolCallsAtLeast20: round(accepted.length ? solverCalls.filter((calls) => calls >= 20).length / accepted.length : 0),
    solverPassRate: round(
      solved.length ? solved.filter((row) => verdictOf.get(`${row.workflowId}\u0000solvability`)!.passed).length / solved.length : 0,
    ),
    difficultyDistribution,
    secondsPerAccepted: round(accepted.length ? totalSeconds / accepted.length : 0, 2),
    tokensPerAccepted: round(accepted.length ? totalTokens / accepted.length : 0, 1),
    secondsPerCandidate: round(candidates.length ? totalSeconds / candidates.length : 0, 2),
    tokensPerCandidate: round(candidates.length ? totalTokens / candidates.length : 0, 1),
    llm: {
      calls: llmCalls,
      promptTokens: llmPromptTokens,
      completionTokens: llmCompletionTokens,
      tokensPerCandidate: round(candidates.length ? (llmPromptTokens + llmCompletionTokens) / candidates.length : 0, 1),
    },
    evidenceOnly: {
      checked: evidenceChecked.length,
      passed: evidencePassed.length,
      passRate: round(evidenceChecked.length ? evidencePassed.length / evidenceChecked.length : 0),
      failedWhereSolverPassed,
    },
  };
}

/** "difficulty: bound 0.42 ≤ 0.70 (…)" → "difficulty" family key without numbers, so reasons group. */
function shortReason(reason: string): string {
  const rest = reason.slice(reason.indexOf(':') + 1).trim();
  return rest
    .replace(/[\d.,]+/g, 'N')
    .replace(/"[^"]*"/g, '"…"')
    .replace(/\(.*\)/g, '')
    .trim()
    .slice(0, 60);
}
