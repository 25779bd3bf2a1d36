/**
 * Port: OpenAI-compatible chat models by endpoint (the LLM-driven synthesizer's). The API key and the
 * request time limit come from the worker's configuration; a run names only the endpoint and model.
 */
import type { PolicyBackend } from './policy.port.js';

export interface ChatEndpoint {
  /** Base URL ending in /v1. */
  readonly baseUrl: string;
  readonly model: string;
}

export interface ChatModels {
  /** The configured endpoint (baseUrl null: none configured). */
  readonly defaults: { readonly baseUrl: string | null; readonly model: string };
  /** A backend for the endpoint; one request per call (no retries of its own: callers bound their retries). */
  open(endpoint: ChatEndpoint): PolicyBackend;
}
