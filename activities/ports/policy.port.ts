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
}

export interface PolicyBackend {
  readonly name: PolicyBackendName;
  /** Generate; an aborted signal ends the generation early with finishReason "interrupted". */
  generate(request: GenerateRequest, signal?: AbortSignal): Promise<GenerateResult>;
  /** The version this backend serves now. */
  currentVersion(): Promise<number>;
}
