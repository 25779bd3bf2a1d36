/**
 * The one translation from errors to Temporal failures, used by every activity and by workflow input
 * checks: a LonghaulError becomes an ApplicationFailure of type `code`, non-retryable unless
 * `retryable`; a Temporal failure (cancellation included) passes through; anything else is an
 * unexpected fault and is retried as `LonghaulUnavailable`.
 */
import { ApplicationFailure, TemporalFailure } from '@temporalio/common';
import { errorTypes, LonghaulError } from './errors.js';

/** `context` (the activity's name, say) prefixes the message so the failure says where it happened. */
export function toApplicationFailure(error: unknown, context?: string): unknown {
  if (error instanceof TemporalFailure) return error;
  const prefix = context === undefined ? '' : `${context}: `;
  if (LonghaulError.is(error)) {
    return ApplicationFailure.create({
      message: `${prefix}${error.message}`,
      type: error.code,
      nonRetryable: !error.retryable,
      ...(error.field === undefined ? {} : { details: [{ field: error.field }] }),
    });
  }
  const message = error instanceof Error ? error.message : String(error);
  return ApplicationFailure.create({ message: `${prefix}${message}`, type: errorTypes.unavailable, nonRetryable: false });
}
