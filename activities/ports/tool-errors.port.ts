/**
 * Port: how a tool adapter says that a failure may pass (HTTP 429 or 5xx, a timeout, a dropped
 * connection) and how long the server asked it to wait. The tool limiter (activities/tools/limits.ts)
 * retries only such failures, never a refusal (HTTP 4xx, an SSRF refusal, bad content).
 */
export class ToolUnavailable extends Error {
  readonly transient = true;
  /**
   * @param retryAfterMs what the server's `Retry-After` header asked for, or null when it gave none.
   */
  constructor(
    message: string,
    readonly retryAfterMs: number | null = null,
  ) {
    super(message);
    this.name = 'ToolUnavailable';
  }
}

/** True for errors a retry may cure: ToolUnavailable, or any error that carries `transient: true`. */
export function isTransient(error: unknown): error is Error & { retryAfterMs?: number | null } {
  return error instanceof Error && (error as { transient?: unknown }).transient === true;
}

/** Reads a `Retry-After` header (seconds, or an HTTP date) into milliseconds from `now`; null when absent or unreadable. */
export function parseRetryAfter(header: string | null | undefined, now = Date.now()): number | null {
  if (header === null || header === undefined || header.trim() === '') return null;
  const text = header.trim();
  if (/^\d+(\.\d+)?$/.test(text)) return Math.round(Number(text) * 1000);
  const date = Date.parse(text);
  return Number.isNaN(date) ? null : Math.max(0, date - now);
}
