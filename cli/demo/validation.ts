/**
 * Keeping the best RL version, not the last (`longhaul demo --validation N`): which versions are evaluated on the
 * validation questions, and which of them is kept. Pure; cli/commands/demo.command.ts runs the evaluations.
 */

/** The version RL started from, every `every`-th version after it, and the last one (always), ascending. */
export function validationVersions(start: number, last: number, every: number): number[] {
  if (!Number.isInteger(every) || every < 1) throw new RangeError(`every must be a positive integer, got ${every}`);
  const versions: number[] = [];
  for (let version = start; version < last; version += every) versions.push(version);
  versions.push(last);
  return [...new Set(versions)];
}

/** The version with the highest validation EM; among equals the latest (more training for the same score). */
export function bestValidated<T extends { readonly version: number; readonly em: number }>(rows: readonly T[]): T {
  if (rows.length === 0) throw new RangeError('no validated version to choose from');
  return rows.reduce((best, row) => (row.em > best.em || (row.em === best.em && row.version > best.version) ? row : best));
}
