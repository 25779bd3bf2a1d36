/**
 * The demo's run manifest, `LONGHAUL_HOME/demo-runs/<run>.json`: the run's plan and each finished
 * phase's result, written after every phase (atomically: a temporary file renamed over it). `longhaul
 * demo --resume <run>` reads it, skips the phases it holds and re-attaches to (or restarts) the
 * workflows of the first phase it does not, whose ids derive from the run id.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Client, WorkflowHandle, WorkflowStartOptions } from '@temporalio/client';
import { UsageError } from '../command.js';
import type { DemoPlan } from './plan.js';

export const manifestVersion = 1;

export interface DemoManifest {
  readonly version: typeof manifestVersion;
  readonly runId: string;
  readonly createdAt: string;
  readonly plan: DemoPlan;
  /** Phase name → its result (JSON) and the wall seconds its work took (absent in older manifests), in the order they finished. */
  readonly phases: Record<
    string,
    { readonly finishedAt: string; readonly seconds?: number; readonly result: unknown; readonly reusedFrom?: string }
  >;
}

export const manifestFolder = (home: string) => path.join(home, 'demo-runs');
export const manifestPath = (home: string, runId: string) => path.join(manifestFolder(home), `${runId}.json`);

const runIdPattern = /^[a-z0-9][a-z0-9-]{0,60}$/;

/** A run id names workflows, blobs and files: lower-case letters, digits and "-". */
export function checkRunId(runId: string, flag: string): string {
  if (!runIdPattern.test(runId))
    throw new UsageError(`--${flag}: a run id is 1–61 lower-case letters, digits and "-" (it names workflows and files), got "${runId}"`);
  return runId;
}

export function newRunId(now = new Date()): string {
  return `demo-${now.toISOString().replace(/[:.]/g, '-').replace(/z$/i, '').toLowerCase()}`;
}

/** The manifest of `runId`, or a UsageError naming --resume (with the runs there are). */
export function readManifest(home: string, runId: string, flag = 'resume'): DemoManifest {
  const file = manifestPath(home, runId);
  if (!fs.existsSync(file)) {
    const known = fs.existsSync(manifestFolder(home))
      ? fs
          .readdirSync(manifestFolder(home))
          .filter((name) => name.endsWith('.json'))
          .map((name) => name.slice(0, -5))
          .sort()
      : [];
    throw new UsageError(
      `--${flag}: no demo run "${runId}" under ${manifestFolder(home)} (${known.length ? `runs: ${known.slice(-5).join(', ')}` : 'no run there yet'})`,
    );
  }
  const manifest = JSON.parse(fs.readFileSync(file, 'utf8')) as DemoManifest;
  if (manifest.version !== manifestVersion)
    throw new UsageError(
      `--${flag}: ${file} is a manifest of version ${String(manifest.version)}; this demo reads version ${manifestVersion}`,
    );
  return manifest;
}

export function createManifest(home: string, runId: string, plan: DemoPlan, phases: DemoManifest['phases'] = {}): DemoManifest {
  if (fs.existsSync(manifestPath(home, runId)))
    throw new UsageError(`--run-id: demo run "${runId}" exists already; continue it with --resume ${runId}, or choose another id`);
  const manifest: DemoManifest = { version: manifestVersion, runId, createdAt: new Date().toISOString(), plan, phases };
  writeManifest(home, manifest);
  return manifest;
}

/** The phases an `--rl-from` run takes over from its source run: everything before RL. */
export const phasesBeforeRl = [
  'corpus',
  'start-version',
  'synthesis',
  'split',
  'references',
  'evaluation-base',
  'warm-start',
  'evaluation-warm',
] as const;

/**
 * A new run that reuses `source`'s finished phases before RL (`--rl-from`): they are copied into its manifest marked
 * `reusedFrom`, so the run (and a later --resume of it) skips them. Refused (exit 2) while the source has not finished
 * its warm-start evaluation.
 */
export function createManifestFrom(home: string, runId: string, plan: DemoPlan, source: DemoManifest): DemoManifest {
  return createManifest(home, runId, plan, reusedPhases(source, phasesBeforeRl, 'rl-from'));
}

/**
 * `source`'s finished phases `names`, copied for a run that reuses them: no seconds of its own, marked with the run that
 * ran each. Refused (exit 2, naming `flag`) while `source` has not finished one of them.
 */
function reusedPhases(source: DemoManifest, names: readonly string[], flag: string): DemoManifest['phases'] {
  const missing = names.filter((name) => source.phases[name] === undefined);
  if (missing.length > 0)
    throw new UsageError(
      `--${flag}: run ${source.runId} has not finished ${missing.join(', ')}; finish it first (longhaul demo --resume ${source.runId})`,
    );
  return Object.fromEntries(
    names.map((name) => [name, { ...source.phases[name]!, seconds: 0, reusedFrom: source.phases[name]!.reusedFrom ?? source.runId }]),
  );
}

/** The phase of an `--rl-continue` run that holds the held-out evaluation of the RL it continues (its start). */
export const continuedEvaluationPhase = 'evaluation-continued';

