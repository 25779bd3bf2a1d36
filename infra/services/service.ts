/** What `longhaul up/down/status` manage: one object per service. */
export interface ServiceStatus {
  readonly name: string;
  /** True when Longhaul runs this service itself; false when the user provides it (env var set). */
  readonly embedded: boolean;
  readonly running: boolean;
  readonly address: string;
  readonly pid?: number;
  readonly detail?: string;
}

export interface Service {
  readonly name: string;
  /** Start if needed; a second call is harmless. Throws serviceError(…) (a LonghaulError with a fix) on failure. */
  start(): Promise<void>;
  /** Stop if we started it; keeps all data. */
  stop(): Promise<void>;
  status(): Promise<ServiceStatus>;
}
