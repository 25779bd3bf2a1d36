/**
 * The action interface every synthesizer implements (the grounded one here; an LLM-driven one can
 * implement the same actions as prompts): seed, inject, fuzz, verify, exit. Each action is one
 * activity of `synthesizeQuestion`; a null state means the action could not be taken, with why.
 */
import type { SynthesisCandidate, SynthesisState, SynthesizerName } from '../../workflows/contracts/synthesis.contract.js';

export interface ActionOutcome {
  readonly state: SynthesisState | null;
  readonly reason: string;
}

export interface Synthesizer {
  readonly name: SynthesizerName;
  seed(input: { seed: number; taskIndex: number }): Promise<ActionOutcome>;
  /** Grow the chain by one hop; the answer stays the same. `final`: the last hop wanted (no need to leave a way on). */
  inject(state: SynthesisState, options: { seed: number; round: number; final: boolean }): Promise<ActionOutcome>;
  /** Obscure one literal; the answer stays unique. */
  fuzz(state: SynthesisState, random: { seed: number; round: number }): Promise<ActionOutcome>;
  /** Is the candidate still valid (one answer, not in the question)? */
  verify(state: SynthesisState): Promise<{ ok: boolean; reason: string }>;
  /** The finished candidate: question text, facts with spans, gold solution path. */
  exit(state: SynthesisState): Promise<{ candidate: SynthesisCandidate | null; reason: string }>;
}
