/** `longhaul` — the command line. Exit codes: 0 ok, 1 failure, 2 bad usage or input. */
import { config } from '../infra/config.js';
import { UsageError, type Command } from './command.js';
import { handleInterrupts, isInterrupted } from './interrupt.js';
import { configCommand } from './commands/config.command.js';
import { benchCommand } from './commands/bench.command.js';
import { corpusCommand } from './commands/corpus.command.js';
import { demoCommand } from './commands/demo.command.js';
import { skeletonCommand } from './commands/skeleton.command.js';
import { downCommand } from './commands/down.command.js';
import { ingestCommand } from './commands/ingest.command.js';
import { searchCommand } from './commands/search.command.js';
import { runCommand } from './commands/run.command.js';
import { trainCommand } from './commands/train.command.js';
import { warmStartCommand } from './commands/warm-start.command.js';
import { statusCommand } from './commands/status.command.js';
import { toolsCommand } from './commands/tools.command.js';
import { temporalCommand } from './commands/temporal.command.js';
import { upCommand } from './commands/up.command.js';
import { modelCommand } from './commands/model.command.js';
import { serveCommand } from './commands/serve.command.js';
import { evalCommand } from './commands/eval.command.js';
import { datasetsCommand } from './commands/datasets.command.js';
import { codecServerCommand } from './commands/codec-server.command.js';
import { reportCommand } from './commands/report.command.js';
import { showCommand } from './commands/show.command.js';
import { chaosCommand } from './commands/chaos.command.js';
import { synthCommand } from './commands/synth.command.js';
import { forkCommand } from './commands/fork.command.js';
import { scheduleCommand } from './commands/schedule.command.js';
import { errorTypes, LonghaulError } from '../workflows/contracts/errors.js';

const commands: readonly Command[] = [
  demoCommand,
  upCommand,
  downCommand,
  statusCommand,
  runCommand,
  trainCommand,
  warmStartCommand,
  temporalCommand,
  configCommand,
  skeletonCommand,
  ingestCommand,
  searchCommand,
  toolsCommand,
  corpusCommand,
  benchCommand,
  modelCommand,
  serveCommand,
  evalCommand,
  datasetsCommand,
  codecServerCommand,
  reportCommand,
  showCommand,
  chaosCommand,
  synthCommand,
  forkCommand,
  scheduleCommand,
];

function help(): string {
  const width = Math.max(...commands.map((command) => command.name.length));
  return [
    'longhaul — durable long-horizon search agents, trained with fully asynchronous RL on Temporal',
    '',
    'usage: longhaul <command> [options]     (longhaul <command> --help for details)',
    '',
    ...commands.map((command) => `  ${command.name.padEnd(width)}  ${command.summary}`),
    '',
    'Configuration comes from environment variables: see docs/CONFIG.md.',
  ].join('\n');
}

async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    console.log(help());
    return name === undefined ? 2 : 0;
  }
  const command = commands.find((candidate) => candidate.name === name);
  if (!command) throw new UsageError(`unknown command "${name}" (commands: ${commands.map((c) => c.name).join(', ')})`);
  if (command !== temporalCommand && (rest.includes('--help') || rest.includes('-h'))) {
    console.log(command.usage);
    return 0;
  }
  try {
    return await command.run(rest);
  } catch (error) {
    if (error instanceof UsageError) throw new UsageError(`${error.message} (see longhaul ${name} --help)`);
    throw error;
  }
}

const running = main(process.argv.slice(2));
// Ctrl-C / SIGTERM: stop what the command started, then exit 130 / 143 (cli/interrupt.ts).
handleInterrupts(running, config);
running.then(
  (code) => {
    if (!isInterrupted()) process.exit(code);
  },
  (error: unknown) => {
    if (isInterrupted()) return; // the interrupt handler reports and exits
    if (LonghaulError.is(error) && error.code === errorTypes.invalidInput) {
      console.error(`longhaul: ${error.message}`);
      process.exit(2);
    } else {
      const message = error instanceof Error ? error.message : String(error);
      console.error(`longhaul: ${message}`);
      if (process.env.LONGHAUL_LOG_LEVEL === 'debug' && error instanceof Error) console.error(error.stack);
      process.exit(1);
    }
  },
);
