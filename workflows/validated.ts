import { ApplicationFailure } from '@temporalio/workflow';
import { errorTypes } from './contracts/errors.js';
import { InputError } from './contracts/validate.js';

/** Run an input parser inside a workflow: a bad input fails the workflow at once, non-retryable, naming the field. */
export function validated<T>(parse: () => T): T {
  try {
    return parse();
  } catch (error) {
    if (error instanceof InputError) throw ApplicationFailure.nonRetryable(error.message, errorTypes.invalidInput, { field: error.field });
    throw error;
  }
}
