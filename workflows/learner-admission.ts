/**
 * When the learner may start another group of rollouts: AReaL's staleness bound on admission, pure so
 * that it can be unit-tested apart from the workflow.
 *
 * A rollout started now is generated with the current version v and can only be trained on once the
 * trainer reaches it; to be consumed while still within η versions it must be among the first
 * (v − v₀ + η + 1) · B trajectories of the run (B the batch size, v₀ the start version). Dropped
 * trajectories will never be consumed, so they do not count against the bound. With nothing in
 * flight, nothing training and too little ready to train, the bound is waived: it must never stall
 * a run (stale drops can leave the window full of nothing).
 */
export interface AdmissionSettings {
  readonly groupSize: number;
  readonly batchSize: number;
  /** Maximum staleness η in policy versions. */
  readonly eta: number;
  readonly maxInflight: number;
}

export interface AdmissionState {
  /** Trajectories started so far in this run (all groups). */
  readonly started: number;
  /** Trajectories dropped (equal-reward groups, too stale): never to be consumed. */
  readonly dropped: number;
  /** Trajectories started and not yet reported. */
  readonly inflight: number;
  /** Trajectories of settled groups, kept and not yet consumed. */
  readonly ready: number;
  readonly version: number;
  readonly startVersion: number;
  readonly training: boolean;
  readonly paused: boolean;
  readonly questionsLeft: boolean;
}

/** Trajectories that may have been started in total while the trainer is at `version`. */
export function stalenessCapacity(settings: Pick<AdmissionSettings, 'batchSize' | 'eta'>, version: number, startVersion: number): number {
  return (version - startVersion + settings.eta + 1) * settings.batchSize;
}

/** True when one more group of `groupSize` rollouts may start now. */
export function mayAdmitGroup(state: AdmissionState, settings: AdmissionSettings): boolean {
  if (state.paused || !state.questionsLeft) return false;
  if (state.inflight + settings.groupSize > settings.maxInflight) return false;
  const starved = state.inflight === 0 && !state.training && state.ready < settings.batchSize;
  const withinBound = state.started - state.dropped + settings.groupSize <= stalenessCapacity(settings, state.version, state.startVersion);
  return starved || withinBound;
}
