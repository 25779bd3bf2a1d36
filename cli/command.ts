/** The shape of a `longhaul` subcommand, and the error that means "bad usage" (exit 2). */
import { errorTypes, LonghaulError } from '../workflows/contracts/errors.js';

export interface Command {
  readonly name: string;
  /** One line for `longhaul --help`. */
  readonly summary: string;
  /** Full help text for `longhaul <name> --help`. */
  readonly usage: string;
  /** Returns the exit code. */
  run(args: string[]): Promise<number>;
}

/** Bad flags or arguments: the CLI adds a pointer to the command's --help and exits 2. */
export class UsageError extends LonghaulError {
  constructor(message: string) {
    super(errorTypes.invalidInput, message);
    this.name = 'UsageError';
  }
}
