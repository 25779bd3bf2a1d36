import { ScheduleNotFoundError, ScheduleOverlapPolicy, type Client, type ScheduleOptionsAction } from '@temporalio/client';
import { config } from '../../infra/config.js';
import { openServices } from '../../composition/services.js';
import { stackUp } from '../../infra/services/stack.js';
import { parseEvaluationInput } from '../../workflows/contracts/evaluation.input.js';
import { taskQueueName } from '../../workflows/contracts/queues.js';
import {
  schedulableBenchmarks,
  scheduledBenchmarkWorkflowType,
  scheduledEvaluationWorkflowType,
  scheduleIdPrefix,
  type ScheduledBenchmarkInput,
  type ScheduledEvaluationInput,
} from '../../workflows/contracts/schedules.contract.js';
import { parseFlags } from '../arguments.js';
import { UsageError, type Command } from '../command.js';
import { preflight } from '../preflight.js';
import { evaluationFlagOptions, evaluationFlags, evaluationRequest } from './eval.command.js';

const units: Readonly<Record<string, number>> = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/**
 * An interval such as "90s", "15m", "6h", "1d" or "1h30m" in milliseconds; a UsageError naming `flag`
 * otherwise (at least one second, at most 366 days).
 */
export function parseInterval(value: string | undefined, flag: string): number {
  const text = (value ?? '').trim().toLowerCase();
  const parts = [...text.matchAll(/(\d+(?:\.\d+)?)\s*([smhd])/g)];
  const consumed = parts.map((part) => part[0]).join('');
  if (parts.length === 0 || consumed.replace(/\s/g, '') !== text.replace(/\s/g, ''))
    throw new UsageError(
      `--${flag}: cannot parse "${value ?? ''}" as an interval; write a number and a unit s, m, h or d, e.g. 30m, 6h, 1h30m`,
    );
  const ms = parts.reduce((total, part) => total + Number(part[1]) * units[part[2]!]!, 0);
  if (ms < 1_000 || ms > 366 * units.d!) throw new UsageError(`--${flag}: "${value}" is out of range; give between 1s and 366d`);
  return Math.round(ms);
}

/** "1h30m" for 5_400_000. */
export function formatInterval(ms: number): string {
  let rest = Math.round(ms / 1000);
  const out: string[] = [];
  for (const [unit, seconds] of [
    ['d', 86_400],
    ['h', 3_600],
    ['m', 60],
    ['s', 1],
  ] as const) {
    if (rest >= seconds) {
      out.push(`${Math.floor(rest / seconds)}${unit}`);
      rest %= seconds;
    }
  }
  return out.join('') || '0s';
}

function scheduleIdFlag(value: string | undefined, fallback: string): string {
  const name = value ?? fallback;
  const id = name.startsWith(scheduleIdPrefix) ? name : `${scheduleIdPrefix}${name}`;
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,150}$/.test(id))
    throw new UsageError(`--id: use letters, digits, ".", "_" and "-" (it names the schedule and its workflows), got "${name}"`);
  return id;
}

const usage = `longhaul schedule eval --every INTERVAL --dataset NAME|FILE [-k K] [--limit N] [--concurrency C] [--layout L]
              [--strict] [--judge] [--temperature T] [--seed S] [--max-turns N] [--max-new-tokens N]
              [--catchup-window INTERVAL] [--id NAME] [--paused]
longhaul schedule bench search|overhead|async --every INTERVAL [--catchup-window INTERVAL] [--id NAME] [--paused]
              [-- FLAGS OF longhaul bench NAME]
longhaul schedule list [--json]
longhaul schedule trigger|delete|resume ID

Creates Temporal Schedules (see them with \`temporal schedule list\` or in the Web UI's Schedules page):
  eval    every INTERVAL, the scheduledEvaluation workflow evaluates the NEWEST registered policy version
          (resolved when each run starts) with these settings, as \`longhaul eval\` does; each result is a
          row of evaluation_results with its policy version and the worker's git commit
  bench   every INTERVAL, the scheduledBenchmark workflow runs \`longhaul bench NAME FLAGS --json\` as an
          activity on the agent queue and stores its JSON line in benchmark_results with the newest policy
          version and the git commit of the code, so a regression shows up between commits
Every schedule skips a run while the previous one is still going (overlap policy skip), makes up runs
missed while Temporal was down only within --catchup-window (default: one interval), and pauses itself
when a run fails (resume it with \`longhaul schedule resume ID\` once fixed). The runs execute on the
stack's workers (\`longhaul up\` starts them); creating a schedule starts only Temporal, Postgres and S3.

  --every INTERVAL   a number and a unit s, m, h or d: 30m, 6h, 1d, 1h30m
  --id NAME          schedule id (prefixed with "${scheduleIdPrefix}"; default ${scheduleIdPrefix}eval-<dataset> or ${scheduleIdPrefix}bench-<name>)
  --paused           create it paused
  list               the Longhaul schedules: id, interval, paused (and why), runs so far, next run
  trigger ID         start a run now (the overlap policy still applies)
  delete ID          delete the schedule (runs already started go on)
  resume ID          unpause a schedule (e.g. paused after a failure)

An interval that cannot be parsed, an unknown dataset or benchmark, or bad evaluation settings exit 2
naming the flag before anything starts.`;

