/** Port: finished trajectory rows (the record itself is a blob). */
export interface TrajectoryRow {
  readonly trajectoryId: string;
  readonly runId: string;
  readonly dataset: string;
  readonly questionId: string;
  readonly question: string;
  readonly answer: string | null;
  readonly gold: readonly string[];
  readonly reward: number;
  readonly rewardParts: Readonly<Record<string, number>>;
  readonly stopReason: string;
  readonly turns: number;
  readonly invalidSteps: number;
  readonly generatedTokens: number;
  readonly versions: readonly number[];
  readonly recordKey: string;
}

export interface TrajectoryStore {
  /** Insert once; a second insert for the same id is a no-op returning false. */
  insert(row: TrajectoryRow): Promise<boolean>;
  get(trajectoryId: string): Promise<TrajectoryRow | undefined>;
}
