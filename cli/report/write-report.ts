/** Gather, render and write a run's report and its trajectory pages (`longhaul report`, the demo's last step). */
import fs from 'node:fs';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import type { Services } from '../../composition/services.js';
import { repoRoot } from '../../infra/paths.js';
import { createPgReportSource } from '../../infra/postgres/report-source.pg.js';
import { createPgBenchmarkResultStore } from '../../infra/postgres/benchmark-result-store.pg.js';
import { progressBar } from '../progress.js';
import { gatherReport } from './gather-report.js';
import { renderReport } from './report-html.js';
import type { ChartRuntime, ReportModel } from './report-model.js';
import { renderTrajectoryPage, trajectoryPageName } from './trajectory-format.js';

/** The browser builds of Vega, Vega-Lite and vega-embed (npm dependencies), inlined into every report. */
export function loadChartRuntime(): ChartRuntime {
  const read = (pkg: string, file: string) => {
    const location = path.join(repoRoot, 'node_modules', pkg, 'build', file);
    if (!fs.existsSync(location)) throw new Error(`${location} is missing: run infra/install.sh (npm ci) to install the chart runtime`);
    return fs.readFileSync(location, 'utf8');
  };
  return {
    vega: read('vega', 'vega.min.js'),
    vegaLite: read('vega-lite', 'vega-lite.min.js'),
    vegaEmbed: read('vega-embed', 'vega-embed.min.js'),
  };
}

export interface WriteReportOptions {
  readonly runId: string;
  /** The HTML file (absolute). Pages go to <name>.trajectories/ beside it. */
  readonly out: string;
  readonly pages: boolean;
  readonly maxTrajectories?: number;
}

export async function writeReport(
  services: Services,
  home: string,
  options: WriteReportOptions,
): Promise<{ model: ReportModel; path: string }> {
  const runtime = loadChartRuntime();
  let client: Client | null = null;
  try {
    client = await services.client();
  } catch (error) {
    console.error(`  Temporal is not reachable (${(error as Error).message}): step statistics come from the demo report, if any`);
  }
  // Made on the first progress call: the number of trajectories is known only then.
  const reading: { bar?: ReturnType<typeof progressBar> } = {};
  const { model, views } = await gatherReport(
    {
      source: createPgReportSource(services.pool),
      blobs: services.blobs,
      client,
      home,
      benchmarks: createPgBenchmarkResultStore(services.pool),
    },
    {
      runId: options.runId,
      ...(options.maxTrajectories ? { maxTrajectories: options.maxTrajectories } : {}),
      onProgress: (done, total) => {
        reading.bar ??= progressBar('reading trajectories', total);
        reading.bar.update(done);
      },
    },
  );
  reading.bar?.finish();
  const out = options.out;
  fs.mkdirSync(path.dirname(out), { recursive: true });
  let withPages = model;
  if (options.pages && views.length) {
    const folder = `${path.basename(out, '.html')}.trajectories`;
    const pagesDir = path.join(path.dirname(out), folder);
    fs.rmSync(pagesDir, { recursive: true, force: true });
    fs.mkdirSync(pagesDir, { recursive: true });
    const pages = new Map<string, string>();
    for (const { view, behaviour } of views) {
      const name = trajectoryPageName(view.trajectoryId);
      fs.writeFileSync(path.join(pagesDir, name), renderTrajectoryPage(view, behaviour, { reportLink: `../${path.basename(out)}` }));
      pages.set(view.trajectoryId, `${folder}/${name}`);
    }
    withPages = { ...model, trajectories: model.trajectories.map((row) => ({ ...row, page: pages.get(row.trajectoryId) ?? null })) };
  }
  fs.writeFileSync(out, renderReport(withPages, runtime));
  return { model: withPages, path: out };
}
