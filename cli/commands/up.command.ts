import { config } from '../../infra/config.js';
import { stackUp, stackStatus } from '../../infra/services/stack.js';
import { parseFlags } from '../arguments.js';
import type { Command } from '../command.js';
import { interruption, onInterrupt } from '../interrupt.js';
import { printStatus, startedLine } from './status.command.js';

export const upCommand: Command = {
  name: 'up',
  summary: 'install what is missing and start the stack (Temporal, Postgres, S3, workers)',
  usage: `longhaul up [--no-workers] [--json]

Starts the embedded stack under LONGHAUL_HOME (default .longhaul/): the Temporal dev server
(SQLite persistence, Web UI, search attributes registered), a project-local Postgres cluster
(migrations applied), SeaweedFS serving S3 (bucket created) and one worker per task queue.
Services given by TEMPORAL_ADDRESS, DATABASE_URL or S3_ENDPOINT are used instead of started.
Running it twice is harmless; \`longhaul down\` then \`up\` keeps all data. A worker that was
started before the last build is restarted (it would serve the old code). When a service fails
to start (or on Ctrl-C), the services this run launched are stopped again.

  --no-workers   start services only (tests run their own workers)
  --json         print the final status as JSON`,
  async run(args) {
    const { values } = parseFlags(args, { 'no-workers': { type: 'boolean' }, json: { type: 'boolean' } });
    const settings = config();
    // Interrupted, stackUp stops what it launched once the starts in flight settle; wait for that.
    const starting = stackUp(settings, {
      workers: !values['no-workers'],
      signal: interruption,
      onStarted: (name, seconds, outcome) => {
        if (!values.json) console.error(startedLine(name, seconds, outcome));
      },
    });
    const unregister = onInterrupt('stopping the services this up launched', () =>
      starting.then(
        () => undefined,
        () => undefined,
      ),
    );
    await starting.finally(unregister);
    printStatus(await stackStatus(settings), Boolean(values.json), settings);
    return 0;
  },
};
