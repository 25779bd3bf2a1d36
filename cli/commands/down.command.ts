import { config } from '../../infra/config.js';
import { stackDown } from '../../infra/services/stack.js';
import { parseFlags } from '../arguments.js';
import type { Command } from '../command.js';

export const downCommand: Command = {
  name: 'down',
  summary: 'stop the stack (all data is kept)',
  usage: `longhaul down

Stops the workers and the embedded services. Workflows, rows and objects stay under
LONGHAUL_HOME; \`longhaul up\` brings them back.`,
  async run(args) {
    parseFlags(args, {});
    await stackDown(config());
    console.error('stack stopped; data kept in ' + config().home);
    return 0;
  },
};
