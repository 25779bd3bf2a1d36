import fs from 'node:fs';
import path from 'node:path';
import { config } from '../../infra/config.js';
import { createPgReportSource, type ReportSource } from '../../infra/postgres/report-source.pg.js';
import { createPgBenchmarkResultStore } from '../../infra/postgres/benchmark-result-store.pg.js';
import type { BenchmarkResultStore } from '../../activities/ports/benchmark-result-store.port.js';
import { openServices } from '../../composition/services.js';
import { integerFlag, parseFlags } from '../arguments.js';
import { UsageError, type Command } from '../command.js';
import { demoEvaluationPrefixes } from '../report/gather-report.js';
import { formatReportSummary } from '../report/report-summary.js';
import { loadChartRuntime, writeReport } from '../report/write-report.js';

async function resolveRun(
  source: ReportSource,
  benchmarks: BenchmarkResultStore,
  home: string,
  requested: string | undefined,
): Promise<string> {
  const recent = await source.recentRuns(5);
  const hint = recent.length ? ` (recent runs: ${recent.map((run) => run.runId).join(', ')})` : ' (no run has trajectories yet)';
  if (requested === undefined) {
    if (recent[0]) return recent[0].runId;
    throw new UsageError(`--run: no run to report on${hint}; train or run the demo first, or name one with --run <id>`);
  }
  const known =
    (await source.countTrajectories(requested, demoEvaluationPrefixes(requested))) > 0 ||
    fs.existsSync(path.join(home, 'reports', `${requested}.json`)) ||
    (await benchmarks.get(requested)) !== undefined;
  if (!known) throw new UsageError(`--run "${requested}" has no trajectories, no demo report and no benchmark result${hint}`);
  return requested;
}

export const reportCommand: Command = {
  name: 'report',
  summary: 'one self-contained HTML report of a run (charts, benchmarks, behaviour, trajectory pages) and a terminal summary',
  usage: `longhaul report [--run <id>] [--out FILE] [--max-trajectories N] [--no-pages]

Writes one HTML file for a training run (default: the run with the newest trajectory) with Vega-Lite
charts, their runtime inlined (it opens offline): training reward and held-out accuracy per policy
version with 95 % intervals, staleness, trainer busy fraction, samples per hour, turns and tool-call
distributions, the evaluation results (table evaluation_results), the training set's statistics, and
a transfer benchmark's side-by-side table and charts (longhaul bench transfer), the expert behaviours across versions (answers verified by a further search, distinct documents,
uncertainty, conflicting evidence, tool calls per question, and where right answers are lost: gold seen, stated, stated but not answered),
where the RL signal came from (training groups per question set, a demo's warm-start questions or its candidates, and
hop count: right answers, groups mixing right and wrong, groups with equal rewards), and where the advantage went (the
group-normalised advantage of the training samples summed by outcome: right, partly right, wrong, no answer and why;
a warning when wrong or missing answers gained). Each trajectory gets its own page in
a folder beside the file (<name>.trajectories/), linked from the table; \`longhaul show <id>\` prints
the same in a terminal. Prints a summary and the path. Needs the stack (Postgres, S3; Temporal for
a learner's step statistics, else the demo's JSON report is used).

  --run <id>              the run (the learner's runId; the demo's is printed as "Longhaul demo <id>")
  --out FILE              where to write (default: LONGHAUL_HOME/reports/<run>.html)
  --max-trajectories N    trajectories to read at most (default 2000)
  --no-pages              no per-trajectory pages`,
  async run(args) {
    const { values } = parseFlags(args, {
      run: { type: 'string' },
      out: { type: 'string' },
      'max-trajectories': { type: 'string' },
      'no-pages': { type: 'boolean' },
    });
    const maxTrajectories = integerFlag(values['max-trajectories'], 'max-trajectories', 2000, 1, 1_000_000);
    if (values.run !== undefined && !values.run.trim()) throw new UsageError('--run expects a run id, got an empty string');
    if (values.out !== undefined && !values.out.endsWith('.html'))
      throw new UsageError(`--out expects a file name ending in .html, got "${values.out}"`);
    loadChartRuntime(); // a missing runtime fails before anything is read
    const settings = config();
    const services = openServices(settings);
    try {
      const source = createPgReportSource(services.pool);
      const runId = await resolveRun(source, createPgBenchmarkResultStore(services.pool), settings.home, values.run);
      const out = path.resolve(values.out ?? path.join(settings.home, 'reports', `${runId}.html`));
      const written = await writeReport(services, settings.home, { runId, out, pages: !values['no-pages'], maxTrajectories });
      console.log(formatReportSummary(written.model));
      console.log(`report: ${written.path}`);
      return 0;
    } finally {
      await services.close();
    }
  },
};
