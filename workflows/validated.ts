import { toApplicationFailure } from './contracts/application-failure.js';
import { LonghaulError } from './contracts/errors.js';

/** Run an input parser inside a workflow: a bad input fails the workflow at once, non-retryable, naming the field. */
export function validated<T>(parse: () => T): T {
  try {
    return parse();
  } catch (error) {
    if (LonghaulError.is(error)) throw toApplicationFailure(error);
    throw error;
  }
}
