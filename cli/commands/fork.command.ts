import { config } from '../../infra/config.js';
import { openServices } from '../../composition/services.js';
import { stackUp } from '../../infra/services/stack.js';
import { createPgTrajectoryForkStore } from '../../infra/postgres/trajectory-fork-store.pg.js';
import { taskQueueName } from '../../workflows/contracts/queues.js';
import { integerFlag, parseFlags } from '../arguments.js';
import { UsageError, type Command } from '../command.js';
import { formatForkTree, planFork, runFork, type ForkDependencies } from '../fork.js';

export const forkCommand: Command = {
  name: 'fork',
  summary: 'replay a recorded trajectory up to turn k and sample N continuations from there; --tree lists its forks',
  usage: `longhaul fork <trajectory-id> --at K -n N [--temperature T] [--seed S] [--id PREFIX] [--json]
longhaul fork --tree <trajectory-id> [--json]

Starts N trajectories that replay the first K turns of a finished trajectory exactly (its recorded
text, teacher-forced: scored by the policy, not sampled; the tools run again) and sample from turn K
on, child i with seed S+i. They take the parent's settings (question, gold answers, limits, protocol,
tools) from its workflow input in Temporal's history, or from its record when the history is gone, and
the policy version of turn K. When they finish, each child's replayed turns are compared with the
parent's: the text is identical by construction; an observation that differs means a tool is not
deterministic over the corpus (a web tool, a changed corpus) and is printed as a mismatch.
The lineage (parent, turn, seed, temperature) is kept in Postgres (trajectory_forks) and in each
child's record (forkOf). Forks join no learner run.

  <trajectory-id>   a finished trajectory (workflow id), e.g. from longhaul run --json
  --at K            turns replayed before sampling, 0..the parent's turn count
  -n, --count N     continuations to sample (1..64)
  --temperature T   sampling temperature of the continuations (default: the parent's if it sampled, else 0.7)
  --seed S          seed of the first continuation; child i uses S+i (default 1)
  --id PREFIX       workflow ids PREFIX-0 … PREFIX-(N-1) (default <trajectory-id>-fork<K>-<time>)
  --tree            print the fork tree the trajectory belongs to (from its root), with each outcome
  --json            print the result (or the tree) as JSON on the last line`,
  async run(args) {
    const { values, positionals } = parseFlags(
      args,
      {
        at: { type: 'string' },
        count: { type: 'string', short: 'n' },
        temperature: { type: 'string' },
        seed: { type: 'string' },
        id: { type: 'string' },
        tree: { type: 'boolean' },
        json: { type: 'boolean' },
      },
      true,
    );
    const [trajectoryId, ...extra] = positionals;
    if (!trajectoryId) throw new UsageError('<trajectory-id> is required, e.g. longhaul fork run-2025-01-01T00-00-00-000Z --at 2 -n 4');
    if (extra.length > 0)
      throw new UsageError(`one <trajectory-id> expected, got also ${extra.map((word) => JSON.stringify(word)).join(' ')}`);
    if (values.tree) {
      for (const flag of ['at', 'count', 'temperature', 'seed', 'id'] as const)
        if (values[flag] !== undefined) throw new UsageError(`--${flag} does not go with --tree (which only lists forks)`);
      const settings = config();
      await stackUp(settings, { workers: false });
      const services = openServices(settings);
      try {
        const tree = await createPgTrajectoryForkStore(services.pool).tree(trajectoryId);
        if (tree.children.length === 0 && !(await services.trajectories.get(trajectoryId)))
          throw new UsageError(`<trajectory-id>: "${trajectoryId}" is neither a finished trajectory nor part of a fork tree`);
        for (const line of formatForkTree(tree, (id) => (id === trajectoryId ? `${id} *` : id))) console.log(line);
        if (values.json) console.log(JSON.stringify(tree));
        return 0;
      } finally {
        await services.close();
      }
    }
    if (values.at === undefined) throw new UsageError('--at K is required: the number of turns to replay before sampling');
    if (values.count === undefined) throw new UsageError('-n N is required: how many continuations to sample');
    const at = integerFlag(values.at, 'at', 0, 0, 100_000);
    const n = integerFlag(values.count, 'count (-n)', 1, 1, 64);
    let temperature: number | undefined;
    if (values.temperature !== undefined) {
      temperature = Number(values.temperature);
      if (!Number.isFinite(temperature) || temperature <= 0 || temperature > 5)
        throw new UsageError(
          `--temperature expects a number above 0 and at most 5 (continuations are sampled), got "${values.temperature}"`,
        );
    }
    const firstSeed = integerFlag(values.seed, 'seed', 1, 0, 2 ** 31 - 1 - n);
    const settings = config();
    // The record is read before any worker or workflow starts: an unknown id or a K past the record exits 2 with nothing started.
    await stackUp(settings, { workers: false });
    const services = openServices(settings);
    try {
      const deps: ForkDependencies = {
        client: await services.client(),
        blobs: services.blobs,
        trajectories: services.trajectories,
        forks: createPgTrajectoryForkStore(services.pool),
      };
      const plan = await planFork(deps, { trajectoryId, at, n, temperature, firstSeed });
      await stackUp(settings, { workers: true });
      const idPrefix = values.id ?? `${trajectoryId}-fork${at}-${new Date().toISOString().replace(/[:.]/g, '-')}`;
      console.error(
        `forking ${trajectoryId} (${plan.parent.turns} turns) at turn ${at}: ${n} continuation(s) at temperature ${plan.temperature}, ` +
          `settings from its ${plan.settingsFrom === 'history' ? 'workflow input' : 'record (history gone: default limits and options)'}`,
      );
      const outcome = await runFork(deps, plan, {
        taskQueue: taskQueueName('agent', settings.taskQueuePrefix),
        idPrefix,
        onStarted: (childId, seed) => console.error(`  started ${childId} (seed ${seed})`),
        onFinished: (child, done, of) =>
          console.log(
            `[${done}/${of}] ${child.trajectoryId} · seed ${child.seed} · ${child.stopReason} after ${child.turns} turns · ` +
              `answer ${JSON.stringify(child.answer)} · reward ${child.reward.toFixed(3)}`,
          ),
      });
      if (outcome.mismatches.length === 0) {
        console.log(`replay exact: every child's first ${at} turn(s) match the parent's text and observations`);
      } else {
        console.log(
          `REPLAY MISMATCH: ${outcome.mismatches.length} difference(s) in the replayed turns (a tool that is not deterministic, or a corpus that changed):`,
        );
        for (const mismatch of outcome.mismatches)
          console.log(
            `  ${mismatch.childId} turn ${mismatch.turn} ${mismatch.what}: parent ${JSON.stringify(mismatch.parent)} · child ${JSON.stringify(mismatch.child)}`,
          );
      }
      console.error(`tree: longhaul fork --tree ${trajectoryId}`);
      if (values.json) console.log(JSON.stringify({ ...outcome, replayExact: outcome.mismatches.length === 0 }));
      return 0;
    } finally {
      await services.close();
    }
  },
};
