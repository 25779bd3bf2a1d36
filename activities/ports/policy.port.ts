/**
 * Port: a policy that generates text. Two backends implement it (DESIGN §3.6): `onnx` (the local
 * SmolLM2 policy in the gpu-infer worker) and `openai` (any OpenAI-compatible server).
 */
/** The policy backends (LONGHAUL_POLICY_BACKEND): local ONNX model, an OpenAI-compatible server, or the scripted fake. */
export const policyBackendNames = ['onnx', 'openai', 'scripted'] as const;
export type PolicyBackendName = (typeof policyBackendNames)[number];

/** Why a generation ended: a stop string or end of text, the token limit, or an interrupt (resumed later). */
export const finishReasons = ['stop', 'length', 'interrupted'] as const;
export type FinishReason = (typeof finishReasons)[number];

export interface SamplingOptions {
  /** Maximum new tokens. */
  readonly maxNewTokens: number;
  /** 0 means greedy. @default 0 */
  readonly temperature?: number;
  /** Nucleus sampling mass. @default 1 */
  readonly topP?: number;
  /** Seed for sampling; the same seed, prompt and version give the same tokens. */
  readonly seed?: number;
  /** Generation stops after any of these strings (included in the text). */
  readonly stop?: readonly string[];
}

export interface GenerateRequest extends SamplingOptions {
  /** The full prompt text (the backend applies no chat template unless `chat` is set). */
  readonly prompt: string;
  /** Chat mode: `prompt` is ignored and these messages go through the model's chat template. */
  readonly messages?: readonly { role: 'system' | 'user' | 'assistant' | 'tool'; content: string }[];
  /** Tokens generated so far for this turn by an interrupted generation: continue after them. */
  readonly prefixTokenIds?: readonly number[];
  /** Behaviour log-probabilities of the prefix tokens as first generated (kept, not recomputed). */
  readonly prefixLogprobs?: readonly number[];
  /** Policy versions that generated the prefix tokens (default: the version serving now). */
  readonly prefixTokenVersions?: readonly number[];
  /**
   * Teacher forcing: the output is this text, tokenised by the policy and scored (behaviour
   * logprobs under the serving version), not sampled. Gold solution paths for the warm start go
   * through the same agent loop this way. Not combinable with prefixTokenIds.
   */
  readonly forcedText?: string;
}

/** What training needs from a generation that a server may not send. */
export const trainingFields = ['tokenIds', 'logprobs'] as const;
export type TrainingField = (typeof trainingFields)[number];
/** Where a generation's token count came from. */
export const tokenCountSources = ['tokenIds', 'usage', 'estimate'] as const;
export type TokenCountSource = (typeof tokenCountSources)[number];

export interface GenerateResult {
  readonly text: string;
  readonly promptTokenIds: readonly number[];
  /** Generated token ids (including any resumed prefix). */
  readonly tokenIds: readonly number[];
  /** Behaviour log-probabilities, one per generated token (empty when the server cannot return them). */
  readonly logprobs: readonly number[];
  /** Policy version that produced each generated token. */
  readonly tokenVersions: readonly number[];
  readonly policyVersion: number;
  readonly finishReason: FinishReason;
  /**
   * Present when the server returned no token ids or no logprobs (llama.cpp, Ollama, hosted APIs):
   * what is missing, and the generated token count taken from `tokenIds`, from the server's
   * `usage.completion_tokens`, or estimated from the text (one token per 4 characters) when it
   * sends neither. Such a generation cannot be trained on.
   */
  readonly untrainable?: {
    readonly missing: readonly TrainingField[];
    readonly generatedTokens: number;
    readonly countedFrom: TokenCountSource;
  };
  /** The server's own token counts (OpenAI `usage`), when a server backend received them. */
  readonly usage?: { readonly promptTokens: number; readonly completionTokens: number };
}

/** Tokens a generation produced: its token ids, or the server's count when it sent none. */
export function generatedTokenCount(result: Pick<GenerateResult, 'tokenIds' | 'untrainable'>): number {
  return result.untrainable?.generatedTokens ?? result.tokenIds.length;
}

/** What a backend can give the learner: RL needs token ids and behaviour logprobs for every generated token. */
export interface PolicyCapabilities {
  readonly tokenIds: boolean;
  readonly logprobs: boolean;
  /** How this was found out, e.g. "probed http://…/v1/completions: no token ids in the response". */
  readonly detail: string;
}

export interface PolicyBackend {
  readonly name: PolicyBackendName;
  /** Generate; an aborted signal ends the generation early with finishReason "interrupted". */
  generate(request: GenerateRequest, signal?: AbortSignal): Promise<GenerateResult>;
  /** The version this backend serves now. */
  currentVersion(): Promise<number>;
  /** Whether its generations carry token ids and logprobs (a server backend asks its server). */
  capabilities(): Promise<PolicyCapabilities>;
}
