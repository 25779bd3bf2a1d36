/** Port: rows of the skeleton workflow's steps. */
export interface SkeletonStepRow {
  readonly workflowId: string;
  readonly step: number;
  readonly blobKey: string;
  readonly attempt: number;
}

export interface SkeletonStepStore {
  /** Insert once per (workflowId, step); a repeat is a no-op that returns inserted=false. */
  record(row: SkeletonStepRow): Promise<{ inserted: boolean }>;
  list(workflowId: string): Promise<SkeletonStepRow[]>;
}
