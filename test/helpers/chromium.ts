/**
 * Headless Chromium (Debian's `chromium`, installed by infra/install-chromium.sh when a browser test
 * is selected) as a checker of the HTML report: one run dumps the DOM after the page's scripts ran
 * (what the page recorded: errors, rendered charts, their boxes), a second takes a screenshot of the
 * whole page at the same width, and each chart's box is checked for drawn (non-background) pixels.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { PNG } from 'pngjs';

const run = promisify(execFile);

export function chromiumBinary(): string {
  const named = process.env.LONGHAUL_CHROMIUM;
  if (named) return named;
  for (const candidate of ['/usr/bin/chromium', '/usr/bin/chromium-browser']) if (fs.existsSync(candidate)) return candidate;
  throw new Error(
    'chromium is not installed: infra/install-chromium.sh installs it (the test command runs it for browser tests), or set LONGHAUL_CHROMIUM',
  );
}

const width = 1400;

async function chromium(args: string[], home: string): Promise<string> {
  const { stdout } = await run(
    chromiumBinary(),
    [
      '--headless',
      '--no-sandbox', // tests run as root on CI
      '--disable-gpu',
      '--disable-dev-shm-usage',
      '--no-first-run',
      '--hide-scrollbars',
      `--user-data-dir=${home}`,
      // Virtual time lets the page's promises (vega-embed) settle before the dump or the screenshot.
      '--virtual-time-budget=15000',
      ...args,
    ],
    { maxBuffer: 64 * 1024 * 1024, timeout: 120_000 },
  );
  return stdout;
}

export interface ChartCheck {
  readonly id: string;
  readonly rendered: boolean;
  /** Share of the chart box's pixels that differ from the white background. */
  readonly inkShare: number;
  readonly box: readonly [number, number, number, number] | null;
}

export interface PageCheck {
  readonly done: boolean;
  readonly errors: readonly string[];
  readonly charts: readonly ChartCheck[];
  readonly screenshot: string;
}

/** Opens `file` in headless Chromium and measures what got drawn in each element with class "chart". */
export async function checkReportInBrowser(file: string): Promise<PageCheck> {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'longhaul-chromium-'));
  try {
    const url = `file://${path.resolve(file)}`;
    const dom = await chromium([`--window-size=${width},1000`, '--dump-dom', url], home);
    const done = /data-charts-done="true"/.test(dom);
    const errorsBlock = /<div id="report-errors">([\s\S]*?)<\/div>\s*<div class="cards">/.exec(dom)?.[1] ?? '';
    const errors = [...errorsBlock.matchAll(/<div class="report-error">([\s\S]*?)<\/div>/g)].map((match) => match[1]!);
    const pageHeight = Number(/data-page-height="(\d+)"/.exec(dom)?.[1] ?? 3000);
    // vega-embed adds its own class to the chart element, so the element is found by its id.
    const charts = [...dom.matchAll(/<div ([^>]*\bid="(chart-[^"]+)"[^>]*)>/g)].map((match) => {
      const attributes = match[1]!;
      const box = /data-box="(\d+),(\d+),(\d+),(\d+)"/.exec(attributes);
      return {
        id: match[2]!,
        rendered: /data-rendered="true"/.test(attributes),
        box: box ? ([Number(box[1]), Number(box[2]), Number(box[3]), Number(box[4])] as const) : null,
      };
    });
    const screenshot = path.join(home, 'report.png');
    await chromium([`--window-size=${width},${Math.min(pageHeight + 20, 16000)}`, `--screenshot=${screenshot}`, url], home);
    const png = PNG.sync.read(fs.readFileSync(screenshot));
    const kept = path.join(os.tmpdir(), `longhaul-report-${path.basename(file, '.html')}.png`);
    fs.copyFileSync(screenshot, kept);
    return {
      done,
      errors,
      screenshot: kept,
      charts: charts.map((chart) => ({ ...chart, inkShare: chart.box ? inkShare(png, chart.box) : 0 })),
    };
  } finally {
    fs.rmSync(home, { recursive: true, force: true });
  }
}

/** Share of pixels in the box that are not (near) white. */
function inkShare(png: PNG, [left, top, boxWidth, boxHeight]: readonly [number, number, number, number]): number {
  let ink = 0;
  let total = 0;
  for (let y = top; y < Math.min(png.height, top + boxHeight); y += 1)
    for (let x = left; x < Math.min(png.width, left + boxWidth); x += 1) {
      const offset = (y * png.width + x) * 4;
      total += 1;
      if (png.data[offset]! < 235 || png.data[offset + 1]! < 235 || png.data[offset + 2]! < 235) ink += 1;
    }
  return total ? ink / total : 0;
}
