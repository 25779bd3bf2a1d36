/** Activities of the scheduled workflows (workflows/schedules.workflow.ts): the newest policy version, and a stored benchmark run. */
import { Context } from '@temporalio/activity';
import type { BenchmarkResultStore, BenchmarkRunner } from '../ports/benchmark-result-store.port.js';
import type { PolicyVersionStore } from '../ports/policy-version-store.port.js';
import { toApplicationFailure } from '../../workflows/contracts/application-failure.js';
import type { ScheduleActivities } from '../../workflows/contracts/schedules.contract.js';

export function createScheduleActivities(deps: {
  versions: Pick<PolicyVersionStore, 'latest'>;
  benchmarks: BenchmarkResultStore;
  runBenchmark: BenchmarkRunner;
  /** git commit of the code this worker runs ('' when unknown). */
  commit: () => string;
}): ScheduleActivities {
  return {
    async scheduledRunContext() {
      return { policyVersion: (await deps.versions.latest())?.version ?? null, commit: deps.commit() };
    },
    async runScheduledBenchmark({ id, benchmark, args = [] }) {
      const stored = await deps.benchmarks.get(id);
      if (stored) return stored;
      const policyVersion = (await deps.versions.latest())?.version ?? null;
      let last = '';
      const beat = setInterval(() => Context.current().heartbeat(last), 10_000);
      try {
        const { result, seconds } = await deps.runBenchmark(benchmark, args, (line) => {
          last = line.slice(0, 500);
        });
        const record = { id, benchmark, args: [...args], policyVersion, gitCommit: deps.commit(), seconds, result };
        await deps.benchmarks.insert(record);
        return (await deps.benchmarks.get(id)) ?? record;
      } catch (error) {
        // Refused flags (exit 2) fail at once, without retry; a crash is retried as unavailable.
        throw toApplicationFailure(error, `bench ${benchmark}`);
      } finally {
        clearInterval(beat);
      }
    },
  };
}
