/**
 * The data-synthesis agent (issue 10): `synthesizeQuestion` turns one seed into one candidate
 * through a synthesizer's actions (inject, fuzz, verify, exit) and the validation checks, every one
 * an activity; `synthesisRun` fans tasks out with bounded concurrency and publishes a dataset.
 * Pure types (workflows import them).
 */
import { defineQuery } from '@temporalio/workflow';

export const synthesizeQuestionWorkflowType = 'synthesizeQuestion';
export const synthesisRunWorkflowType = 'synthesisRun';

/**
 * Synthesizers behind the action interface. `grounded` composes knowledge-base relations (no LLM);
 * `llm` prompts an OpenAI-compatible chat model for each action, with retrieval from the corpus.
 */
export const synthesizerNames = ['grounded', 'llm'] as const;
export type SynthesizerName = (typeof synthesizerNames)[number];

/** The checks, in the order a candidate meets them (a candidate stops at its first failed check). */
export const synthesisChecks = ['quality', 'grounding', 'uniqueness', 'contamination', 'solvability', 'difficulty'] as const;
/**
 * Checks stored beside them that gate acceptance only when a setting says so: `evidence` (the
 * evidence-only solvability check: gold passages plus distractors, no tools; settings.evidenceCheck).
 */
export const recordedChecks = ['evidence'] as const;
export type SynthesisCheck = (typeof synthesisChecks)[number] | (typeof recordedChecks)[number];

/** The evidence-only check: not run, run and recorded, or run and a failure rejects the candidate. */
export const evidenceCheckModes = ['off', 'record', 'gate'] as const;
export type EvidenceCheckMode = (typeof evidenceCheckModes)[number];

/** Chat-model calls of a candidate (the LLM path's actions and judges) and their tokens, from the endpoint's `usage`. */
export interface LlmUsage {
  readonly calls: number;
  readonly promptTokens: number;
  readonly completionTokens: number;
}

/** Where a fact is stated: the stored document's text (its pages joined by "\n"), a character span of it, and hashes. */
export interface Evidence {
  readonly documentId: string;
  /** search_documents.content_hash when the span was found. */
  readonly contentHash: string;
  /** [start, end) in the document text. */
  readonly start: number;
  readonly end: number;
  /** sha256 (hex) of the span text. */
  readonly spanSha256: string;
  readonly text: string;
}

/** One knowledge-base relation, with the passage that states it. */
export interface SynthesisFact {
  readonly subjectId: string;
  readonly subjectName: string;
  readonly predicate: string;
  readonly objectId: string | null;
  readonly objectText: string;
  readonly documentId: string;
  readonly evidence: Evidence;
}

/** How a literal is obscured: a number becomes a range, a year a decade, a name a description. */
export type Fuzz =
  | { readonly kind: 'range'; readonly low: number; readonly high: number }
  | { readonly kind: 'decade'; readonly decade: number }
  | { readonly kind: 'name'; readonly prefix: string; readonly length: number };

/** A constraint on a chain node: a literal fact about it, exact or fuzzed. */
export interface LiteralConstraint {
  readonly fact: SynthesisFact;
  readonly fuzz?: Fuzz;
}

/**
 * A node of the chain. nodes[0] is the seed fact's subject; node i < last is described by its link to
 * node i+1 plus literals; the last node is named in the question.
 */
export interface ChainNode {
  readonly entityId: string;
  readonly kind: string;
  readonly name: string;
  /** The relation between this node and the next: forward = this node is its subject. */
  readonly link?: { readonly fact: SynthesisFact; readonly forward: boolean };
  readonly literals: readonly LiteralConstraint[];
}

export type SynthesisActionName = 'seed' | 'inject' | 'fuzz' | 'verify' | 'exit';

export interface SynthesisActionRecord {
  readonly action: SynthesisActionName;
  readonly ok: boolean;
  readonly detail: string;
}

