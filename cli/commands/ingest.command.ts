import fs from 'node:fs';
import { config } from '../../infra/config.js';
import { ingestFile, IngestError } from '../../corpus/ingest.js';
import { openSearchDatabase } from '../../infra/search/open.js';
import { integerFlag, parseFlags } from '../arguments.js';
import { UsageError, type Command } from '../command.js';
import { progressBar } from '../progress.js';

export const ingestCommand: Command = {
  name: 'ingest',
  summary: 'stream a corpus file (JSONL or JSON array) into the local search engine',
  usage: `longhaul ingest <file>... [--on-bad-row skip|fail] [--page-words N] [--source NAME] [--json]

Layouts: {"id","contents"} JSONL (ASearcher / FlashRAG / Search-R1), {"id","title","text"} JSONL,
HippoRAG {"title","text"} JSON arrays, KILT pages {"wikipedia_title","text":[…]}. Streaming,
idempotent by document id (unchanged documents are skipped, so a re-run resumes), written in
atomic batches. Long documents are split into pages that \`access\` can page through.

  --on-bad-row MODE  skip (default: report line numbers, go on) or fail (stop at the first)
  --page-words N     words per page (default 200)
  --source NAME      label stored with each document (default: the file name)
  --json             one JSON report per file on stdout
Exit code 2 when a file is missing or (with --on-bad-row fail) a row is malformed.`,
  async run(args) {
    const { values, positionals } = parseFlags(
      args,
      {
        'on-bad-row': { type: 'string' },
        'page-words': { type: 'string' },
        source: { type: 'string' },
        json: { type: 'boolean' },
      },
      true,
    );
    if (positionals.length === 0) throw new UsageError('expected at least one <file>');
    const onBadRow = values['on-bad-row'] ?? 'skip';
    if (onBadRow !== 'skip' && onBadRow !== 'fail') throw new UsageError(`--on-bad-row expects skip or fail, got "${onBadRow}"`);
    const pageWords = integerFlag(values['page-words'], 'page-words', 200, 10, 100_000);
    for (const file of positionals) if (!fs.existsSync(file)) throw new UsageError(`<file> "${file}" does not exist`);
    const pool = await openSearchDatabase(config());
    try {
      for (const file of positionals) {
        const size = fs.statSync(file).size;
        const bar = progressBar(`ingest ${file}`, size);
        const report = await ingestFile(pool, file, {
          onBadRow,
          pageWords,
          ...(values.source ? { source: values.source } : {}),
          onProgress: (bytes, _total, documents) => bar.update(bytes, `${documents} docs`),
        }).catch((error: unknown) => {
          if (error instanceof IngestError)
            throw new UsageError(
              `bad row at ${error.message}; rows before it were written in whole batches, fix it and re-run (or use --on-bad-row skip)`,
            );
          throw error;
        });
        bar.finish(`${report.read} docs`);
        if (values.json) console.log(JSON.stringify(report));
        else {
          console.log(
            `${file}: ${report.read} documents (${report.written} written, ${report.unchanged} unchanged), ${report.passages} passages, ${report.badRows} bad rows, ${report.seconds.toFixed(1)} s`,
          );
          for (const bad of report.errors) console.log(`  line ${bad.line}: ${bad.message}`);
        }
      }
    } finally {
      await pool.end();
    }
    return 0;
  },
};