/**
 * A new run that continues `previous`'s RL (`--rl-continue`): `previous`'s phases before RL are copied as
 * createManifestFrom copies them, and its RL evaluation as `evaluation-continued` (the start this run's RL is measured
 * against, marked reused). Refused (exit 2) while `previous` has not finished its RL and that evaluation.
 */
export function createManifestContinuing(home: string, runId: string, plan: DemoPlan, previous: DemoManifest): DemoManifest {
  const {
    'evaluation-rl': evaluation,
    rl: _rl,
    ...before
  } = reusedPhases(previous, [...phasesBeforeRl, 'rl', 'evaluation-rl'], 'rl-continue');
  // The RL evaluation is this run's start, run by `previous` itself (even if it is reused from earlier there).
  return createManifest(home, runId, plan, { ...before, [continuedEvaluationPhase]: { ...evaluation!, reusedFrom: previous.runId } });
}

/** The runs whose RL a run continues, nearest first (`--rl-continue` of `--rl-continue` …); empty for any other run. */
export function continuedRuns(home: string, plan: DemoPlan): string[] {
  const runs: string[] = [];
  for (let next = plan.rlContinue ?? null; next !== null && !runs.includes(next);) {
    runs.push(next);
    next = readManifest(home, next, 'rl-continue').plan.rlContinue ?? null;
  }
  return runs;
}

export function writeManifest(home: string, manifest: DemoManifest): void {
  fs.mkdirSync(manifestFolder(home), { recursive: true });
  const file = manifestPath(home, manifest.runId);
  const temporary = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(temporary, JSON.stringify(manifest, null, 2));
  fs.renameSync(temporary, file);
}

/**
 * Phases of one run: `run(name, work)` returns the stored result of a finished phase without running
 * it again, or runs `work`, stores its result in the manifest and returns it.
 */
export class DemoPhases {
  private current: DemoManifest;

  constructor(
    private readonly home: string,
    manifest: DemoManifest,
    private readonly onSkip: (name: string, reusedFrom?: string) => void = () => undefined,
  ) {
    this.current = manifest;
  }

  get manifest(): DemoManifest {
    return this.current;
  }

  done(name: string): boolean {
    return this.current.phases[name] !== undefined;
  }

  async run<T>(name: string, work: () => Promise<T>): Promise<T> {
    const stored = this.current.phases[name];
    if (stored !== undefined) {
      this.onSkip(name, stored.reusedFrom);
      return stored.result as T;
    }
    const startedAt = Date.now();
    const result = await work();
    const seconds = Math.round((Date.now() - startedAt) / 100) / 10;
    this.current = {
      ...this.current,
      phases: { ...this.current.phases, [name]: { finishedAt: new Date().toISOString(), seconds, result } },
    };
    writeManifest(this.home, this.current);
    return result;
  }

  /** Wall seconds per finished phase, in the order they finished (null: a manifest written before phases were timed). */
  stageSeconds(): { readonly stage: string; readonly seconds: number | null }[] {
    return Object.entries(this.current.phases)
      .filter(([, phase]) => phase.reusedFrom === undefined)
      .map(([stage, phase]) => ({ stage, seconds: phase.seconds ?? null }));
  }
}

export interface Attached {
  readonly handle: WorkflowHandle;
  /** "started": a new execution; "running" / "completed": an execution of that id was found and is followed. */
  readonly how: 'started' | 'running' | 'completed';
}

/**
 * Start workflow `options.workflowId`, or attach to the execution of that id when one is running or
 * has completed (its result is then read, not made again). A failed, terminated, cancelled or timed
 * out execution is started again under the same id (an interrupted demo terminated it; the workflows
 * skip what they had stored, e.g. an evaluation's scored questions).
 */
export async function startOrAttach(client: Client, workflowType: string, options: WorkflowStartOptions): Promise<Attached> {
  const existing = client.workflow.getHandle(options.workflowId);
  try {
    const description = await existing.describe();
    if (description.status.name === 'RUNNING') return { handle: existing, how: 'running' };
    if (description.status.name === 'COMPLETED') return { handle: existing, how: 'completed' };
  } catch (error) {
    if ((error as Error).name !== 'WorkflowNotFoundError') throw error;
  }
  const handle = await client.workflow.start(workflowType, options);
  return { handle, how: 'started' };
}

/**
 * The per-stage wall times, one line per stage: seconds and share of the total. A stage finished in an
 * earlier session of a resumed run shows its time then; one from a manifest written before stages were
 * timed shows "-". Stack and report are this session's.
 */
export function stageTable(rows: readonly { readonly stage: string; readonly seconds: number | null }[]): string {
  const total = rows.reduce((sum, row) => sum + (row.seconds ?? 0), 0);
  const width = Math.max(5, ...rows.map((row) => row.stage.length));
  const line = (stage: string, seconds: number | null) =>
    `  ${stage.padEnd(width)}  ${seconds === null ? '-'.padStart(8) : seconds.toFixed(1).padStart(8)} s${
      seconds === null || total === 0 ? '' : `  ${((seconds / total) * 100).toFixed(0).padStart(3)} %`
    }`;
  return ['per-stage wall time:', ...rows.map((row) => line(row.stage, row.seconds)), line('total', total)].join('\n');
}