/** A candidate in the making: small and JSON (it rides in workflow history between actions). */
export interface SynthesisState {
  readonly synthesizer: SynthesizerName;
  readonly seedFact: SynthesisFact;
  readonly answer: string;
  readonly nodes: readonly ChainNode[];
  readonly injections: number;
  readonly fuzzes: number;
  readonly actions: readonly SynthesisActionRecord[];
  /** The LLM path's working question (the grounded path writes its question from the chain at exit). */
  readonly question?: string;
}

/** What `exit` produces: the question, its answer, every fact with its span, and the gold solution path. */
export interface SynthesisCandidate {
  readonly question: string;
  readonly answer: string;
  readonly state: SynthesisState;
  readonly facts: readonly SynthesisFact[];
  readonly hops: number;
  /** The search/access/answer turns that solve it (the warm start's `goldTurns`). */
  readonly goldTurns: readonly string[];
  readonly goldToolCalls: number;
}

export interface SynthesisSettings {
  /** Chain length (links) to aim for. @default 3 */
  readonly targetHops: number;
  /** Fuzzes to aim for. @default 2 */
  readonly targetFuzzes: number;
  /** Actions per candidate at most (inject, fuzz, verify). @default 16 */
  readonly maxRounds: number;
  /** Closed-book samples of the configured policy (difficulty). @default 16 */
  readonly difficultySamples: number;
  /** Keep when the Wilson 95 % lower bound of the closed-book error rate is above this. @default 0.7 */
  readonly difficultyThreshold: number;
  /** Tool-using solver runs per candidate (pass@k). @default 1 */
  readonly solverAttempts: number;
  /** Tokens per closed-book sample. @default 64 */
  readonly closedBookMaxTokens: number;
  /**
   * How the reference solver runs: `gold` replays the gold solution path through the real tools
   * (teacher forcing); `policy` lets the reference policy search on its own (pass@k over solverAttempts).
   * @default 'gold'
   */
  readonly solverMode: SolverMode;
  /** Turns a `policy` solver may take. @default 32 */
  readonly solverMaxTurns: number;
  /** The LLM synthesizer's chat endpoint (ending in /v1); absent: the agent worker's LONGHAUL_SYNTH_LLM_BASE_URL. */
  readonly llmBaseUrl?: string;
  /** The LLM synthesizer's model; absent: LONGHAUL_SYNTH_LLM_MODEL. */
  readonly llmModel?: string;
  /** Prompts per LLM action before its unusable replies become the action's rejection. @default 2 */
  readonly llmAttempts: number;
  /** Distinct wrong answers the LLM path's uniqueness check must consider, at least. @default 20 */
  readonly alternativeAnswers: number;
  /**
   * The evidence-only check (the reference policy answers from the gold passages plus distractors, no
   * tools): `record` stores its verdict, `gate` also rejects on failure, `off` skips it.
   * Absent: `record` on the LLM path, `off` on the grounded path (whose answers are proved).
   */
  readonly evidenceCheck?: EvidenceCheckMode;
  /** Distractor passages (corpus search on the question, not gold documents) beside the gold ones. @default 4 */
  readonly evidenceDistractors: number;
}

export const solverModes = ['gold', 'policy'] as const;
export type SolverMode = (typeof solverModes)[number];

export interface SynthesizeQuestionInput {
  readonly datasetId: string;
  readonly taskIndex: number;
  /** The run's random seed; the task's own randomness is derived from (seed, taskIndex). */
  readonly seed: number;
  readonly synthesizer?: SynthesizerName;
  readonly settings?: Partial<SynthesisSettings>;
}

export interface SynthesizeQuestionResult {
  readonly datasetId: string;
  readonly taskIndex: number;
  readonly workflowId: string;
  readonly accepted: boolean;
  /** "accepted", or "<check>: <reason>" / "synthesis: <reason>". */
  readonly reason: string;
  readonly question: string | null;
  readonly answer: string | null;
}

