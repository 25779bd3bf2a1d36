/** The shape of a `longhaul` subcommand, and the error that means "bad usage" (exit 2). */
export interface Command {
  readonly name: string;
  /** One line for `longhaul --help`. */
  readonly summary: string;
  /** Full help text for `longhaul <name> --help`. */
  readonly usage: string;
  /** Returns the exit code. */
  run(args: string[]): Promise<number>;
}

export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}
