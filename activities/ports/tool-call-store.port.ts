/** Port: per-call statistics and the result cache of the tool system. */
export interface ToolCallRow {
  readonly tool: string;
  readonly turnKey: string;
  readonly callIndex: number;
  readonly ok: boolean;
  readonly invalid: boolean;
  readonly cacheHit: boolean;
  readonly latencyMs: number;
}

export interface ToolStats {
  readonly tool: string;
  readonly calls: number;
  readonly successRate: number;
  readonly invalidRate: number;
  readonly cacheHitRate: number;
  readonly p50Ms: number;
  readonly p95Ms: number;
}

/** What the cache keeps of a tool result (everything but per-call latency and the cache flag). */
export interface CachedToolResult {
  readonly ok: boolean;
  readonly observation: string;
  readonly documentIds: readonly string[];
}

export interface ToolCallStore {
  record(rows: readonly ToolCallRow[]): Promise<void>;
  /** A cached result that has not expired, or null. */
  cacheGet(tool: string, inputKey: string): Promise<CachedToolResult | null>;
  cachePut(tool: string, inputKey: string, result: CachedToolResult, ttlMs: number): Promise<void>;
  /** Per-tool statistics over calls since `since` (all calls when omitted). */
  stats(since?: Date): Promise<ToolStats[]>;
}