export interface SynthesisRunInput {
  readonly datasetId: string;
  /** Candidates (tasks) to run. */
  readonly count: number;
  readonly seed?: number;
  readonly synthesizer?: SynthesizerName;
  /** Tasks in flight at once. @default 4 */
  readonly concurrency?: number;
  /** Tasks started per execution before continuing as new. @default 200 */
  readonly tasksPerExecution?: number;
  readonly settings?: Partial<SynthesisSettings>;
  /** Internal: carried across continue-as-new. */
  readonly carried?: { readonly nextIndex: number; readonly accepted: number; readonly finished: number; readonly startedAtMs: number };
}

export interface SynthesisRunState {
  readonly datasetId: string;
  readonly phase: 'synthesizing' | 'publishing' | 'done';
  readonly count: number;
  readonly started: number;
  readonly finished: number;
  readonly accepted: number;
}

export interface SynthesisStatistics {
  readonly candidates: number;
  readonly accepted: number;
  /** Candidates still standing after each stage (synthesis, then each check in order). */
  readonly yieldPerStage: Readonly<Record<string, number>>;
  readonly rejectionsByReason: Readonly<Record<string, number>>;
  readonly injectionsPerQuestion: number;
  readonly fuzzesPerQuestion: number;
  readonly hopsPerQuestion: number;
  readonly hopsDistribution: Readonly<Record<string, number>>;
  readonly medianSolverToolCalls: number;
  readonly shareSolverToolCallsAtLeast20: number;
  readonly solverPassRate: number;
  /** Closed-book error-rate lower bounds of accepted items, in buckets of 0.1. */
  readonly difficultyDistribution: Readonly<Record<string, number>>;
  readonly secondsPerAccepted: number;
  readonly tokensPerAccepted: number;
  /** Task-seconds and tokens (policy + chat model) per candidate, whatever became of it. */
  readonly secondsPerCandidate: number;
  readonly tokensPerCandidate: number;
  /** The chat model's calls and tokens over the run (the LLM path; zero on the grounded path; absent from runs made before it was counted). */
  readonly llm?: {
    readonly calls: number;
    readonly promptTokens: number;
    readonly completionTokens: number;
    readonly tokensPerCandidate: number;
  };
  /**
   * The evidence-only check beside the tool-using solver: candidates checked, passed, its pass rate,
   * and how many it would have rejected (failed) among those the tool-using solver passed. Absent from
   * runs made before the check existed.
   */
  readonly evidenceOnly?: {
    readonly checked: number;
    readonly passed: number;
    readonly passRate: number;
    readonly failedWhereSolverPassed: number;
  };
}

export interface SynthesisRunResult extends SynthesisStatistics {
  readonly datasetId: string;
  readonly blobKey: string;
  readonly contentHash: string;
  readonly wallSeconds: number;
}

