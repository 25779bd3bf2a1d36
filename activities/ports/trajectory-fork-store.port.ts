/** Port: the lineage of forked trajectories (`longhaul fork`), so forks can be shown as a tree. */
export interface ForkRow {
  readonly childId: string;
  readonly parentId: string;
  /** Turns 0..forkTurn-1 of the child replay the parent's text. */
  readonly forkTurn: number;
  readonly seed: number;
  readonly temperature: number;
}

/** A node of a fork tree: the trajectory, how it was forked (absent for the root) and its outcome when it has finished. */
export interface ForkTreeNode {
  readonly trajectoryId: string;
  readonly fork?: Omit<ForkRow, 'childId' | 'parentId'>;
  readonly outcome?: { readonly reward: number; readonly turns: number; readonly stopReason: string; readonly answer: string | null };
  readonly children: readonly ForkTreeNode[];
}

export interface TrajectoryForkStore {
  /** Insert once per child; a second insert for the same child is a no-op. */
  record(row: ForkRow): Promise<void>;
  /** The parent row of a trajectory, if it is a fork. */
  parentOf(trajectoryId: string): Promise<ForkRow | undefined>;
  /** The tree under the root of `trajectoryId`'s lineage (its furthest ancestor). */
  tree(trajectoryId: string): Promise<ForkTreeNode>;
}