interface CommonScheduleFlags {
  readonly everyMs: number;
  readonly catchupMs: number;
  readonly paused: boolean;
}

function commonFlags(values: { every?: string; 'catchup-window'?: string; paused?: boolean }): CommonScheduleFlags {
  if (values.every === undefined) throw new UsageError('--every INTERVAL is required (e.g. --every 6h)');
  const everyMs = parseInterval(values.every, 'every');
  const catchupMs =
    values['catchup-window'] === undefined ? Math.max(everyMs, 10_000) : parseInterval(values['catchup-window'], 'catchup-window');
  if (catchupMs < 10_000) throw new UsageError('--catchup-window: Temporal needs at least 10s');
  return { everyMs, catchupMs, paused: values.paused === true };
}

async function createSchedule(
  client: Client,
  scheduleId: string,
  flags: CommonScheduleFlags,
  action: ScheduleOptionsAction,
  note: string,
): Promise<void> {
  await client.schedule.create({
    scheduleId,
    spec: { intervals: [{ every: flags.everyMs }] },
    action,
    policies: { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: flags.catchupMs, pauseOnFailure: true },
    state: { paused: flags.paused, note },
  });
  console.log(
    `created schedule ${scheduleId}: ${note}, every ${formatInterval(flags.everyMs)} (overlap skip, catch-up window ${formatInterval(flags.catchupMs)}, pause on failure${flags.paused ? ', paused' : ''})`,
  );
  console.log(`  run it now: longhaul schedule trigger ${scheduleId} · see it: longhaul schedule list · temporal schedule list`);
}

/** Temporal, Postgres and S3 are started if they are not running; the workers that run the schedule's workflows are `longhaul up`'s. */
async function withClient<T>(body: (client: Client, services: ReturnType<typeof openServices>) => Promise<T>): Promise<T> {
  const settings = config();
  await stackUp(settings, { workers: false });
  const services = openServices(settings);
  try {
    return await body(await services.client(), services);
  } finally {
    await services.close();
  }
}

async function scheduleEvaluation(args: string[]): Promise<number> {
  const { values } = parseFlags(args, {
    every: { type: 'string' },
    'catchup-window': { type: 'string' },
    id: { type: 'string' },
    paused: { type: 'boolean' },
    ...evaluationFlagOptions,
  });
  const flags = commonFlags(values);
  const request = await evaluationRequest(values);
  const input: ScheduledEvaluationInput = request.fields;
  // Each run checks its input as the evaluation workflow will; refused here, it never starts.
  preflight(() => parseEvaluationInput({ ...input, resultId: 'scheduled-preflight', policyVersion: 0 }), evaluationFlags);
  const scheduleId = scheduleIdFlag(values.id, `eval-${request.set.name.replace(/[^A-Za-z0-9._-]/g, '-')}`);
  return withClient(async (client, services) => {
    await services.blobs.put(input.datasetKey, request.text, 'application/x-ndjson');
    const settings = config();
    await createSchedule(
      client,
      scheduleId,
      flags,
      {
        type: 'startWorkflow',
        workflowType: scheduledEvaluationWorkflowType,
        workflowId: scheduleId,
        taskQueue: taskQueueName('agent', settings.taskQueuePrefix),
        args: [input],
      },
      `evaluate the newest policy version on ${request.set.name} (${input.questions} questions × ${input.k})`,
    );
    return 0;
  });
}