/** Activities of the agent queue that the synthesis workflows call. */
export interface SynthesisActivities {
  synthesisBegin(input: { datasetId: string; synthesizer: SynthesizerName; seed: number; settings: SynthesisSettings }): Promise<void>;
  synthesisSeed(input: {
    synthesizer: SynthesizerName;
    seed: number;
    taskIndex: number;
    settings?: SynthesisSettings;
  }): Promise<{ state: SynthesisState | null; reason: string; llmUsage?: LlmUsage }>;
  synthesisInject(input: {
    state: SynthesisState;
    seed: number;
    round: number;
    final: boolean;
    settings?: SynthesisSettings;
  }): Promise<{ state: SynthesisState | null; reason: string; llmUsage?: LlmUsage }>;
  synthesisFuzz(input: {
    state: SynthesisState;
    seed: number;
    round: number;
    settings?: SynthesisSettings;
  }): Promise<{ state: SynthesisState | null; reason: string; llmUsage?: LlmUsage }>;
  synthesisVerify(input: {
    state: SynthesisState;
    settings?: SynthesisSettings;
  }): Promise<{ ok: boolean; reason: string; llmUsage?: LlmUsage }>;
  synthesisExit(input: {
    state: SynthesisState;
    settings?: SynthesisSettings;
  }): Promise<{ candidate: SynthesisCandidate | null; reason: string; llmUsage?: LlmUsage }>;
  checkQuality(input: CheckInput): Promise<CheckVerdict>;
  checkGrounding(input: CheckInput): Promise<CheckVerdict>;
  /**
   * Grounded: a proof over the knowledge base. LLM path: an alternative-answer check over the wrong
   * answers of the closed-book `samples`, the solver `attempts` and the synthesizer model's own guesses.
   */
  checkUniqueness(
    input: CheckInput & { samples?: readonly string[]; attempts?: readonly SolverAttempt[]; settings?: SynthesisSettings },
  ): Promise<CheckVerdict>;
  checkContamination(input: CheckInput): Promise<CheckVerdict>;
  /** `mode` policy: a run solves it with reward 1 (the documents it read are recorded, not required). @default gold */
  checkSolvability(input: CheckInput & { attempts: readonly SolverAttempt[]; mode?: SolverMode }): Promise<CheckVerdict>;
  checkDifficulty(input: CheckInput & { samples: readonly string[]; threshold: number; solverPassRate: number }): Promise<CheckVerdict>;
  /** The evidence-only prompt: the gold passages (each fact's span) and `distractors` corpus passages on the question, shuffled by `seed`. */
  evidenceOnlyPrompt(input: CheckInput & { distractors: number; seed: number }): Promise<EvidenceOnlyPrompt>;
  /** Scores the policy's `reply` to the evidence-only prompt and stores the `evidence` verdict (its answer, the passages). */
  checkEvidenceOnly(
    input: CheckInput & { prompt: EvidenceOnlyPrompt; reply: string; gate: boolean; tokens: number },
  ): Promise<CheckVerdict>;
  recordCandidate(input: RecordCandidateInput): Promise<void>;
  publishDataset(input: { datasetId: string; count: number }): Promise<SynthesisRunResult>;
}

/** One task's outcome as the workflow hands it to `recordCandidate` (the store's row derives from it). */
export interface RecordCandidateInput {
  readonly datasetId: string;
  readonly taskIndex: number;
  readonly workflowId: string;
  readonly accepted: boolean;
  readonly reason: string;
  readonly candidate: SynthesisCandidate | null;
  readonly state: SynthesisState | null;
  readonly seconds: number;
  /** Every token the candidate cost: the policy's generated tokens plus the chat model's prompt and completion tokens. */
  readonly tokens: number;
  /** The LLM path's chat-model calls and their tokens (part of `tokens`). */
  readonly llmUsage?: LlmUsage;
}

/** What the evidence-only check shows the policy: messages, and where each passage came from. */
export interface EvidenceOnlyPrompt {
  readonly messages: readonly { readonly role: 'system' | 'user'; readonly content: string }[];
  readonly passages: readonly { readonly documentId: string; readonly gold: boolean }[];
}

export interface CheckInput {
  readonly workflowId: string;
  readonly candidate: SynthesisCandidate;
}

export interface CheckVerdict {
  readonly check: SynthesisCheck;
  readonly passed: boolean;
  readonly reason: string;
  readonly details: Readonly<Record<string, unknown>>;
  /** Chat-model calls the check made (the LLM path's uniqueness judge). */
  readonly llmUsage?: LlmUsage;
}

/** One tool-using solver run (a trajectory child), as the solvability check reads it. */
export interface SolverAttempt {
  readonly trajectoryId: string;
  readonly reward: number;
  readonly answer: string | null;
  readonly turns: number;
  readonly recordKey: string;
}

export const synthesisRunStateQuery = defineQuery<SynthesisRunState>('state');
