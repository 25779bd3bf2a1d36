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
  /** Something looked up by key (a blob) is not there (yet); retried like `unavailable`. */
  notFound: 'LonghaulNotFound',
} as const;

export type ErrorType = (typeof errorTypes)[keyof typeof errorTypes];

export const nonRetryableErrorTypes: readonly ErrorType[] = [errorTypes.invalidInput, errorTypes.corrupt];

export interface LonghaulErrorOptions {
  /** The input field, flag, variable or file at fault; the message starts with it. */
  readonly field?: string;
  /** Whether a retry can help. @default false for the types in `nonRetryableErrorTypes`, true otherwise */
  readonly retryable?: boolean;
  readonly cause?: unknown;
}

/**
 * The one error class of the project: a stable `code` (the Temporal failure type it becomes, see
 * `toApplicationFailure`), whether retrying can help, and a message that names the field and the fix.
 * Pure (no Temporal import) so every layer, workflow code included, can throw it.
 */
export class LonghaulError extends Error {
  readonly code: ErrorType;
  readonly retryable: boolean;
  readonly field: string | undefined;
  /** Stable marker: `LonghaulError.is` recognises an error from another copy of this module (the workflow bundle). */
  readonly longhaulError = true;

  constructor(code: ErrorType, detail: string, options: LonghaulErrorOptions = {}) {
    super(
      options.field === undefined ? detail : `${options.field}: ${detail}`,
      options.cause === undefined ? undefined : { cause: options.cause },
    );
    this.name = 'LonghaulError';
    this.code = code;
    this.retryable = options.retryable ?? !nonRetryableErrorTypes.includes(code);
    this.field = options.field;
  }

  /** The message without the leading "<field>: ". */
  get detail(): string {
    return this.field === undefined ? this.message : this.message.slice(this.field.length + 2);
  }

  static is(error: unknown): error is LonghaulError {
    return error instanceof LonghaulError || (error instanceof Error && (error as { longhaulError?: unknown }).longhaulError === true);
  }
}

/** Bad input: non-retryable `LonghaulInvalidInput` naming `field`. */
export function invalidInput(field: string | undefined, detail: string): LonghaulError {
  return new LonghaulError(errorTypes.invalidInput, detail, field === undefined ? {} : { field });
}
