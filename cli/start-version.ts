/** The policy version a command's run starts from (see runStartVersion), for the demo, train and warm-start. */
import type { PolicyVersionStore } from '../activities/ports/policy-version-store.port.js';
import { runStartVersion } from '../gpu/infer/policy-store.js';
import { integerFlag } from './arguments.js';
import { UsageError } from './command.js';

/** `--<flag> N` read as a version number (undefined: the latest), refused (exit 2) before anything starts. */
export function startVersionRequest(value: string | undefined, flag: string): number | undefined {
  return value === undefined ? undefined : integerFlag(value, flag, 0, 0, 1_000_000_000);
}

/**
 * The version a run starts from, for a request read with startVersionRequest (undefined: the latest); a version
 * that is not registered is a UsageError naming the flag, and a fork is said on stderr.
 */
export async function startVersionFlag(versions: PolicyVersionStore, requested: number | undefined, flag: string): Promise<number> {
  const { version, forkedFrom } = await runStartVersion(versions, requested).catch((error: unknown) => {
    throw new UsageError(`--${flag}: ${(error as Error).message}`);
  });
  if (forkedFrom !== null) console.error(`  v${forkedFrom} registered again as v${version} to start from (versions only grow)`);
  return version;
}