async function scheduleBenchmark(args: string[]): Promise<number> {
  const split = args.indexOf('--');
  const [benchmark, ...own] = split === -1 ? args : args.slice(0, split);
  const passed = split === -1 ? [] : args.slice(split + 1);
  if (!benchmark || !(schedulableBenchmarks as readonly string[]).includes(benchmark))
    throw new UsageError(`schedule bench: expected one of ${schedulableBenchmarks.join(', ')}, got "${benchmark ?? ''}"`);
  const { values } = parseFlags(own, {
    every: { type: 'string' },
    'catchup-window': { type: 'string' },
    id: { type: 'string' },
    paused: { type: 'boolean' },
  });
  const flags = commonFlags(values);
  if (passed.includes('--json')) passed.splice(passed.indexOf('--json'), 1);
  const input: ScheduledBenchmarkInput = { benchmark: benchmark as ScheduledBenchmarkInput['benchmark'], args: passed };
  const scheduleId = scheduleIdFlag(values.id, `bench-${benchmark}`);
  return withClient(async (client) => {
    await createSchedule(
      client,
      scheduleId,
      flags,
      {
        type: 'startWorkflow',
        workflowType: scheduledBenchmarkWorkflowType,
        workflowId: scheduleId,
        taskQueue: taskQueueName('agent', config().taskQueuePrefix),
        args: [input],
      },
      `longhaul bench ${[benchmark, ...passed].join(' ')}`,
    );
    return 0;
  });
}

async function listSchedules(args: string[]): Promise<number> {
  const { values } = parseFlags(args, { json: { type: 'boolean' } });
  return withClient(async (client) => {
    const rows: Record<string, unknown>[] = [];
    for await (const summary of client.schedule.list()) {
      if (!summary.scheduleId.startsWith(scheduleIdPrefix)) continue;
      const every = summary.spec?.intervals?.[0]?.every;
      rows.push({
        id: summary.scheduleId,
        workflow: summary.action?.type === 'startWorkflow' ? summary.action.workflowType : '',
        every: typeof every === 'number' ? formatInterval(every) : String(every ?? ''),
        paused: summary.state.paused,
        note: summary.state.note ?? '',
        recentRuns: summary.info.recentActions.length,
        nextRun: summary.info.nextActionTimes[0]?.toISOString() ?? null,
      });
    }
    rows.sort((a, b) => String(a.id).localeCompare(String(b.id)));
    if (values.json) {
      console.log(JSON.stringify(rows));
      return 0;
    }
    if (rows.length === 0) console.log('no Longhaul schedules (create one: longhaul schedule eval|bench --every INTERVAL …)');
    for (const row of rows)
      console.log(
        `${String(row.id).padEnd(32)} ${String(row.workflow).padEnd(20)} every ${String(row.every).padEnd(8)} ${row.paused ? `PAUSED (${String(row.note)})` : `next ${String(row.nextRun)}`} · ${String(row.recentRuns)} recent runs`,
      );
    return 0;
  });
}

async function onSchedule(verb: 'trigger' | 'delete' | 'resume', args: string[]): Promise<number> {
  const { positionals } = parseFlags(args, {}, true);
  if (positionals.length !== 1) throw new UsageError(`schedule ${verb}: give one schedule id (longhaul schedule list)`);
  const scheduleId = scheduleIdFlag(positionals[0], '');
  return withClient(async (client) => {
    const handle = client.schedule.getHandle(scheduleId);
    try {
      // A run started now obeys the schedule's overlap policy (skip), and so counts for pause-on-failure.
      if (verb === 'trigger') await handle.trigger((await handle.describe()).policies.overlap);
      else if (verb === 'delete') await handle.delete();
      else await handle.unpause('resumed with longhaul schedule resume');
    } catch (error) {
      if (error instanceof ScheduleNotFoundError)
        throw new UsageError(`schedule ${verb}: no schedule "${scheduleId}" (longhaul schedule list)`);
      throw error;
    }
    console.log(`${verb === 'trigger' ? 'triggered' : verb === 'delete' ? 'deleted' : 'resumed'} ${scheduleId}`);
    return 0;
  });
}

export const scheduleCommand: Command = {
  name: 'schedule',
  summary: 'Temporal Schedules: evaluate the newest policy version or run a system benchmark every interval',
  usage,
  async run(args) {
    const [verb, ...rest] = args;
    switch (verb) {
      case 'eval':
        return scheduleEvaluation(rest);
      case 'bench':
        return scheduleBenchmark(rest);
      case 'list':
        return listSchedules(rest);
      case 'trigger':
      case 'delete':
      case 'resume':
        return onSchedule(verb, rest);
      default:
        throw new UsageError(`schedule: expected eval, bench, list, trigger, delete or resume, got "${verb ?? ''}"`);
    }
  },
};
