/**
 * Port: the LLM judge of rewardMetric "judge" — an OpenAI-compatible chat model reached through a
 * PolicyBackend (the `openai` backend in practice), with the model and endpoint it names, which
 * are recorded beside each verdict.
 */
import type { PolicyBackend } from './policy.port.js';

export interface Judge {
  readonly backend: PolicyBackend;
  readonly model: string;
  readonly baseUrl: string;
}
