/**
 * How long reading every question set under a data root and building the contamination index over
 * them takes (docs/BENCHMARKS.md, "Question sets"). Run: `node dist/bench/question-sets-benchmark.js [DATA_ROOT] [RUNS]`;
 * prints one JSON line per run. Each check is an evaluation question with " in 2020" appended (a
 * near-duplicate, so the n-gram path is taken, not the equal-text shortcut).
 */
import { performance } from 'node:perf_hooks';
import { listEvaluationSets, loadEvaluationSets } from '../composition/question-sets.js';
import { ContaminationIndex } from '../activities/question-sets/contamination.js';
import { config } from '../infra/config.js';

export async function benchmarkQuestionSets(dataRoot: string, runs: number): Promise<object[]> {
  const results: object[] = [];
  for (let run = 1; run <= runs; run += 1) {
    const started = performance.now();
    const listed = await listEvaluationSets(dataRoot);
    const afterList = performance.now();
    const sets = await loadEvaluationSets(dataRoot);
    const afterLoad = performance.now();
    const index = new ContaminationIndex();
    for (const set of sets) index.add(set.set, set.items);
    const afterIndex = performance.now();
    const items = sets.flatMap((set) => set.items);
    let flagged = 0;
    for (const item of items) if (index.check(`${item.question} in 2020`).contaminated) flagged += 1;
    const afterChecks = performance.now();
    results.push({
      run,
      sets: listed.length,
      questions: items.length,
      listMs: round(afterList - started),
      loadAllMs: round(afterLoad - afterList),
      buildIndexMs: round(afterIndex - afterLoad),
      checks: items.length,
      microsecondsPerCheck: round((1000 * (afterChecks - afterIndex)) / items.length),
      flagged,
      heapMiB: Math.round(process.memoryUsage().heapUsed / 2 ** 20),
    });
  }
  return results;
}

const round = (value: number) => Math.round(value * 10) / 10;

if (process.argv[1]?.endsWith('question-sets-benchmark.js')) {
  const [root = config().dataRoot, runs = '3'] = process.argv.slice(2);
  for (const result of await benchmarkQuestionSets(root, Number(runs))) console.log(JSON.stringify(result));
}
