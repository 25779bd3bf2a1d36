/** What `longhaul up/down/status` manage: one object per service. */
export interface ServiceStatus {
  readonly name: string;
  /** True when Longhaul runs this service itself; false when the user provides it (env var set). */
  readonly embedded: boolean;
  readonly running: boolean;
  readonly address: string;
  readonly pid?: number;
  readonly detail?: string;
  /** A worker's Prometheus endpoint (LONGHAUL_METRICS_PORT), when the endpoints are on. */
  readonly metrics?: string;
}

/**
 * What a start did: `launched` a process (which `stop()` undoes), `reused` one already running or
 * provided, or `restarted` one that ran older code (a worker started before the last build).
 */
export type StartOutcome = 'launched' | 'reused' | 'restarted';

export interface Service {
  readonly name: string;
  /**
   * Start if needed; a second call is harmless. Throws serviceError with a fix on failure, and then
   * leaves nothing of its own running (a process it launched is stopped again before it throws).
   */
  start(): Promise<StartOutcome>;
  /** Stop if we started it; keeps all data. */
  stop(): Promise<void>;
  status(): Promise<ServiceStatus>;
}
