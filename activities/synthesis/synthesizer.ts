/**
 * The action interface every synthesizer implements (grounded.synthesizer.ts with the knowledge base,
 * llm.synthesizer.ts with prompts to a chat model): seed, inject, fuzz, verify, exit. Each action is
 * one activity of `synthesizeQuestion`; a null state means the action could not be taken, with why.
 * `settings` reach the actions of the LLM path (its endpoint, its retry bound); the grounded one needs none.
 */
import type {
  LlmUsage,
  SynthesisCandidate,
  SynthesisSettings,
  SynthesisState,
  SynthesizerName,
} from '../../workflows/contracts/synthesis.contract.js';

export interface ActionOutcome {
  readonly state: SynthesisState | null;
  readonly reason: string;
  /** The chat-model calls the action made (LLM path), counted into the candidate's tokens. */
  readonly llmUsage?: LlmUsage;
}

export interface Synthesizer {
  readonly name: SynthesizerName;
  seed(input: { seed: number; taskIndex: number; settings?: SynthesisSettings | undefined }): Promise<ActionOutcome>;
  /** Grow the chain by one hop; the answer stays the same. `final`: the last hop wanted (no need to leave a way on). */
  inject(
    state: SynthesisState,
    options: { seed: number; round: number; final: boolean; settings?: SynthesisSettings | undefined },
  ): Promise<ActionOutcome>;
  /** Obscure one literal; the answer stays unique. */
  fuzz(state: SynthesisState, random: { seed: number; round: number; settings?: SynthesisSettings | undefined }): Promise<ActionOutcome>;
  /** Is the candidate still valid (one answer, not in the question)? */
  verify(state: SynthesisState, settings?: SynthesisSettings): Promise<{ ok: boolean; reason: string; llmUsage?: LlmUsage }>;
  /** The finished candidate: question text, facts with spans, gold solution path. */
  exit(
    state: SynthesisState,
    settings?: SynthesisSettings,
  ): Promise<{ candidate: SynthesisCandidate | null; reason: string; llmUsage?: LlmUsage }>;
}
