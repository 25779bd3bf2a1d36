/**
 * Stable failure types. Activities fail with ApplicationFailure whose `type` is one of these;
 * the non-retryable ones feed `nonRetryableErrorTypes` in activity options.
 */
export const errorTypes = {
  /** Input failed validation at a boundary; retrying cannot help. */
  invalidInput: 'LonghaulInvalidInput',
  /** A dependency (database, blob store, inference server) is unreachable; retried with backoff. */
  unavailable: 'LonghaulUnavailable',
  /** Data found in a store contradicts an invariant (corrupt blob, hash mismatch). */
  corrupt: 'LonghaulCorrupt',
} as const;

export type ErrorType = (typeof errorTypes)[keyof typeof errorTypes];

export const nonRetryableErrorTypes: readonly ErrorType[] = [errorTypes.invalidInput, errorTypes.corrupt];
