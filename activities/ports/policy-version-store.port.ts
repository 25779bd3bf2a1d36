/** Port: the registry of policy versions (Postgres table policy_versions). Files live in the blob store. */
export interface PolicyFile {
  readonly name: string;
  readonly bytes: number;
  readonly sha256: string;
}

export interface PolicyVersionRow {
  readonly version: number;
  readonly name: string;
  /** Blob-store folder holding the files, ending with "/". */
  readonly blobPrefix: string;
  readonly files: readonly PolicyFile[];
  /** The prepared folder's longhaul-model.json. */
  readonly manifest: Record<string, unknown>;
  readonly parentVersion: number | null;
  readonly createdAt?: Date;
  /** When `longhaul model prune` deleted its files (null or absent: they are in the blob store). */
  readonly prunedAt?: Date | null;
}

export interface PolicyVersionStore {
  /** Insert once; returns false (and changes nothing) when the version is already registered. */
  register(row: PolicyVersionRow): Promise<{ inserted: boolean }>;
  get(version: number): Promise<PolicyVersionRow | undefined>;
  /** The highest registered version, if any. */
  latest(): Promise<PolicyVersionRow | undefined>;
  /** Every registered version with `from` ≤ version ≤ `to`, in version order. */
  list(range?: { from?: number; to?: number }): Promise<PolicyVersionRow[]>;
  /** Record that the version's files were deleted (the row stays). */
  markPruned(version: number): Promise<void>;
}
