import { config } from '../../infra/config.js';
import { isQuestionSetLayout, questionSetLayouts, unknownLayoutError } from '../../activities/question-sets/question-set.js';
import { listEvaluationSets, loadQuestionSet } from '../../composition/question-sets.js';
import { parseFlags } from '../arguments.js';
import { UsageError, type Command } from '../command.js';

const layoutLines = Object.entries(questionSetLayouts)
  .map(([name, layout]) => `    ${name.padEnd(18)} ${layout.describe}`)
  .join('\n');

export const datasetsCommand: Command = {
  name: 'datasets',
  summary: 'inspect a question-set file (layout, rows, skipped rows, sha256) or list the evaluation sets',
  usage: `longhaul datasets inspect FILE [--layout L] [--strict] [--json]
longhaul datasets list [--data-root DIR] [--json]

  inspect   read FILE as a question set: its layout (detected from the content unless --layout),
            how many questions, each bad row skipped (line number, field, reason), and the file's sha256
  list      the question sets under the data root (LONGHAUL_DATA_ROOT, default ../shared/data):
            set name, layout, size; passage corpora are left out

  --layout L       read FILE as layout L instead of detecting it
  --strict         refuse the file at its first bad row (exit 2, naming the line and field)
  --data-root DIR  the folder to list instead of LONGHAUL_DATA_ROOT
  --json           one JSON object on stdout

Layouts:
${layoutLines}

Exit codes: 0 read (even with skipped rows), 2 bad flags, a file that is missing or not a question set,
or a bad row under --strict.`,
  async run(args) {
    const { values, positionals } = parseFlags(
      args,
      { layout: { type: 'string' }, strict: { type: 'boolean' }, json: { type: 'boolean' }, 'data-root': { type: 'string' } },
      true,
    );
    const [action, ...rest] = positionals;
    if (action === 'list') {
      if (rest.length > 0) throw new UsageError(`list takes no arguments, got "${rest.join(' ')}"`);
      if (values.layout !== undefined || values.strict) throw new UsageError('--layout and --strict go with inspect, not list');
      const root = values['data-root'] ?? config().dataRoot;
      const sets = await listEvaluationSets(root);
      if (values.json) console.log(JSON.stringify({ dataRoot: root, sets }));
      else {
        console.log(`${sets.length} question set(s) under ${root}`);
        for (const set of sets) console.log(`  ${set.set.padEnd(44)} ${set.layout.padEnd(18)} ${(set.bytes / 1024).toFixed(0)} KiB`);
      }
      return 0;
    }
    if (action !== 'inspect') throw new UsageError(`expected inspect or list, got "${action ?? ''}"`);
    if (values['data-root'] !== undefined) throw new UsageError('--data-root goes with list, not inspect');
    if (rest.length !== 1) throw new UsageError(`inspect expects one FILE, got ${rest.length}`);
    if (values.layout !== undefined && !isQuestionSetLayout(values.layout)) {
      throw new UsageError(unknownLayoutError('--layout', values.layout).message);
    }
    const set = await loadQuestionSet(rest[0]!, { layout: values.layout, strict: Boolean(values.strict) });
    if (values.json) {
      console.log(
        JSON.stringify({
          path: set.path,
          name: set.name,
          layout: set.layout,
          questions: set.items.length,
          skipped: set.skipped,
          sha256: set.sha256,
        }),
      );
      return 0;
    }
    console.log(`${set.path}
  layout    ${set.layout}
  questions ${set.items.length}
  skipped   ${set.skipped.length}
  sha256    ${set.sha256}`);
    for (const row of set.skipped.slice(0, 50)) console.log(`  line ${row.line}: ${row.field}: ${row.reason}`);
    if (set.skipped.length > 50) console.log(`  … and ${set.skipped.length - 50} more skipped rows (--json lists them all)`);
    const first = set.items[0];
    if (first) console.log(`  first     [${first.id}] ${first.question} → ${first.answers.join(' | ')}`);
    return 0;
  },
};
