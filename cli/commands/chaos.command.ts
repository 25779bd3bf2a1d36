import { randomInt } from 'node:crypto';
import { config } from '../../infra/config.js';
import { runChaos } from '../../bench/chaos/chaos-suite.js';
import { integerFlag, parseFlags } from '../arguments.js';
import { UsageError, type Command } from '../command.js';
import { onInterrupt } from '../interrupt.js';

export const chaosCommand: Command = {
  name: 'chaos',
  summary: 'random kills and server restarts during a learner run, then the durability invariants checked',
  usage: `longhaul chaos [--faults N] [--seed S] [--port-base P] [--pause-ms MIN-MAX] [--keep] [--json]

Starts a stack of its own (fresh home under the system's temp folder, ports from --port-base), the
four worker kinds as processes, and a learner run with a scripted policy, a non-idempotent ledger
tool and a simulated trainer. Then it injects N faults from a seeded random sequence: kill -9 of
agent, gpu-infer, tools (half of them aimed between the tool's side effect and its completion) and
gpu-train workers, restarts of the Temporal server, Postgres and the S3 server, and one fill of the
blob store's disk (a 256 MiB tmpfs; needs root, else skipped and said). Every kind comes once in the
first eight faults. Then the run winds down and the invariants are checked: every started trajectory
completed with exactly one record or is still running; no record consumed by two steps; versions
consecutive; buffer counts exact; no unreferenced blob; no side effect applied twice.
Exit 0 when there are no violations, 1 otherwise. Print the seed to replay a run's fault sequence.

  --faults N        faults to inject (default 50)
  --seed S          random seed (default: a random one, printed)
  --port-base P     Temporal P, its UI P+1, Postgres P+2, S3 P+3 (SeaweedFS also uses P+1003…P+1006
                    and P+10003…) (default 27300)
  --pause-ms A-B    pause between faults, uniformly in [A, B] ms (default 2000-6000)
  --keep            keep the stack's home (logs, data) after the run
  --json            end stdout with one JSON line: kills, server_restarts, trajectories, completed, violations, seed, …`,
  async run(args) {
    const { values } = parseFlags(args, {
      faults: { type: 'string' },
      seed: { type: 'string' },
      'port-base': { type: 'string' },
      'pause-ms': { type: 'string' },
      keep: { type: 'boolean' },
      json: { type: 'boolean' },
    });
    const faults = integerFlag(values.faults, 'faults', 50, 1, 10_000);
    const seed = integerFlag(values.seed, 'seed', randomInt(1, 2 ** 31 - 1), 0, 2 ** 32 - 1);
    const portBase = integerFlag(values['port-base'], 'port-base', 27300, 1024, 54_000);
    const pause = pauseRange(values['pause-ms']);
    const started = Date.now();
    const log = (line: string) => console.error(`[chaos ${((Date.now() - started) / 1000).toFixed(0).padStart(4)} s] ${line}`);
    console.error(`longhaul chaos: seed ${seed} (replay with --seed ${seed} --faults ${faults})`);
    const summary = await runChaos({
      faults,
      seed,
      portBase,
      toolsDir: config().toolsDir,
      pauseSeconds: [pause[0] / 1000, pause[1] / 1000],
      keep: values.keep === true,
      log,
      onInterrupt,
    });
    for (const note of summary.notes) console.log(`note: ${note}`);
    for (const violation of summary.violationDetails) console.log(`VIOLATION: ${violation}`);
    console.log(
      `chaos: ${summary.kills} kills (${summary.mid_effect_kills} between a side effect and its completion), ${summary.server_restarts} server restarts, ` +
        `${summary.disk_fills} disk fill; ${summary.trajectories} trajectories (${summary.completed} completed, ${summary.resumable} still running), ` +
        `${summary.steps} training steps; ${summary.violations} violations; seed ${summary.seed}; ${summary.seconds} s`,
    );
    if (values.json === true) {
      const { violationDetails: _details, faults: _faults, notes: _notes, ...counts } = summary;
      console.log(JSON.stringify(counts));
    }
    return summary.violations === 0 ? 0 : 1;
  },
};

function pauseRange(value: string | undefined): [number, number] {
  if (value === undefined) return [2000, 6000];
  const match = /^(\d+)-(\d+)$/.exec(value);
  const low = Number(match?.[1]);
  const high = Number(match?.[2]);
  if (!match || low > high || high > 600_000) {
    throw new UsageError(
      `--pause-ms: expected MIN-MAX in milliseconds with MIN ≤ MAX ≤ 600000 (e.g. 2000-6000), got ${JSON.stringify(value)}`,
    );
  }
  return [low, high];
}
